"""The comparison report the dashboard offers for download: escaped HTML with failure tags."""

from __future__ import annotations

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.table import source_results_table
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.ui.common.state import RunEntry
from mmbright_core.ui.compare import reports


def test_comparison_report_is_escaped_html(fixture_dir):
    source = open_source(str(fixture_dir))
    runs = {
        "text": {"academia": {"a1": {"academia/a1b2c3d4_101.txt": 2.0, "<b>x</b>": 1.0}}},
        "multi": {"academia": {"a1": {"<b>x</b>": 2.0, "academia/a1b2c3d4_101.txt": 1.0}}},
    }
    entries = {n: RunEntry(n, str(fixture_dir), 2, r, "test", n) for n, r in runs.items()}
    table = source_results_table(TaskView(source, 2), runs)
    comparison = compare_runs(table, "text", "multi", n_resamples=200)
    html = reports.comparison_html(TaskView(source, 2, "paper"), entries, comparison)
    assert html.startswith("<!DOCTYPE html>")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "How do I cite a preprint?" in html


def test_comparison_report_from_the_page_carries_failure_tags(fixture_dir, tmp_path, monkeypatch):
    from mmbright_core.notes import NotesStore, QueryKey, default_path

    monkeypatch.setenv("MMBRIGHT_NOTES", str(tmp_path / "notes.sqlite3"))
    source = open_source(str(fixture_dir))
    runs = {
        "text": {"academia": {"a1": {"academia/a1b2c3d4_101.txt": 2.0, "academia/x_1.txt": 1.0}}},
        "multi": {"academia": {"a1": {"academia/x_1.txt": 2.0, "academia/a1b2c3d4_101.txt": 1.0}}},
    }
    entries = {n: RunEntry(n, source.name, 2, r, "test", n) for n, r in runs.items()}
    with NotesStore(default_path()) as store:
        store.set_tags(QueryKey(source.name, 2, "paper", "academia", "a1"), ["OCR noise"])
    comparison = compare_runs(
        source_results_table(TaskView(source, 2), runs), "text", "multi", n_resamples=200
    )
    html = reports.comparison_html(TaskView(source, 2, "paper"), entries, comparison)
    assert "OCR noise" in html
