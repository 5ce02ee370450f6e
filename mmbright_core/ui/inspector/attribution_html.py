"""A hit's score attribution as HTML and as table columns, with the words marked by origin.

Highlighted text is the one place the dashboard writes HTML: every piece of data text is
escaped with :func:`html.escape` first, and only then are the matched spans wrapped in
``<mark>`` tags (:func:`highlight`), so a passage holding ``<script>`` shows it as written.
The inspector draws these (:mod:`mmbright_core.ui.inspector.explain_view`); nothing here draws.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from mmbright_core.analysis.attribution import (
    Attribution,
    DenseAttribution,
    FusionAttribution,
    LexicalAttribution,
)
from mmbright_core.task_table import task_info
from mmbright_core.ui.common.literal import visible

# Black text on light marks reads on both themes; the image's words also get an underline,
# so they differ from the text's by more than colour.
_MARK = {
    "text": "background:#fff176;color:#000;padding:0 2px;border-radius:3px",
    "image": (
        "background:#80deea;color:#000;padding:0 2px;border-radius:3px;"
        "border-bottom:2px dashed #00695c"
    ),
    "both": "background:#c5e1a5;color:#000;padding:0 2px;border-radius:3px",
    # Words only an LLM's rewrite of the query holds: dotted, unlike the image's dashes.
    "llm": (
        "background:#f8bbd0;color:#000;padding:0 2px;border-radius:3px;"
        "border-bottom:2px dotted #880e4f"
    ),
}
ORIGIN_WORDS = {
    "text": "query text",
    "image": "from the image",
    "both": "text and image",
    "llm": "added by the LLM",
}
TERMS_SHOWN = 8
"""Terms listed beside a hit (the compact table has every contributing term's sum)."""


def mark(text: str, origin: str) -> str:
    """Escaped ``text`` in the highlight of its origin (``text``, ``image`` or ``both``)."""
    return (
        f'<mark class="origin-{origin}" style="{_MARK[origin]}" '
        f'title="{ORIGIN_WORDS[origin]}">{html.escape(visible(text))}</mark>'
    )


def highlight(text: str, spans: Sequence[tuple[int, int, str]]) -> str:
    """``text`` as HTML: escaped, with each ``(start, end, origin)`` span marked.

    Overlapping or out-of-range spans are skipped; the text between them is escaped as is.
    """
    out: list[str] = []
    at = 0
    for start, end, origin in sorted(spans):
        if start < at or end > len(text) or start >= end:
            continue
        out.append(html.escape(visible(text[at:start])))
        out.append(mark(text[start:end], origin))
        at = end
    out.append(html.escape(visible(text[at:])))
    return "".join(out)


def snippet_html(found: LexicalAttribution) -> str:
    """The passage snippet around the strongest matches, each matched word marked by origin."""
    origin = {t.term: t.origin for t in found.terms}
    spans = [(s.start, s.end, origin.get(s.term, "text")) for s in found.spans]
    before = "…" if found.snippet_start > 0 else ""
    return f'<div style="line-height:1.6">{before}{highlight(found.snippet, spans)}…</div>'


def origins(task: int, rewritten: bool) -> tuple[str, ...]:
    """The origins a query's words can have, in legend order.

    The image's (and text-and-image) only where the task's queries have images (not
    Task 1), the LLM's only for a run on rewritten queries.
    """
    left_out = {"image", "both"} if task_info(task).text_only else set()
    left_out |= set() if rewritten else {"llm"}
    return tuple(origin for origin in ORIGIN_WORDS if origin not in left_out)


def legend_html(shown: Sequence[str] = tuple(ORIGIN_WORDS)) -> str:
    """One line naming the highlight of each origin in ``shown`` (:func:`origins`)."""
    parts = [mark(ORIGIN_WORDS[origin], origin) for origin in shown]
    return "<small>Matched words: " + " ".join(parts) + "</small>"


def contributing(found: LexicalAttribution) -> list[tuple[str, str, float]]:
    """(term, origin, contribution) of the terms the passage matches, strongest first."""
    return [(t.term, t.origin, t.contribution) for t in found.terms if t.contribution > 0]


def terms_html(found: LexicalAttribution, limit: int = TERMS_SHOWN) -> str:
    """The strongest terms with their share of the score, then the rest summed."""
    terms = contributing(found)
    shown = [
        f'<span data-term="{html.escape(term, quote=True)}" data-contribution="{value!r}">'
        f"{mark(term, origin)}&nbsp;{value:.2f}</span>"
        for term, origin, value in terms[:limit]
    ]
    rest = sum(value for _, _, value in terms[limit:])
    if len(terms) > limit:
        shown.append(
            f'<span data-term="" data-contribution="{rest!r}">'
            f"{len(terms) - limit} more&nbsp;{rest:.2f}</span>"
        )
    body = " + ".join(shown) if shown else "no query term in this passage"
    return f'<div style="line-height:1.9">{body} = <b>{found.score:.4f}</b></div>'


def split_html(found: FusionAttribution) -> str:
    """Two bars: the part of the score from the query text and from the query image."""
    largest = max(abs(found.text_part), abs(found.image_part), 1e-9)
    rows = []
    for label, value, colour in (
        ("text", found.text_part, "#1f77b4"),
        ("image", found.image_part, "#d62728"),
    ):
        width = 100 * abs(value) / largest
        rows.append(
            f'<div data-part="{label}" data-value="{value!r}" '
            'style="display:flex;align-items:center;gap:6px;margin:2px 0">'
            f'<span style="width:3.2em">{label}</span>'
            f'<span style="display:inline-block;height:12px;width:{width:.1f}%;'
            f'max-width:70%;background:{colour};border-radius:2px"></span>'
            f"<span>{value:.2f}</span></div>"
        )
    return "".join(rows)


def summary_row(found: Attribution) -> dict[str, object]:
    """The attribution of one hit as table columns (the parts add up to ``score``)."""
    if isinstance(found, LexicalAttribution):
        parts = {origin: 0.0 for origin in ORIGIN_WORDS}
        for _, origin, value in contributing(found):
            parts[origin] += value
        top = ", ".join(f"{term} {value:.2f}" for term, _, value in contributing(found)[:4])
        return {
            "from text": parts["text"],
            "from image": parts["image"],
            "from both": parts["both"],
            "from LLM": parts["llm"],
            "explained": top,
        }
    if isinstance(found, FusionAttribution):
        return {
            "from text": found.text_part,
            "from image": found.image_part,
            "explained": f"{found.policy} · {len(found.images_used)} image(s)",
        }
    if isinstance(found, DenseAttribution):
        without = "" if found.without_ocr is None else f"without OCR {found.without_ocr:.2f}"
        return {"explained": f"similarity {found.score:.2f} {without}".strip()}
    return {"explained": found.reason}
