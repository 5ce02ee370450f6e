"""The published scores, kept once: every paper number with its source, read by both layers."""

from __future__ import annotations

import json
from pathlib import Path

import mmbright_core.retrieval as retrieval_pkg
from mmbright_core.retrieval.catalogue.reference import load_reference


def test_reference_json_holds_the_spec_numbers_with_sources():
    refs = load_reference()
    values = {(r.task, r.model): r.value for r in refs}
    assert values[(1, "BM25")] == 8.5
    assert values[(1, "DiVeR")] == 32.2
    assert values[(2, "Nomic-Vision")] == 27.6
    assert values[(3, "CLIP")] == 33.6
    assert values[(2, "CLIP ViT-L/14 (MTEB)")] == 10.24
    assert values[(3, "Random (MTEB)")] == 3.23
    assert len([r for r in refs if r.task == 1 and r.source == "paper"]) == 10
    assert len([r for r in refs if r.task == 2 and r.source == "paper"]) == 7
    assert all("arXiv:2601.09562" in r.citation for r in refs if r.source == "paper")
    assert all("#5168" in r.citation for r in refs if r.source == "mteb")
    raw = json.loads(
        (Path(retrieval_pkg.__file__).parent / "catalogue" / "reference.json").read_text()
    )
    assert len(raw["scores"]) == len(refs)
