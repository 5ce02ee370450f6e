"""Filing runs in the dashboard's workspace: uploads, folders and their negatives policy."""

from __future__ import annotations

import json

import pytest

from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.task_run import run_task
from mmbright_core.ui.common import workspace

A1 = "academia/a1b2c3d4_101.txt"


def test_upload_of_a_malformed_file_names_it(fixture_dir):
    source = open_source(str(fixture_dir))
    with pytest.raises(InputError, match=r"upload\.trec:1"):
        workspace.entry_from_bytes("upload.trec", b"a1 Q0 d 1\n", TaskView(source, 2, "paper"))


def test_upload_of_a_json_run(fixture_dir):
    source = open_source(str(fixture_dir))
    entry = workspace.entry_from_bytes(
        "mine.json", b'{"academia/a1": {"academia/x_1.txt": 1.5}}', TaskView(source, 2, "paper")
    )
    assert entry.name == "mine"
    assert entry.runs == {"academia": {"a1": {"academia/x_1.txt": 1.5}}}


def test_folder_without_runs_is_an_error(tmp_path, fixture_dir):
    source = open_source(str(fixture_dir))
    with pytest.raises(InputError, match="no run in the folder"):
        workspace.entries_from_folder(str(tmp_path), TaskView(source, 2, "paper"))


def test_a_folder_run_carries_its_recorded_negatives_policy(tmp_path, fixture_dir):
    source = open_source(str(fixture_dir))
    keep = run_task(
        TaskView(source, 1), get_retriever("random"), tmp_path / "keep", negatives="keep"
    )
    (entry,) = workspace.entries_from_folder(
        str(keep.task_dir), TaskView(source, 1, "paper")
    ).entries
    assert entry.negatives == "keep"
    assert entry.provenance == f"folder: {keep.task_dir} · negatives keep"
    # Older configurations, and official outputs without one, are scored by the official rule.
    config = keep.task_dir / "config.json"
    stored = json.loads(config.read_text())
    del stored["config"]["negatives"]  # as written before the policy was recorded
    config.write_text(json.dumps(stored))
    (old,) = workspace.entries_from_folder(str(keep.task_dir), TaskView(source, 1, "paper")).entries
    assert old.negatives == "exclude" and old.provenance.endswith("· negatives exclude")
    config.unlink()
    (official,) = workspace.entries_from_folder(
        str(keep.task_dir), TaskView(source, 1, "paper")
    ).entries
    assert official.negatives == "exclude"
    upload = workspace.entry_from_bytes(
        "u.trec", f"academia/a1 Q0 {A1} 1 1.0 t\n".encode(), TaskView(source, 1, "paper")
    )
    assert upload.provenance == "upload: u.trec · negatives exclude"
