"""The dashboard's glue without Streamlit running: filing runs, table views, the HTML report."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.table import source_results_table
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import run_task
from mmbright_core.ui import loaders, reports, views, workspace
from mmbright_core.ui.render import escape_md, judgment_badge, points, score_text
from mmbright_core.ui.state import RunEntry

A1 = "academia/a1b2c3d4_101.txt"
A_HARD, A_NEG = "academia/0123456789abcdef_301.txt", "academia/deadbeef_501.txt"


def test_upload_of_a_malformed_file_names_it(fixture_dir):
    source = open_source(str(fixture_dir))
    with pytest.raises(InputError, match=r"upload\.trec:1"):
        workspace.entry_from_bytes("upload.trec", b"a1 Q0 d 1\n", source, 2, "paper")


def test_upload_of_a_json_run(fixture_dir):
    source = open_source(str(fixture_dir))
    entry = workspace.entry_from_bytes(
        "mine.json", b'{"academia/a1": {"academia/x_1.txt": 1.5}}', source, 2, "paper"
    )
    assert entry.name == "mine"
    assert entry.runs == {"academia": {"a1": {"academia/x_1.txt": 1.5}}}


def test_folder_without_runs_is_an_error(tmp_path, fixture_dir):
    source = open_source(str(fixture_dir))
    with pytest.raises(InputError, match="no run in the folder"):
        workspace.entries_from_folder(str(tmp_path), source, 2, "paper")


def test_a_folder_run_carries_its_recorded_negatives_policy(tmp_path, fixture_dir):
    source = open_source(str(fixture_dir))
    keep = run_task(source, 1, get_retriever("random"), tmp_path / "keep", negatives="keep")
    (entry,) = workspace.entries_from_folder(str(keep.task_dir), source, 1, "paper")
    assert entry.negatives == "keep"
    assert entry.provenance == f"folder: {keep.task_dir} · negatives keep"
    # Older configurations, and official outputs without one, are scored by the official rule.
    config = keep.task_dir / "config.json"
    config.write_text('{"config": {"retriever": "random"}, "domains": []}')
    (old,) = workspace.entries_from_folder(str(keep.task_dir), source, 1, "paper")
    assert old.negatives == "exclude" and old.provenance.endswith("· negatives exclude")
    config.unlink()
    (official,) = workspace.entries_from_folder(str(keep.task_dir), source, 1, "paper")
    assert official.negatives == "exclude"
    upload = workspace.entry_from_bytes(
        "u.trec", f"academia/a1 Q0 {A1} 1 1.0 t\n".encode(), source, 1, "paper"
    )
    assert upload.provenance == "upload: u.trec · negatives exclude"


def test_a_keep_run_is_scored_with_its_negatives_in_place(fixture_dir):
    # a1's negative_ids A_HARD and A_NEG rank above its gold A1 (docs/protocol.md, Per-task
    # protocol).
    run = {"academia": {"a1": {A_HARD: 3.0, A_NEG: 2.0, A1: 1.0}}}
    exclude = RunEntry("ex", str(fixture_dir), 1, run, "test", "ex")
    keep = RunEntry("kp", str(fixture_dir), 1, run, "test", "kp", "keep")
    frame = loaders.table_for(str(fixture_dir), 1, "paper", {"ex": exclude, "kp": keep})
    frame = frame.loc[frame["query_id"] == "a1"]
    values = dict(zip(frame["run"], frame["nDCG@10"], strict=True))
    assert values == pytest.approx({"ex": 1.0, "kp": 1 / math.log2(4)})  # A1 first, or third


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "domain": ["a", "a", "b", "b"],
            "query_id": ["1", "2", "3", "4"],
            "nDCG@10": [0.1, 0.9, math.nan, 0.5],
            "n_images": [0, 3, 1, 6],
        }
    )


def test_filter_rows_by_domain_images_and_score():
    rows = _rows()
    assert list(views.filter_rows(rows, "nDCG@10")["query_id"]) == ["1", "2", "4"]
    assert list(views.filter_rows(rows, "nDCG@10", domains=["b"])["query_id"]) == ["4"]
    assert list(views.filter_rows(rows, "nDCG@10", images=(1, 5))["query_id"]) == ["2"]
    kept = views.filter_rows(rows, "nDCG@10", scores=(0.0, 0.5))
    assert list(kept["query_id"]) == ["1", "4"]


def test_ranking_applies_exclusions_before_the_cut():
    scores = {"x": 3.0, "y": 2.0, "z": 1.0, "w": 1.0}
    top, removed = views.ranking(scores, {"y": 1, "w": 0}, {"x"}, k=2)
    # x is excluded; z and w tie at 1.0 and the larger id (z) ranks first.
    assert list(top["doc_id"]) == ["y", "z"]
    assert top["relevance"].tolist()[0] == 1.0 and math.isnan(top["relevance"].tolist()[1])
    assert list(removed["doc_id"]) == ["x"] and removed["raw_rank"].tolist() == [1]


def test_missed_lists_relevant_outside_the_top_with_ranks():
    scores = {"a": 5.0, "b": 4.0, "c": 3.0}
    out = views.missed(scores, {"c": 2, "q": 1, "a": 1}, set(), k=2)
    assert list(out["doc_id"]) == ["c", "q"]
    assert out["rank"].tolist()[0] == 3.0 and math.isnan(out["rank"].tolist()[1])


def test_walk_wraps_and_enters_the_list():
    order = [("a", "1"), ("a", "2"), ("b", "3")]
    assert views.walk(order, ("b", "3"), 1) == ("a", "1")
    assert views.walk(order, ("a", "1"), -1) == ("b", "3")
    assert views.walk(order, ("z", "9"), 1) == ("a", "1")
    assert views.walk([], None, 1) is None


def test_render_helpers_escape_and_format():
    assert escape_md("*x* <b>") == r"\*x\* \<b\>"
    assert judgment_badge(2.0).startswith(":green-badge[relevant · 2")
    assert "unjudged" in judgment_badge(math.nan)
    assert "excluded" in judgment_badge(1.0, excluded=True)
    assert points(0.12345) == "12.3" and points(math.nan) == "–"
    assert score_text(None) == "–"


def test_comparison_report_is_escaped_html(fixture_dir):
    source = open_source(str(fixture_dir))
    runs = {
        "text": {"academia": {"a1": {"academia/a1b2c3d4_101.txt": 2.0, "<b>x</b>": 1.0}}},
        "multi": {"academia": {"a1": {"<b>x</b>": 2.0, "academia/a1b2c3d4_101.txt": 1.0}}},
    }
    entries = {n: RunEntry(n, str(fixture_dir), 2, r, "test", n) for n, r in runs.items()}
    table = source_results_table(source, 2, runs)
    comparison = compare_runs(table, "text", "multi", n_resamples=200)
    html = reports.comparison_html(source, 2, "paper", entries, comparison)
    assert html.startswith("<!DOCTYPE html>")
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert "How do I cite a preprint?" in html


@pytest.mark.parametrize("task", [2, 4])
def test_shown_documents_are_the_corpus_documents(fixture_dir, task):
    source = open_source(str(fixture_dir))
    corpus = {doc.doc_id: doc for doc in source.task(task, "academia").corpus}
    picked = [*sorted(corpus)[:3], "academia/absent_1.txt"]
    shown = loaders.shown_documents(str(fixture_dir), task, "academia", "paper", picked)
    assert shown == {d: corpus[d] for d in picked[:3]}
    assert loaders.shown_documents(str(fixture_dir), task, "academia", "paper", []) == {}


def test_only_the_compared_pair_is_scored(fixture_dir):
    runs = {
        "a": {"academia": {"a1": {"academia/a1b2c3d4_101.txt": 2.0}}},
        "b": {"academia": {"a1": {"academia/a1b2c3d4_102.txt": 2.0}}},
        "broken": {"academia": {"a1": {"academia/x_1.txt": math.nan}}},
    }
    entries = {n: RunEntry(n, str(fixture_dir), 2, r, "test", n) for n, r in runs.items()}
    comparison = loaders.comparison_for(str(fixture_dir), 2, "paper", entries, "a", "b")
    assert (comparison.run_a, comparison.run_b) == ("a", "b")
    assert set(comparison.per_query["query_id"]) == {"a1"}


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
        source_results_table(source, 2, runs), "text", "multi", n_resamples=200
    )
    html = reports.comparison_html(source, 2, "paper", entries, comparison)
    assert "OCR noise" in html


def test_a_passage_is_shown_folded_and_escaped():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from mmbright_core.ui import render

        render.show_passage("<b>bold</b> & <script>alert(1)</script>\n" + "x" * 5000)

    at = AppTest.from_function(page).run()
    (body,) = [e.proto.body for e in at.get("html")]
    assert body.startswith("<details><summary>Passage text</summary>")
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; &lt;script&gt;" in body
    assert "<script>" not in body and "<b>" not in body
    assert body.count("x") < 5000  # cut to the passage limit


def test_an_image_caption_is_escaped_and_wraps_only_between_names():
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        import io

        from PIL import Image

        from mmbright_core.ui import render

        out = io.BytesIO()
        Image.new("RGB", (874, 380), "white").save(out, format="PNG")
        render.show_image(out.getvalue(), 'a<b>"/q_1/image_1.png', 360, full_key="full")

    at = AppTest.from_function(page).run()
    (body,) = [e.proto.body for e in at.get("html")]
    assert 'title="a&lt;b&gt;&quot;/q_1/image_1.png"' in body
    assert ">a&lt;b&gt;&quot;/<wbr>q_1/<wbr>image_1.png</div>" in body  # no break inside a name
    at.button(key="full").click().run()
    # The dialog names the picture's own size: it is drawn at that size (up to the window).
    assert "874 × 380 px" in [c.value for c in at.caption]
