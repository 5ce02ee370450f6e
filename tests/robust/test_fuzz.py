"""Random and mutated bytes for the readers the io fuzz tests do not reach.

The official outputs folder, the dataset folder's parquet files, image decoding and the
dashboard's upload path each get hypothesis-made bytes: plain random bytes and seeds (real
files) with flipped, inserted, deleted or truncated bytes. Each must give a result or an
``InputError`` (with a message), never another exception, a hang or a malformed result.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from fixture_dataset import encode
from fuzzing import mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.io.official import read_outputs, write_domain_outputs, write_summary
from mmbright_core.ui.common import workspace

# The default suite replays the same examples every time (derandomize); a longer search:
# MMBRIGHT_FUZZ_EXAMPLES=5000, and MMBRIGHT_FUZZ_RANDOM=1 for fresh random examples.
FUZZ = settings(
    max_examples=int(os.environ.get("MMBRIGHT_FUZZ_EXAMPLES", "120")),
    derandomize=not os.environ.get("MMBRIGHT_FUZZ_RANDOM"),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)

A1 = "academia/a1b2c3d4_101.txt"
A3 = "academia/e5f6a7b8_201.txt"
B1 = "biology/fec40b40_1635_0.txt"
RUN = {"academia/a1": {A1: 2.5, A3: 0.5}, "academia/a2": {A3: 1.0}, "biology/b1": {B1: 3.0}}


def _input_error_or(check: Callable[[], None]) -> None:
    try:
        check()
    except InputError as err:
        assert str(err)


def _finite_run(run: dict) -> None:
    for query_id, docs in run.items():
        assert isinstance(query_id, str)
        for doc_id, score in docs.items():
            assert isinstance(doc_id, str) and isinstance(score, float) and math.isfinite(score)


# --- the official outputs folder --------------------------------------------------------------


def _outputs_seed(root: Path) -> dict[str, bytes]:
    task_dir = root / "run_seed"
    metrics = {"NDCG@10": 0.5, "MRR": 0.25}
    write_domain_outputs(task_dir, "academia", {"a1": {A1: 2.5, A3: 0.5}}, metrics)
    write_summary(task_dir, "seed", "text_text", {"academia": metrics})
    return {
        name: (task_dir / name).read_bytes()
        for name in ("summary.json", "academia/scores.json", "academia/metrics.json")
    }


with tempfile.TemporaryDirectory() as _seed_dir:
    OUTPUT_SEEDS = _outputs_seed(Path(_seed_dir))


@pytest.mark.timeout(120)
@FUZZ
@given(name=st.sampled_from(sorted(OUTPUT_SEEDS)), data=mutations(list(OUTPUT_SEEDS.values())))
def test_official_outputs_folder(tmp_path_factory: pytest.TempPathFactory, name: str, data: bytes):
    task_dir = tmp_path_factory.mktemp("outputs") / "run_seed"
    for each, seed in OUTPUT_SEEDS.items():
        (task_dir / each).parent.mkdir(parents=True, exist_ok=True)
        (task_dir / each).write_bytes(data if each == name else seed)

    def check() -> None:
        outputs = read_outputs(task_dir)
        assert isinstance(outputs.model, str)
        for run in outputs.runs.values():
            _finite_run(run)
        for values in (*outputs.metrics.values(), outputs.aggregated):
            assert all(isinstance(v, float) and math.isfinite(v) for v in values.values())

    _input_error_or(check)


# --- the dataset folder's parquet files -------------------------------------------------------

# Which task reads each config (tasks 1-3 cover all five).
CONFIG_TASK = {
    "documents": 1,
    "examples": 1,
    "examples_multimodal": 2,
    "examples_images": 2,
    "document_images": 3,
}


@pytest.fixture(scope="module")
def dataset(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("fuzzed") / "data"
    shutil.copytree(fixture_dir, root)
    yield root


def _build_task(root: Path, config: str) -> None:
    source = open_source(str(root))
    task = CONFIG_TASK[config]
    data = source.task(task, "academia")
    for query in data.queries:
        assert isinstance(query.query_id, str) and isinstance(query.text, str)
        for ref in query.images:  # the image configs are read lazily: touch every image
            _input_error_or(lambda ref=ref: _decode(source.query_image_bytes("academia", ref.path)))
    assert all(isinstance(d.doc_id, str) for d in data.corpus)


def _decode(data: bytes | None) -> None:
    decode_image(data, "academia/academia_a1b2c3d4_0000/image_1.png").close()


def _dataset_case(dataset: Path, fixture_dir: Path, config: str, data: bytes) -> None:
    target = dataset / config / "academia.parquet"
    target.write_bytes(data)
    try:
        _input_error_or(lambda: _build_task(dataset, config))
    finally:
        shutil.copyfile(fixture_dir / config / "academia.parquet", target)


# A known defect (test_robust_inputs.py::test_dataset_string_that_is_not_utf8): a string
# cell of invalid UTF-8 escapes as UnicodeDecodeError; any other exception still fails here.
@pytest.mark.timeout(240)
@pytest.mark.parametrize("config", sorted(CONFIG_TASK))
def test_dataset_parquet_files(dataset: Path, fixture_dir: Path, config: str):
    seed = (fixture_dir / config / "academia.parquet").read_bytes()

    @FUZZ
    @given(data=mutations([seed]))
    def run(data: bytes) -> None:
        _dataset_case(dataset, fixture_dir, config, data)

    run()


# --- image decoding ---------------------------------------------------------------------------


def _image_seeds() -> list[bytes]:
    seeds = [encode((9, 7), "red", fmt) for fmt in ("PNG", "JPEG", "GIF", "BMP", "TIFF", "WEBP")]
    buffer = io.BytesIO()
    Image.new("RGBA", (5, 5), (0, 255, 0, 128)).save(buffer, "PNG")
    return [*seeds, buffer.getvalue()]


@pytest.mark.filterwarnings("ignore::UserWarning")  # Pillow warns about corrupt TIFF tags
@pytest.mark.timeout(120)
@FUZZ
@given(data=mutations(_image_seeds()))
def test_image_decoding(data: bytes):
    try:
        image = decode_image(data, "gis/gis_0a0a0a0a_0001/image_1.png")
    except ImageDecodeError as err:
        assert err.reason and err.path == "gis/gis_0a0a0a0a_0001/image_1.png"
        return
    assert image.mode == "RGB" and image.width > 0 and image.height > 0


# --- the dashboard's upload path --------------------------------------------------------------


def _upload_seeds() -> list[tuple[str, bytes]]:
    trec = "".join(
        f"{q} Q0 {d} {rank} {score!r} seed\n"
        for q, docs in RUN.items()
        for rank, (d, score) in enumerate(docs.items(), start=1)
    ).encode()
    rows = [(q, d, s) for q, docs in RUN.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return [
        ("run.trec", trec),
        ("run.json", json.dumps(RUN).encode()),
        ("run.parquet", buffer.getvalue()),
        ("run.trec.gz", gzip.compress(trec, mtime=0)),
    ]


UPLOADS = _upload_seeds()


@pytest.mark.timeout(120)
@FUZZ
@given(
    name=st.sampled_from([n for n, _ in UPLOADS] + ["upload", "x.csv"]),
    data=mutations([d for _, d in UPLOADS]),
)
def test_upload_path(fixture_dir: Path, name: str, data: bytes):
    source = open_source(str(fixture_dir))

    def check() -> None:
        entry = workspace.entry_from_bytes(name, data, TaskView(source, 2, "paper"))
        assert set(entry.runs) <= set(source.domains())
        for run in entry.runs.values():
            _finite_run(run)

    _input_error_or(check)
