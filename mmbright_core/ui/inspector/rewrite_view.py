"""What a rewrite changed: the text a run on rewritten queries ran, the LLM's words marked.

A run made with ``mmbright run --queries`` records, per domain, each query's original text
and the text it ran (``rewrites.json``). The inspector shows that text under the query's
own, with every word the original does not hold marked as the LLM's (the mark of origin
``llm`` its hits' terms carry too), and says so when the LLM gave no usable answer. A text
longer than a passage excerpt (:data:`~mmbright_core.ui.common.render.PASSAGE_CHARS`) is shown cut
there, the whole of it, unmarked, behind a toggle: an answer is as long as the server makes
it, and a marked word costs some thirty bytes of HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping

import streamlit as st

from mmbright_core.io.rewrites import Rewrite
from mmbright_core.ui.common import render
from mmbright_core.ui.common.literal import visible
from mmbright_core.ui.common.state import RunEntry
from mmbright_core.ui.inspector.attribution_html import highlight

_WORD = re.compile(r"\w+")


def rewrites_of(entries: Mapping[str, RunEntry], domain: str, query_id: str) -> dict[str, Rewrite]:
    """Run name -> the rewritten query it ran, for the runs on rewritten queries."""
    return {
        name: found
        for name, entry in entries.items()
        if (found := entry.rewrites.get((domain, query_id))) is not None
    }


def added_spans(original: str, text: str) -> list[tuple[int, int, str]]:
    """``(start, end, "llm")`` of each word of ``text`` the original does not hold."""
    known = {word.casefold() for word in _WORD.findall(original)}
    return [
        (found.start(), found.end(), "llm")
        for found in _WORD.finditer(text)
        if found.group().casefold() not in known
    ]


def show_rewrites(rewrites: Mapping[str, Rewrite]) -> None:
    """Per run on rewritten queries, the text it ran with the LLM's words marked."""
    for name, rewrite in rewrites.items():
        if rewrite.answer is None:
            why = rewrite.problem or "no answer"
            st.caption(render.escape_message(f"{name} ran the original text: {why}."))
            continue
        text, whole = render.cut(rewrite.query), len(rewrite.query)
        marked = highlight(text, added_spans(rewrite.original, text))
        cut = text != rewrite.query
        part = f"; its first {render.PASSAGE_CHARS:,} of {whole:,} characters" if cut else ""
        st.html(
            f'<div class="rewritten-query"><small>{html.escape(name)} ran this text (the '
            f"LLM's words marked{part}):</small><br>{marked}</div>"
        )
        key = f"rewrite_whole_{name}_{rewrite.domain}_{rewrite.query_id}"
        if cut and st.toggle(f"The whole text ({whole:,} characters, unmarked)", key=key):
            st.text(visible(rewrite.query))
