"""``mmbright run --model-preset`` for sbert and instructor, on tiny models of their stacks.

Each preset runs through the CLI on the demo's Task 1 with its model replaced by a tiny random
sentence-transformers folder laid out as the hub's model is (``tests/support/tiny_st.py``); the
expected score of a passage is the plain cosine (what the official code writes for these
models, not x 100) of the official recipe computed here with
sentence-transformers: ``encode(normalize_embeddings=True)``, and for instructor
``set_pooling_include_prompt(False)``, ``max_seq_length`` 2048 and the instruction as
``prompt=`` (src/retrievers/task1_text.py retrieval_sbert_bge, retrieval_instructor).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_hf import top_scores
from tiny_st import sentence_model

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval.backends.instructions import fill_domain
from mmbright_core.retrieval.catalogue.preset_run import instructions_without_preset
from mmbright_core.retrieval.catalogue.presets import get_preset
from mmbright_core.types import TaskData

st = pytest.importorskip("sentence_transformers")
pytestmark = [pytest.mark.models]

DOMAIN = "biology"
#: The tiny stack of each preset's architecture.
FAMILIES = {"sbert": "mpnet", "inst-l": "t5", "inst-xl": "t5"}
SCALE_1 = ("--score-scale", "1")


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> dict[str, Path]:
    """Folders of the tiny ``mpnet`` and ``t5`` sentence-transformers models."""
    root = tmp_path_factory.mktemp("tiny-st")
    return {family: sentence_model(root / family, family, demo_texts) for family in ("mpnet", "t5")}


def _vectors(model, texts: list[str], prompt: str) -> np.ndarray:
    # An empty prompt is the official code's call with its empty instruction.
    return model.encode(texts, prompt=prompt, normalize_embeddings=True, batch_size=4)


def _official(name: str, folder: Path, instructions: str, include_prompt: bool) -> np.ndarray:
    """Return the official recipe's query x passage scores (plain cosine) on the demo domain."""
    preset, data = get_preset(name), _data()
    model = st.SentenceTransformer(str(folder), device="cpu")
    if preset.max_length is not None:
        model.max_seq_length = preset.max_length
    model.set_pooling_include_prompt(include_prompt)
    texts = preset.instructions_for(instructions)
    queries = _vectors(model, [q.text for q in data.queries], fill_domain(texts.query, DOMAIN))
    docs = _vectors(model, [d.text for d in data.corpus], fill_domain(texts.document, DOMAIN))
    return queries @ docs.T


def _data() -> TaskData:
    return open_source("demo").task(1, DOMAIN)


def _top10(scores: np.ndarray) -> dict[str, dict[str, float]]:
    return top_scores(scores, _data())


def _run(
    name: str, folder: Path, instructions: str, tmp_path: Path, *more: str
) -> tuple[dict, dict]:
    chosen = ["--model-preset", name, "--instructions", instructions] if name else []
    assert _cli(["--model", str(folder), *chosen, *more], tmp_path) == 0
    (run_file,) = tmp_path.glob(f"*/{DOMAIN}/scores.json")
    (config_file,) = tmp_path.glob("*/config.json")
    return json.loads(run_file.read_text()), json.loads(config_file.read_text())["config"]


