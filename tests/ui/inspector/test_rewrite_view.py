"""The inspector shows what a rewrite changed: the text run, the LLM's words, their share."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from apptest import add_folder, choose_pair, fresh
from openai_server import CHAT_MODEL, OpenAIServer

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.io.rewrites import read_query_set
from mmbright_core.ui.common.state import InspectTarget
from mmbright_core.ui.inspector.rewrite_view import added_spans

ANSWER = "raster projection coordinate system elevation"


def test_added_words_are_those_the_original_lacks() -> None:
    text = "reproject the raster, then clip"
    spans = added_spans("How do I reproject a Raster?", text)
    assert [text[start:end] for start, end, _ in spans] == ["the", "then", "clip"]
    assert {origin for *_, origin in spans} == {"llm"}


def test_the_inspector_shows_the_rewritten_text_and_the_llms_share(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = lambda body: ANSWER
    command = ["rewrite", "--source", "demo", "--task", "2", "--domain", "gis", "--prompt"]
    command += ["caption", "--llm", CHAT_MODEL, "--endpoint", chat_server.url]
    command += ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "q.jsonl")]
    assert main(command) == 0
    run = ["run", "--source", "demo", "--task", "2", "--retriever", "bm25", "--domain", "gis"]
    run += ["--queries", str(tmp_path / "q.jsonl"), "--cache-dir", str(tmp_path / "cache")]
    assert main([*run, "--out", str(tmp_path / "out")]) == 0
    (folder,) = (tmp_path / "out").iterdir()
    query = open_source("demo").judgments(2, "gis").queries[0]
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    add_folder(at, folder)
    assert not at.exception, at.exception
    name = folder.name.removeprefix("run_it2t_")
    sha = read_query_set(tmp_path / "q.jsonl").sha256
    provenance = at.session_state["runs"][(2, name)].provenance
    assert f"queries rewritten by {CHAT_MODEL} (caption, set {sha[:8]})" in provenance
    choose_pair(at, "bm25", name)
    at.session_state["inspect_query"] = InspectTarget("gis", query.query_id)
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    bodies = [h.proto.body for h in at.get("html")]
    shown = next(b for b in bodies if 'class="rewritten-query"' in b)
    rewrite = read_query_set(tmp_path / "q.jsonl").rewrites[("gis", query.query_id)]
    marked = re.findall(r'<mark class="origin-llm"[^>]*>([^<]*)</mark>', shown)
    want = [rewrite.query[s:e] for s, e, _ in added_spans(rewrite.original, rewrite.query)]
    assert marked == [html.escape(w) for w in want] and marked
    terms = [b for b in bodies if 'data-term="' in b and "origin-llm" in b]
    assert terms, "no hit of the rewritten run credits a term to the LLM"
    tables = [f.value for f in at.dataframe if "from LLM" in getattr(f.value, "columns", [])]
    if tables:  # the table's tab is open: the LLM's column adds up with the others
        table = tables[0]
        parts = table[["from text", "from image", "from both", "from LLM"]].sum(axis=1)
        assert (parts - table["score"]).abs().max() == pytest.approx(0, abs=1e-3)


def test_a_long_rewritten_query_is_cut_with_the_whole_text_behind_a_toggle() -> None:
    from streamlit.testing.v1 import AppTest

    def page() -> None:
        from mmbright_core.io.rewrites import Rewrite
        from mmbright_core.ui.inspector.rewrite_view import show_rewrites

        answer = " ".join(f"w{n}" for n in range(200_000))[:1_000_000]
        rewrite = Rewrite("gis", "q1", "a question", (), answer, None, 3, 9, answer)
        show_rewrites({"bm25-rw": rewrite})

    at = AppTest.from_function(page).run(timeout=60)
    assert not at.exception, at.exception
    (body,) = [h.proto.body for h in at.get("html")]
    assert len(body) < 200_000  # was 33 MB: every word of a million characters marked
    assert "its first 5,000 of 1,000,000 characters" in body and "w0</mark>" in body
    assert "w199999" not in body and not at.text
    (whole,) = at.toggle
    assert whole.label == "The whole text (1,000,000 characters, unmarked)" and not whole.value
    whole.set_value(True).run(timeout=60)
    assert [len(t.value) for t in at.text] == [1_000_000]
