"""A run's recorded configuration read once, typed, and the lineage it records."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmbright_core.analysis.lineage import (
    Lineage,
    Reranks,
    RewrittenQueries,
    recorded_config,
)
from mmbright_core.errors import InputError
from mmbright_core.io.official import OfficialOutputs
from mmbright_core.retrieval.base import RunConfig

PLAIN = RunConfig("bm25", 2, "paper", "demo", 1000, package_version="1.0")


def _outputs(tmp_path: Path, config: dict[str, object]) -> OfficialOutputs:
    return OfficialOutputs(tmp_path, "bm25", "image_text_to_text", {}, {}, run_config=config)


def test_a_folder_without_a_configuration_records_none(tmp_path: Path):
    assert recorded_config(_outputs(tmp_path, {})) is None
    assert Lineage.of(None) == Lineage()


def test_a_folder_configuration_is_read_typed_and_checked(tmp_path: Path):
    assert recorded_config(_outputs(tmp_path, PLAIN.to_dict())) == PLAIN
    with pytest.raises(InputError, match="not a run configuration") as err:
        recorded_config(_outputs(tmp_path, {**PLAIN.to_dict(), "depth": 10}))
    assert str(tmp_path / "config.json") in str(err.value)  # where it was read


def test_a_plain_run_has_no_lineage():
    assert Lineage.of(PLAIN) == Lineage()


def test_a_reranked_run_names_its_first_stage_reranker_and_depth():
    first = {"label": "bm25", "path": "/runs/bm25", "fingerprint": "f" * 64, "config": None}
    options = (("depth", 100), ("first_stage", first), ("reranker", "cross-encoder"))
    reranked = RunConfig("rerank", 2, "paper", "demo", 1000, options=options)
    assert Lineage.of(reranked) == Lineage(
        reranks=Reranks("bm25", "/runs/bm25", "f" * 64, "cross-encoder", 100)
    )
    unrecorded = RunConfig("rerank", 2, "paper", "demo", 1000, options=(("first_stage", {}),))
    assert Lineage.of(unrecorded).reranks == Reranks(None, None, None, None, None)


def test_a_run_on_rewritten_queries_names_its_set_model_and_prompt():
    options = (
        ("queries_sha256", "a" * 64),
        ("rewrite_model", "qwen"),
        ("rewrite_prompt", "expand"),
    )
    rewritten = RunConfig("bm25", 2, "paper", "demo", 1000, options=options)
    assert Lineage.of(rewritten) == Lineage(queries=RewrittenQueries("a" * 64, "qwen", "expand"))
