"""``mmbright run --retriever mteb``: MTEB's random encoder on tasks 1 and 2, recomputed here.

Every query's top 10 must be the one MTEB's encoder gives when called directly: query
vectors from the query text (Task 1) or from the text with its first decodable image as one
input (Task 2: the image file's bytes, decoded as MTEB's own MM-BRIGHT task decodes them),
passages from their stripped text (MTEB's corpus formatting), cosine similarity, each
query's ``negative_ids`` removed, ties by doc id descending.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_dataset import build_fixture, changed_by_a_second_jpeg
from PIL import Image, ImageFile

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.data.tasks import build_task
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import ranked

mteb = pytest.importorskip("mteb")

from mteb_direct import RANDOM, expected_top10  # noqa: E402


@pytest.fixture(scope="module")
def model():
    """MTEB's random encoder, loaded by MTEB."""
    return mteb.get_model(RANDOM)


def first_decodable(source, domain: str, query) -> list[bytes]:
    """The file of the query's first image that decodes as the official loader decodes it.

    ``src/data.py``, ``DataLoader._load_images_parquet``: ``Image.open(...).convert("RGB")``
    under ``LOAD_TRUNCATED_IMAGES = True``, an image that raises dropped.
    """
    for image in query.images:
        data = source.query_image_bytes(domain, image.path)
        if data is None:
            continue
        before, ImageFile.LOAD_TRUNCATED_IMAGES = ImageFile.LOAD_TRUNCATED_IMAGES, True
        try:
            Image.open(io.BytesIO(data)).convert("RGB")
        except (OSError, ValueError):
            continue
        finally:
            ImageFile.LOAD_TRUNCATED_IMAGES = before
        return [data]
    return []


def run_mteb(source: str, task: int, out: Path, *extra: str) -> Path:
    argv = ["run", "--source", source, "--task", str(task), "--retriever", "mteb"]
    assert main([*argv, "--model", RANDOM, "--out", str(out), *extra]) == 0
    return next(out.glob("run_*"))


@pytest.mark.parametrize("task", [1, 2])
def test_every_top10_is_mtebs_own(fixture_dir: Path, tmp_path: Path, model, task: int):
    task_dir = run_mteb(str(fixture_dir), task, tmp_path, "--cache-dir", str(tmp_path / "c"))
    outputs = read_outputs(task_dir)
    source = open_source(str(fixture_dir))
    for domain, run in outputs.runs.items():
        expected = expected_top10(model, source, task, domain, first_decodable)
        got = {qid: [doc for doc, _ in ranked(docs)[:10]] for qid, docs in run.items()}
        assert got == expected, domain


def test_task_2_with_jpeg_query_images_ranks_as_mtebs_encoder_on_the_originals(
    tmp_path: Path, model
):
    root = build_fixture(tmp_path / "data", photos=True)
    source = open_source(str(root))
    photos = 0
    for domain in ("academia", "biology"):
        for query in build_task(source, 2, domain).queries:
            first = first_decodable(source, domain, query)
            # The case: datasets would store other pixels for the first image's decode.
            photos += bool(first) and changed_by_a_second_jpeg(first[0])
    assert photos == 4  # a1, a2, b1 and b2
    task_dir = run_mteb(str(root), 2, tmp_path / "out", "--cache-dir", str(tmp_path / "c"))
    runs = read_outputs(task_dir).runs
    assert set(runs) == {"academia", "biology"}
    for domain, run in runs.items():
        got = {qid: [doc for doc, _ in ranked(docs)[:10]] for qid, docs in run.items()}
        assert got == expected_top10(model, source, 2, domain, first_decodable), domain


def test_the_demo_runs_and_config_records_model_revision_and_prompts(tmp_path: Path, model):
    task_dir = run_mteb("demo", 2, tmp_path, "--cache-dir", str(tmp_path / "c"))
    config = json.loads((task_dir / "config.json").read_text())["config"]
    assert config["retriever"] == "mteb"
    assert (config["model"], config["revision"]) == (RANDOM, "2")
    assert config["fusion"] == "joint" and config["image_policy"] == "first"
    options = config["options"]
    assert options["mteb_tasks"] == "MMBright<Domain>{T2T,IT2T,IT2I,IT2IT}Retrieval"
    assert options["task_prompts"]["2"]["query"].startswith("Given a technical question and")
    source = open_source("demo")
    for domain, run in read_outputs(task_dir).runs.items():
        got = {qid: [doc for doc, _ in ranked(docs)[:10]] for qid, docs in run.items()}
        assert got == expected_top10(model, source, 2, domain, first_decodable), domain


def test_an_unknown_model_is_one_line_with_status_2(fixture_dir: Path, tmp_path: Path, capsys):
    argv = ["run", "--source", str(fixture_dir), "--task", "1", "--retriever", "mteb"]
    rc = main([*argv, "--model", "mteb/no-such-model", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0
    assert "unknown MTEB model 'mteb/no-such-model'" in err


def test_a_package_mteb_imports_missing_is_one_line_naming_the_extra(tmp_path: Path):
    # The real import machinery in a fresh process: `datasets` (of the mteb extra) absent.
    code = (
        "import sys; sys.modules['datasets'] = None; from mmbright_core.cli import main; "
        f"sys.exit(main({['run', '--source', 'demo', '--task', '1', '--domain', 'gis']!r} + "
        f"['--retriever', 'mteb', '--model', {RANDOM!r}, '--out', {str(tmp_path)!r}]))"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr == (
        "mmbright run: error: the mteb retriever needs the optional package 'datasets', which "
        "is not installed; install it with: pip install 'mmbright[mteb]'\n"
    )


def test_a_model_whose_mteb_extra_is_missing_is_one_line_naming_it(
    tmp_path: Path, capsys, monkeypatch
):
    # MTEB's registry names the extra each model needs (ModelMeta.extra_requirements_groups)
    # and checks it before loading: this API model's (`openai`, tiktoken) is not installed.
    if importlib.util.find_spec("tiktoken") is not None:
        pytest.skip("tiktoken is installed: MTEB's `openai` extra is complete here")
    monkeypatch.delenv("MTEB_AUTO_INSTALL_EXTRAS", raising=False)
    argv = ["run", "--source", "demo", "--task", "1", "--domain", "gis", "--retriever", "mteb"]
    rc = main([*argv, "--model", "openai/text-embedding-3-small", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(
        "mmbright run: error: MTEB model 'openai/text-embedding-3-small' needs packages that "
        "are not installed; found Model openai/text-embedding-3-small is missing required "
        'dependencies: tiktoken>=0.8.0; extra == "openai".'
    )
    assert "Install them with: pip install mteb[openai] (the extra of MTEB's" in err
