"""A task view: one hashable value for a source's task under a protocol, and its queries."""

from __future__ import annotations

from pathlib import Path

from fixture_dataset import A1

from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView


def test_a_view_is_named_by_its_source_task_and_protocol(fixture_dir: Path) -> None:
    source = open_source(str(fixture_dir))
    view = TaskView(source, 4, "legacy")
    assert view == TaskView(source, 4, "legacy") and hash(view) == hash(
        TaskView(source, 4, "legacy")
    )
    assert view != TaskView(source, 4, "paper") and view != TaskView(source, 3, "legacy")
    assert view.key == (source.name, 4, "legacy")
    assert {view: 1}[TaskView(source, 4, "legacy")] == 1


def test_a_views_reads_are_the_sources(fixture_dir: Path) -> None:
    source = open_source(str(fixture_dir))
    view = TaskView(source, 1)
    data = source.judgments(1, "academia")
    assert view.queries("academia") == {q.query_id: q for q in data.queries}
    assert view.queries("academia") is view.queries("academia")  # read once
    assert view.qrels("academia") == data.qrels
    assert (
        view.excluded("academia", "keep")
        == source.judgments(1, "academia", negatives="keep").excluded
    )
    assert view.domains() == tuple(source.domains())


def test_a_query_reference_hands_out_the_querys_parts(fixture_dir: Path) -> None:
    source = open_source(str(fixture_dir))
    ref = TaskView(source, 1).query("academia", "a1")
    data = source.judgments(1, "academia")
    assert ref.query == next(q for q in data.queries if q.query_id == "a1")
    assert ref.qrels == data.qrels["a1"] and A1 in ref.qrels
    assert ref.excluded() == data.excluded.get("a1", frozenset())
    assert ref.key == (source.name, 1, "paper", "academia", "a1")
    assert ref.exists()
    assert not TaskView(source, 1).query("academia", "absent").exists()
    assert not TaskView(source, 1).query("nowhere", "a1").exists()
    assert TaskView(source, 1).query("academia", "absent").qrels == {}
