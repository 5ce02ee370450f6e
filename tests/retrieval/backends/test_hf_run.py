"""``mmbright run --retriever hf`` on the demo, its scores equal to the recipe computed directly.

The expected score of a passage is 100 x the cosine of two vectors each computed one text at a
time with transformers: the pooled state of the instructed query, the pooled state of the
passage. The tiny random models come from ``tests/support/tiny_hf.py``.
"""

from __future__ import annotations

import json

import pytest
from tiny_hf import pooled_vectors

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("mmbright_core.retrieval.dual.encoder")
pytestmark = [pytest.mark.models]

INSTRUCTION = "Instruct: Given a {domain} post, retrieve relevant passages\nQuery: "


@pytest.mark.parametrize(("family", "pooling"), [("qwen2", "last-token"), ("bert", "mean")])
def test_task1_scores_are_the_pooled_cosine(tiny_hf, tmp_path, family, pooling):
    folder = tiny_hf[family]
    args = ["run", "--source", "demo", "--task", "1", "--domain", "biology", "--k", "10"]
    args += ["--retriever", "hf", "--model", str(folder), "--option", f"pooling={pooling}"]
    args += ["--option", f"query_instruction={INSTRUCTION}", "--device", "cpu"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]) == 0
    data = open_source("demo").task(1, "biology")
    queries = [INSTRUCTION.replace("{domain}", "biology") + q.text for q in data.queries]
    passages = pooled_vectors(folder, [d.text for d in data.corpus], pooling)
    scores = 100 * pooled_vectors(folder, queries, pooling) @ passages.T
    (run_file,) = tmp_path.glob("*/biology/scores.json")
    run = json.loads(run_file.read_text())
    for row, query in zip(scores, data.queries, strict=True):
        allowed = [
            (float(s), d.doc_id)
            for s, d in zip(row, data.corpus, strict=True)
            if d.doc_id not in data.excluded.get(query.query_id, ())
        ]
        expected = {doc: score for score, doc in sorted(allowed, reverse=True)[:10]}
        got = run[query.query_id]
        assert set(got) == set(expected)
        assert got == pytest.approx(expected, abs=1e-3)
    (config_file,) = tmp_path.glob("*/config.json")
    # Wherever the run's configuration nests the embedder's settings, they are in it.
    config = config_file.read_text()
    assert f'"pooling": "{pooling}"' in config and json.dumps(INSTRUCTION) in config
