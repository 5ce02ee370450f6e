"""``mmbright notes``: export, import and taxonomy edits from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from not_files import assert_each_refused

from mmbright_core.cli import main
from mmbright_core.notes import NotesStore, QueryKey

K1 = QueryKey("demo", 1, "paper", "biology", "q1")
K2 = QueryKey("demo", 4, "legacy", "economics", "q2")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "notes.sqlite3"
    with NotesStore(path) as store:
        store.set_note(K1, "chart misread", author="ana")
        store.set_tags(K1, ["OCR noise", "other"])
        store.set_tags(K2, ["judgment looks wrong"])
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("mmbright notes: error: ")
    return err


def test_export_csv_to_stdout_with_filters(db, capsys):
    assert main(["notes", "export", "--db", str(db), "--task", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("source,task,protocol,domain,query_id,tags,note")
    assert lines[1].startswith("demo,1,paper,biology,q1,OCR noise; other,chart misread,ana,")
    assert len(lines) == 2


def test_export_json_by_suffix_then_import_into_a_fresh_file(db, tmp_path, capsys):
    out = tmp_path / "notes.json"
    assert main(["notes", "export", "--db", str(db), "--out", str(out)]) == 0
    assert "wrote 2 annotated queries" in capsys.readouterr().err
    assert [q["query_id"] for q in json.loads(out.read_text())["queries"]] == ["q1", "q2"]
    fresh = tmp_path / "fresh.sqlite3"
    assert main(["notes", "import", str(out), "--db", str(fresh)]) == 0
    assert "2 added" in capsys.readouterr().out
    with NotesStore(db) as a, NotesStore(fresh) as b:
        assert a.records() == b.records()


def test_export_domain_and_protocol_filters(db, capsys):
    main(["notes", "export", "--db", str(db), "--domain", "economics", "--protocol", "legacy"])
    assert capsys.readouterr().out.splitlines()[1].startswith("demo,4,legacy,economics,q2,")
    main(["notes", "export", "--db", str(db), "--source", "hf@abc"])
    assert len(capsys.readouterr().out.splitlines()) == 1  # the header alone


def test_tags_list_add_rename_remove(db, capsys):
    assert main(["notes", "tags", "--db", str(db)]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0] == "tag\tuses\tdescription"
    assert listed[3].startswith("OCR noise\t1\t")
    main(["notes", "tags", "--db", str(db), "--add", "caption missing", "--description", "x"])
    assert capsys.readouterr().out.splitlines()[-1] == "caption missing\t0\tx"
    main(["notes", "tags", "--db", str(db), "--rename", "other", "misc"])
    assert "misc\t1\t" in capsys.readouterr().out
    with NotesStore(db) as store:
        assert store.get(K1).tags == ("OCR noise", "misc")
    assert main(["notes", "tags", "--db", str(db), "--remove", "misc"]) == 2
    assert "still in use" in one_error_line(capsys)
    assert main(["notes", "tags", "--db", str(db), "--remove", "misc", "--force"]) == 0
    assert "its 1 labels" in capsys.readouterr().err
    assert main(["notes", "tags", "--db", str(db), "--force"]) == 2
    assert "--force only goes with --remove" in one_error_line(capsys)


def test_import_reports_merge_and_replace(db, tmp_path, capsys):
    path = tmp_path / "old.csv"
    path.write_text(
        "source,task,protocol,domain,query_id,tags,note,author,created_at,updated_at\n"
        "demo,1,paper,biology,q1,caption missing,old text,bob,2020-01-01T00:00:00Z,"
        "2020-01-01T00:00:00Z\n"
    )
    assert main(["notes", "import", str(path), "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "1 kept (newer here)" in out and "1 labels added" in out and "1 tags created" in out
    assert (
        main(["notes", "import", str(path), "--db", str(db), "--mode", "replace", "--force"]) == 0
    )
    assert "1 replaced, 1 of which newer here" in capsys.readouterr().out
    with NotesStore(db) as store:
        assert (store.get(K1).note, store.get(K1).tags) == ("old text", ("caption missing",))


def test_errors_are_one_line_with_status_2(db, tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("qid,note\n")
    assert main(["notes", "import", str(bad), "--db", str(db)]) == 2
    assert f"{bad}:1: not a notes export" in one_error_line(capsys)
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"\x00not sqlite" * 100)
    assert main(["notes", "tags", "--db", str(garbage)]) == 2
    assert "not a readable SQLite database" in one_error_line(capsys)
    assert main(["notes", "tags", "--db", str(db), "--rename", "nope", "x"]) == 2
    assert "unknown tag 'nope'" in one_error_line(capsys)


def test_default_file_comes_from_the_environment(tmp_path):
    env = {**os.environ, "MMBRIGHT_NOTES": str(tmp_path / "env" / "notes.sqlite3")}
    done = subprocess.run(
        [sys.executable, "-m", "mmbright_core", "notes", "tags", "--add", "from env"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "from env\t0\t" in done.stdout
    with NotesStore(tmp_path / "env" / "notes.sqlite3") as store:
        assert store.tags()[-1].name == "from env"


def test_export_out_naming_a_link_a_fifo_or_a_device_is_refused(db, tmp_path, capsys):
    export = ["notes", "export", "--db", str(db), "--out"]
    assert_each_refused(tmp_path, "notes", lambda out: main([*export, out]), capsys)
