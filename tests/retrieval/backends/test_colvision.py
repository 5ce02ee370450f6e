"""ColQwen2 through the ``late-interaction`` backend: Task 3 ranked by MaxSim of its patches.

The expected scores come from token vectors computed straight with transformers, one input at
a time (``tests/support/tiny_colvision.py``), and the ranking rule.
"""

from __future__ import annotations

import json

import pytest

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError
from mmbright_core.ranking import ranked

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = [pytest.mark.models]


@pytest.mark.parametrize(
    ("kind", "model"), [("colqwen2", "ColQwen2ForRetrieval"), ("colpali", "ColPaliForRetrieval")]
)
def test_task3_ranks_images_by_maxsim_of_a_tiny_model(tmp_path, kind, model):
    import tiny_colvision
    from tiny_colvision import token_vectors

    from mmbright_core.data.images import decode_image

    source = open_source("demo")
    data = source.task(3, "biology")
    build = getattr(tiny_colvision, f"{kind}_model")
    folder = build(tmp_path / kind, [q.text for q in data.queries])
    args = ["run", "--source", "demo", "--task", "3", "--domain", "biology", "--k", "5"]
    args += ["--retriever", "late-interaction", "--model", str(folder), "--device", "cpu"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]) == 0
    (run_file,) = tmp_path.glob("*/biology/scores.json")
    run = json.loads(run_file.read_text())
    images = {
        d.doc_id: token_vectors(
            folder,
            model,
            images=[decode_image(source.document_image_bytes("biology", d.doc_id), d.doc_id)],
        )
        for d in data.corpus
    }
    for query in data.queries:
        vectors = token_vectors(folder, model, text=[query.text]).astype(float)
        scores = {
            doc: float((vectors @ patches.astype(float).T).max(axis=1).sum())
            for doc, patches in images.items()
            if doc not in data.excluded.get(query.query_id, ())
        }
        expected = dict(ranked(scores)[:5])
        assert list(run[query.query_id]) == list(expected)
        assert run[query.query_id] == pytest.approx(expected, abs=1e-4)
    config_file = run_file.parent.parent / "config.json"
    assert json.loads(config_file.read_text())["config"]["options"]["architecture"] == kind


def test_a_colqwen2_does_not_run_the_passage_tasks(tmp_path):
    from tiny_colvision import colqwen2_model

    from mmbright_core.retrieval.backends.late_interaction import LateInteractionRetriever

    retriever = LateInteractionRetriever(str(colqwen2_model(tmp_path, ["a b"])))
    assert retriever.tasks == {3}
    with pytest.raises(InputError, match="cannot run task 1"):
        retriever.retrieve(open_source("demo").task(1, "biology"), None, 10)


def test_an_image_row_holds_the_processors_largest_image(tmp_path):
    from tiny_colvision import colpali_model, colqwen2_model

    from mmbright_core.retrieval.backends.colvision import TEXT_TOKENS, ColVision, model_type

    folder = colqwen2_model(tmp_path / "colqwen2", ["a b"])
    assert model_type(folder) == "colqwen2" and model_type(tmp_path / "missing") is None
    # 112 x 112 pixels at most, in merged patches of 28 x 28: 16 patches, and the prompt's room.
    assert ColVision(folder, "colqwen2", "cpu", 4).width() == 16 + TEXT_TOKENS
    # ColPali: its processor's image_seq_length.
    colpali = colpali_model(tmp_path / "colpali", ["a b"])
    assert ColVision(colpali, "colpali", "cpu", 4).width() == 4 + TEXT_TOKENS
