"""The dashboard's cached loaders: a table by negatives policy, shown documents, one pair."""

from __future__ import annotations

import math

import pytest
from fixture_dataset import A1, A_HARD, A_NEG

from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.ui.common import loaders
from mmbright_core.ui.common.confine import ROOT_ENV
from mmbright_core.ui.common.state import RunEntry


def test_a_keep_run_is_scored_with_its_negatives_in_place(fixture_dir):
    # a1's negative_ids A_HARD and A_NEG rank above its gold A1 (docs/protocol.md, Per-task
    # protocol).
    run = {"academia": {"a1": {A_HARD: 3.0, A_NEG: 2.0, A1: 1.0}}}
    exclude = RunEntry("ex", str(fixture_dir), 1, run, "test", "ex")
    keep = RunEntry("kp", str(fixture_dir), 1, run, "test", "kp", "keep")
    view = TaskView(loaders.get_source(str(fixture_dir)), 1, "paper")
    frame = loaders.table_for(view, {"ex": exclude, "kp": keep})
    frame = frame.loc[frame["query_id"] == "a1"]
    values = dict(zip(frame["run"], frame["nDCG@10"], strict=True))
    assert values == pytest.approx({"ex": 1.0, "kp": 1 / math.log2(4)})  # A1 first, or third


@pytest.mark.parametrize("task", [2, 4])
def test_shown_documents_are_the_corpus_documents(fixture_dir, task):
    source = open_source(str(fixture_dir))
    corpus = {doc.doc_id: doc for doc in source.task(task, "academia").corpus}
    picked = [*sorted(corpus)[:3], "academia/absent_1.txt"]
    view = TaskView(loaders.get_source(str(fixture_dir)), task, "paper")
    shown = view.shown_documents("academia", picked)
    assert shown == {d: corpus[d] for d in picked[:3]}
    assert view.shown_documents("academia", []) == {}


def test_only_the_compared_pair_is_scored(fixture_dir):
    runs = {
        "a": {"academia": {"a1": {"academia/a1b2c3d4_101.txt": 2.0}}},
        "b": {"academia": {"a1": {"academia/a1b2c3d4_102.txt": 2.0}}},
        "broken": {"academia": {"a1": {"academia/x_1.txt": math.nan}}},
    }
    entries = {n: RunEntry(n, str(fixture_dir), 2, r, "test", n) for n, r in runs.items()}
    view = TaskView(loaders.get_source(str(fixture_dir)), 2, "paper")
    comparison = loaders.comparison_for(view, entries, "a", "b")
    assert (comparison.run_a, comparison.run_b) == ("a", "b")
    assert set(comparison.per_query["query_id"]) == {"a1"}


def test_only_a_folder_spec_is_confined_to_the_data_root(tmp_path, monkeypatch):
    # A folder named like the hub spec is written as a path, and is a folder like any other.
    (tmp_path / "served").mkdir()
    (tmp_path / "hf@x").mkdir()
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "served"))
    assert loaders.get_source("demo").name == "demo"
    with pytest.raises(InputError, match="dataset folder is outside"):
        loaders.get_source(str(tmp_path / "hf@x"))
