"""The per-session budget for uploaded runs (``MMBRIGHT_SESSION_MAX_BYTES``), under AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest import fresh
from streamlit.testing.v1 import AppTest

from mmbright_core.analysis import leaderboard as leaderboard_module
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.types import Task
from mmbright_core.ui.common import loaders, sessions, workspace
from mmbright_core.ui.common.sessions import (
    DEFAULT_SESSION_MAX_BYTES,
    SESSION_MAX_ENV,
    session_max_bytes,
)
from mmbright_core.ui.common.state import RunEntry, fingerprint

A1 = "academia/a1b2c3d4_101.txt"  # a passage of the fixture's corpus, judged for query a1


def _run_file(tag: str) -> bytes:
    return "".join(f"a{q} Q0 {A1} 1 1.0 {tag}\n" for q in (1, 2, 3, 4)).encode()


def _on_fixture(fixture_dir: Path) -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(fixture_dir)).run()
    at.selectbox(key="task").set_value(1).run()
    return at


def _upload(at: AppTest, name: str, data: bytes) -> None:
    at.file_uploader(key="upload_files").set_value([(name, data, "application/octet-stream")])
    at.run()
    at.button(key="add_uploads").click().run()


def _runs(at: AppTest) -> list[str]:
    return list(at.multiselect(key="selected_runs_1").value)


def test_an_upload_past_the_session_budget_is_refused_until_a_run_is_removed(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = _run_file("one"), _run_file("two")
    assert len(first) == len(second) == 168
    monkeypatch.setenv(SESSION_MAX_ENV, "300")  # room for one of them, not both
    at = _on_fixture(fixture_dir)
    _upload(at, "first.trec", first)
    assert _runs(at) == ["first"] and not at.exception

    _upload(at, "second.trec", second)
    errors = [e.value.replace("\\", "") for e in at.main.error]
    assert len(errors) == 1 and not at.exception
    assert errors[0].startswith("second.trec: the upload would pass this session's budget")
    assert "MMBRIGHT_SESSION_MAX_BYTES" in errors[0] and "Remove a run" in errors[0]
    # Below 1 MiB the message counts bytes, never "0 MiB".
    assert "at most 300 bytes of uploaded runs" in errors[0]
    assert "found 168 bytes held and 168 bytes more" in errors[0]
    assert _runs(at) == ["first"]

    (remove,) = [b for b in at.button if str(b.key).startswith("remove_")]
    remove.click().run()
    assert _runs(at) == []
    _upload(at, "second-again.trec", second)  # the removed run's bytes are free again
    assert _runs(at) == ["second-again"] and not at.main.error


def test_the_budget_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SESSION_MAX_ENV, raising=False)
    assert session_max_bytes() == DEFAULT_SESSION_MAX_BYTES == 512 * 2**20
    monkeypatch.setenv(SESSION_MAX_ENV, "lots")
    with pytest.raises(InputError, match="bad MMBRIGHT_SESSION_MAX_BYTES; expected a positive"):
        session_max_bytes()


def test_an_upload_no_open_session_holds_loses_its_cached_score_tables(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(SESSION_MAX_ENV, raising=False)
    data = _run_file("shared")
    at = _on_fixture(fixture_dir)
    _upload(at, "shared.trec", data)
    assert _runs(at) == ["shared"] and not at.exception
    key = fingerprint("shared.trec", data)
    (owner,) = sessions._uploaders[key]
    view = TaskView(loaders.get_source(str(fixture_dir)), 1, "paper")
    args = (view, "exclude", "shared")
    assert args in loaders._tables[key]
    cached = loaders._run_table(*args, key, None)  # the cache's table, not computed again

    assert sessions.forget_uploads("another tab") == []  # the uploading tab still holds it
    assert key in sessions.forget_uploads(owner)  # (with those of earlier tests here)
    loaders.forget_tables([key])
    assert key not in loaders._tables
    entry = at.session_state["runs"][(1, "shared")]
    again = loaders._run_table(*args, key, entry)
    assert again is not cached and again.equals(cached)  # computed anew, the same scores


def _chosen(at: AppTest) -> list[str]:
    """The runs chosen in the sidebar for the session's task."""
    return list(at.multiselect(key=f"selected_runs_{at.selectbox(key='task').value}").value)


def test_a_second_session_shares_the_demo_runs_the_first_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[int] = []
    real = workspace.demo_entries

    def counted(task: Task) -> list[RunEntry]:
        read.append(task)
        return real(task)

    monkeypatch.setattr(workspace, "demo_entries", counted)
    first = fresh()
    assert read and not first.exception
    read_by_first = list(read)
    second = fresh(clear=False)
    assert read == read_by_first  # the second session read no run file
    assert not second.exception
    assert _chosen(second) == _chosen(first) != []


def test_a_second_session_shares_the_leaderboard_the_first_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built: list[int] = []
    real = leaderboard_module.leaderboard

    def counted(table, measure):  # type: ignore[no-untyped-def]
        built.append(len(table))
        return real(table, measure)

    monkeypatch.setattr(leaderboard_module, "leaderboard", counted)
    monkeypatch.setattr(loaders, "leaderboard", counted)
    first = fresh()
    assert built and not first.exception
    built_by_first = list(built)
    second = fresh(clear=False)
    assert not second.exception
    assert built == built_by_first  # the second session's Home reused the first's board
    assert _chosen(second) == _chosen(first) != []


def test_what_one_session_adds_or_removes_stays_in_that_session(fixture_dir: Path) -> None:
    first = fresh()
    demo = _chosen(first)
    (remove, *_) = [b for b in first.button if str(b.key).startswith("remove_")]
    remove.click().run()
    assert len(_chosen(first)) == len(demo) - 1
    second = fresh(clear=False)
    assert _chosen(second) == demo

    uploader = _on_fixture(fixture_dir)
    _upload(uploader, "mine.trec", _run_file("mine"))
    assert _runs(uploader) == ["mine"]
    other = _on_fixture(fixture_dir)
    assert _runs(other) == []
