"""The ``late-interaction`` backend on a tiny ColBERT saved by PyLate: its vectors and ranking.

``tests/support/colbert_goldens.py`` made the folder and the goldens with pylate 1.6.0: its
token vectors of the demo's Task 1 biology texts and each query's top 10 by its own
``colbert_scores``.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from colbert_goldens import FOLDER, GOLDEN

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError
from mmbright_core.ranking import ranked, ranking_score

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.models]


def _golden(role: str) -> list[np.ndarray]:
    golden = np.load(GOLDEN)
    return np.split(golden[role], np.cumsum(golden[f"{role}_lengths"])[:-1])


def test_token_vectors_are_pylates(tmp_path):
    from mmbright_core.retrieval.backends.late_interaction import LateInteractionRetriever

    data = open_source("demo").task(1, "biology")
    retriever = LateInteractionRetriever(str(FOLDER), cache_dir=str(tmp_path))
    for role, texts, is_query in (
        ("queries", [q.text for q in data.queries], True),
        ("passages", [d.text for d in data.corpus], False),
    ):
        found = retriever.encode(texts, is_query=is_query)
        expected = _golden(role)
        assert [len(v) for v in found] == [len(v) for v in expected]
        for mine, theirs in zip(found, expected, strict=True):
            np.testing.assert_allclose(mine, theirs, atol=1e-5)


def test_task1_run_ranks_as_pylate_scores(tmp_path):
    args = ["run", "--source", "demo", "--task", "1", "--domain", "biology", "--k", "10"]
    args += ["--retriever", "late-interaction", "--model", str(FOLDER), "--device", "cpu"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]) == 0
    data = open_source("demo").task(1, "biology")
    (run_file,) = tmp_path.glob("*/biology/scores.json")
    run = json.loads(run_file.read_text())
    queries, passages = _golden("queries"), _golden("passages")
    for query, top10, vectors in zip(data.queries, np.load(GOLDEN)["top10"], queries, strict=True):
        got = run[query.query_id]
        scores = {
            doc: float((vectors.astype(float) @ passages[p].astype(float).T).max(axis=1).sum())
            for p, doc in enumerate(d.doc_id for d in data.corpus)
        }
        assert got == pytest.approx({doc: scores[doc] for doc in got}, abs=1e-4)
        # PyLate's top 10 less the excluded passages, equal scores ordered by the ranking
        # rule (doc id descending; torch.topk leaves them in any order), those tied with
        # its tenth left out (which of them enter is the cut's tie rule).
        excluded = data.excluded.get(query.query_id, frozenset())
        upstream = [data.corpus[i].doc_id for i in top10]
        tenth = ranking_score(scores[upstream[-1]])
        kept = {
            d: scores[d] for d in upstream if d not in excluded and ranking_score(scores[d]) > tenth
        }
        assert list(got)[: len(kept)] == [doc for doc, _ in ranked(kept)]
    (config_file,) = tmp_path.glob("*/config.json")
    config = json.loads(config_file.read_text())["config"]
    assert config["retriever"] == "late-interaction"
    assert config["options"]["scoring"] == "maxsim" and config["truncation"] == 24


def test_task4_pairs_share_their_passage_and_reruns_read_the_cache(tmp_path):
    from mmbright_core.retrieval.backends.late_interaction import LateInteractionRetriever

    data = open_source("demo").task(4, "biology")
    retriever = LateInteractionRetriever(str(FOLDER), cache_dir=str(tmp_path))
    first = retriever.retrieve(data, None, 20)
    cached = LateInteractionRetriever(str(FOLDER), cache_dir=str(tmp_path))
    encode, asked = cached.encode, []

    def counted(texts: list[str], is_query: bool) -> list[np.ndarray]:
        asked.append(is_query)
        return encode(texts, is_query)

    cached.encode = counted
    assert cached.retrieve(data, None, 20) == first
    assert asked == [True]  # the passages' token rows came from the cache
    by_passage: dict[str, set[float]] = {}
    for scores in first.values():
        for doc, score in scores.items():
            by_passage.setdefault(doc.split("|||")[0], set()).add(score)
    assert any(len(s) == 1 for s in by_passage.values())


def test_a_folder_pylate_did_not_save_is_refused(tmp_path):
    from mmbright_core.retrieval.backends.late_interaction import LateInteractionRetriever

    with pytest.raises(InputError, match="not a PyLate ColBERT model folder"):
        LateInteractionRetriever(str(tmp_path))


def test_a_run_is_rebuilt_from_its_configuration(tmp_path):
    from mmbright_core.retrieval.backends.late_interaction import LateInteractionRetriever
    from mmbright_core.retrieval.base import RunConfig
    from mmbright_core.retrieval.runner.rebuild import rebuild_retriever

    data = open_source("demo").task(2, "biology")
    made = LateInteractionRetriever(str(FOLDER), query_length=10, cache_dir=str(tmp_path))
    config = RunConfig.build(made, task=2, protocol="paper", source="demo", k=10)
    rebuilt = rebuild_retriever(config.to_dict(), cache_dir=str(tmp_path), device="cpu")
    assert rebuilt.settings() == made.settings()
    assert rebuilt.retrieve(data, None, 10) == made.retrieve(data, None, 10)
