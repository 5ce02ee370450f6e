"""The highlights of a hit's words: the legend names only the origins a query's words can have."""

from __future__ import annotations

from mmbright_core.ui.inspector.attribution_html import legend_html, origins


def test_task1_has_no_image_origins_and_plain_runs_no_llm_origin():
    assert origins(1, rewritten=False) == ("text",)
    assert origins(2, rewritten=False) == ("text", "image", "both")
    assert origins(2, rewritten=True) == ("text", "image", "both", "llm")
    text_only = legend_html(origins(1, rewritten=False))
    assert "query text" in text_only
    assert "from the image" not in text_only and "text and image" not in text_only
    assert "added by the LLM" not in text_only
    assert "added by the LLM" in legend_html(origins(1, rewritten=True))