def _cli(chosen: list[str], tmp_path: Path) -> int:
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--k", "10", *chosen]
    args += ["--device", "cpu", "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]
    return main(args)


def _assert_scores(run: dict, expected: dict) -> None:
    for query_id, scores in expected.items():
        assert set(run[query_id]) == set(scores)
        assert run[query_id] == pytest.approx(scores, abs=1e-5)


@pytest.mark.parametrize(
    ("name", "instructions"),
    [("sbert", "official"), ("inst-l", "official"), ("inst-xl", "official")],
)
def test_preset_scores_are_the_official_recipe(tiny_st, tmp_path, name, instructions):
    folder = tiny_st[FAMILIES[name]]
    run, config = _run(name, folder, instructions, tmp_path)
    _assert_scores(run, _top10(_official(name, folder, instructions, include_prompt=False)))
    assert (config["preset"], config["instructions"]) == (name, instructions)
    assert config["options"]["score_scale"] == 1.0
    assert json.dumps(str(folder)) in json.dumps(config)


@pytest.mark.parametrize("name", ["inst-l", "inst-xl"])
def test_instructor_pools_without_brights_instruction_tokens(tiny_st, tmp_path, name):
    folder = tiny_st["t5"]
    run, config = _run(name, folder, "bright", tmp_path)
    _assert_scores(run, _top10(_official(name, folder, "bright", include_prompt=False)))
    # Pooling the instruction too gives other scores: the test tells the two apart.
    pooled_too = _top10(_official(name, folder, "bright", include_prompt=True))
    assert any(run[q] != pytest.approx(s, abs=1e-3) for q, s in pooled_too.items())
    options = config["options"]
    assert options["pooling_include_prompt"] is False
    assert options["query_prompt"] == get_preset(name).instructions_for("bright").query
    assert options["query_prefix"] == ""  # the instruction is the prompt, not a prefix


def test_instructor_without_a_preset_takes_brights_texts_as_prompts():
    options = instructions_without_preset("dense", "hkunlp/instructor-large", "bright")
    texts = get_preset("inst-l").instructions_for("bright")
    assert options == {
        "query_prompt": texts.query,
        "document_prompt": texts.document,
        "pooling_include_prompt": False,
    }
    # Other dense models keep the prefix: BGE's official code glues its instruction on.
    bge = instructions_without_preset("dense", "BAAI/bge-large-en-v1.5", "bright")
    assert set(bge) == {"query_prefix", "document_prefix"}


def test_a_plain_cosine_preset_run_rebuilds_on_its_scale(tiny_st, tmp_path):
    from mmbright_core.retrieval.runner.rebuild import rebuild_retriever

    _, config = _run("sbert", tiny_st["mpnet"], "official", tmp_path)
    rebuilt = rebuild_retriever(config, cache_dir=str(tmp_path / "cache"), device="cpu")
    assert rebuilt.settings()["score_scale"] == 1.0


def test_a_retriever_run_writes_the_scale_it_is_given(tiny_st, tmp_path):
    folder = tiny_st["mpnet"]
    x100, x100_config = _run("", folder, "", tmp_path / "x100", "--retriever", "dense")
    cosine, config = _run("", folder, "", tmp_path / "one", "--retriever", "dense", *SCALE_1)
    assert "score_scale" not in x100_config["options"]  # x 100, the default, is not recorded
    assert config["options"]["score_scale"] == 1.0
    for query_id, scores in x100.items():  # the same ranking, the cosine itself
        assert list(cosine[query_id]) == list(scores)
        assert cosine[query_id] == pytest.approx({d: s / 100 for d, s in scores.items()}, abs=1e-6)


def test_the_scale_given_overrides_the_presets(tiny_st, tmp_path):
    run, config = _run("sbert", tiny_st["mpnet"], "official", tmp_path, "--score-scale", "100")
    assert "score_scale" not in config["options"]
    official = _top10(_official("sbert", tiny_st["mpnet"], "official", include_prompt=False))
    for query_id, scores in official.items():  # x 100 of the cosine, within 1e-5 of it
        assert list(run[query_id]) == list(scores)
        assert run[query_id] == pytest.approx({d: 100 * s for d, s in scores.items()}, abs=1e-3)


def test_a_scale_for_bm25_or_off_the_two_is_one_line(tmp_path, capsys):
    bm25 = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--retriever", "bm25"]
    assert main([*bm25, *SCALE_1, "--out", str(tmp_path)]) == 2
    assert "no vector search to scale" in capsys.readouterr().err
    assert not list(tmp_path.glob("*/config.json"))  # refused before the run claimed a folder
    with pytest.raises(SystemExit) as stop:
        _cli(["--retriever", "dense", "--score-scale", "7"], tmp_path)
    assert stop.value.code == 2
    assert "expected 1 or 100, found '7'" in capsys.readouterr().err


def _explained_totals(config: dict, tmp_path: Path, run: dict) -> None:
    """The rebuilt retriever's explanation of each run score totals that score."""
    from mmbright_core.analysis.attribution import explain
    from mmbright_core.retrieval.explanation import DenseAttribution
    from mmbright_core.retrieval.runner.rebuild import rebuild_retriever

    rebuilt = rebuild_retriever(config, cache_dir=str(tmp_path / "cache"), device="cpu")
    for query_id, scores in run.items():
        explained = explain(rebuilt, _data(), None, query_id, list(scores))
        for doc_id, score in scores.items():
            found = explained[doc_id]
            assert isinstance(found, DenseAttribution)
            assert found.score == pytest.approx(score, rel=1e-5, abs=1e-7)


@pytest.mark.parametrize(
    ("family", "chosen"),
    [
        ("mpnet", ("--model-preset", "sbert", "--instructions", "official")),  # plain cosine
        ("mpnet", ("--retriever", "dense", "--option", "query_prefix=Find the passage: ")),
        ("mpnet", ("--retriever", "dense", "--option", "query_prompt=Which passage? ", *SCALE_1)),
        ("t5", ("--model-preset", "inst-l", "--instructions", "bright")),  # prompts, unpooled
    ],
    ids=["sbert-scale-1", "query-prefix", "query-prompt-scale-1", "instructor-prompts"],
)
def test_an_explanation_totals_the_run_on_its_scale_and_query_text(
    tiny_st, tmp_path, family, chosen
):
    run, config = _run("", tiny_st[family], "", tmp_path, *chosen)
    _explained_totals(config, tmp_path, run)
