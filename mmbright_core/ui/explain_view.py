"""The inspector's explanations: what an image added to a query, and why each hit scored.

Highlighted text is the one place the dashboard writes HTML: every piece of data text is
escaped with :func:`html.escape` first, and only then are the matched spans wrapped in
``<mark>`` tags (:func:`highlight`), so a passage holding ``<script>`` shows it as written.
Everything else goes through widgets that escape.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from mmbright_core.analysis.attribution import (
    Attribution,
    DenseAttribution,
    FusionAttribution,
    LexicalAttribution,
)
from mmbright_core.analysis.rankdiff import pushed_down
from mmbright_core.data.ids import display_id, pair_parts
from mmbright_core.data.sources import Source
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query
from mmbright_core.ui import render
from mmbright_core.ui.literal import literal, visible

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
QUERY_IMAGE_WIDTH = 360
"""Query images are shown this wide (full size one click away), to leave the words in view."""
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


def legend_html() -> str:
    """One line naming the highlight of each origin."""
    parts = [mark(words, origin) for origin, words in ORIGIN_WORDS.items()]
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


def show_attribution(found: Attribution | None) -> None:
    """Show why one hit scored what it did, without a click (the full text is one away)."""
    if found is None:
        return
    if isinstance(found, LexicalAttribution):
        st.html(terms_html(found) + snippet_html(found))
    elif isinstance(found, FusionAttribution):
        st.html(split_html(found))
    elif isinstance(found, DenseAttribution):
        line = f"Similarity {found.score:.4f}"
        if found.without_ocr is not None:
            change = found.score - found.without_ocr
            line += f" · without the OCR words {found.without_ocr:.4f} (OCR {change:+.4f})"
        st.caption(line)
    else:
        st.caption(literal(f"No attribution: {found.reason}"))


def show_query_text(query: Query, words: Mapping[str, Mapping[str, str]]) -> None:
    """The query text, then, per OCR run, the words it read from the images, marked."""
    st.text(visible(query.text))
    for name, by_image in words.items():
        read = [w for w in by_image.values() if w.strip()]
        if not read:
            st.caption(literal(f"{name} read no word from the images."))
            continue
        text = " ".join(" ".join(w.split()) for w in read)
        st.html(
            f"<div><small>{html.escape(name)} adds the words read from the images:</small> "
            f"{mark(text, 'image')}</div>"
        )


def show_query_images(
    source: Source, query: Query, words: Mapping[str, Mapping[str, str]], key: str
) -> None:
    """Every query image, the words each OCR run read from it underneath, full size a click away."""
    if not query.images:
        st.caption("This query has no image.")
    for index, ref in enumerate(query.images):
        data = source.query_image_bytes(query.domain, ref.path)
        render.show_image(data, ref.path, QUERY_IMAGE_WIDTH, full_key=f"{key}_{index}")
        for name, by_image in words.items():
            if ref.path in by_image:
                read = " ".join(by_image[ref.path].split())
                body = mark(read, "image") if read else "<i>no word read</i>"
                st.html(f"<small>Read by {html.escape(name)}:</small> {body}")


def show_fusion(name: str, found: FusionAttribution, key: str) -> None:
    """What a fusion run fed the encoder: the policy, the images used, the joined picture."""
    used = ", ".join(found.images_used) or f"none ({found.placeholder} placeholder)"
    st.caption(literal(f"{name}: image policy {found.policy} · used {used}"))
    for path, why in found.skipped:
        st.caption(literal(f"{name} left out {path}: {why}"))
    if found.policy == "concat" and found.pictures:
        render.show_picture(found.pictures[0], f"{name}: the concatenated picture", 200, key)


def group_pairs(top: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """Task 4 hits grouped by passage, in the order of each passage's best rank."""
    passages = [pair_parts(str(d))[0] for d in top["doc_id"]]
    keyed = top.assign(passage=passages)
    return [(str(p), keyed.loc[keyed["passage"] == p]) for p in dict.fromkeys(passages)]


def show_pair_group(
    source: Source,
    domain: str,
    passage: str,
    rows: pd.DataFrame,
    documents: Mapping[str, Document],
    found: Mapping[str, Attribution],
    key: str,
) -> None:
    """One passage of a Task 4 top list: its text once, then each of its pairs with its grade."""
    with st.container(border=True, key=key):
        ranks = ", ".join(f"#{int(r)}" for r in rows["rank"])
        st.markdown(f"**{ranks}** · {literal(passage)}")
        first = documents.get(str(rows["doc_id"].iloc[0]))
        show_attribution(found.get(str(rows["doc_id"].iloc[0])))
        if first is not None and first.text:
            render.show_passage(first.text)
        for index, row in enumerate(rows.itertuples(index=False)):
            image = pair_parts(str(row.doc_id))[1]
            what = "with its image" if image else "text only"
            badge = render.judgment_badge(row.relevance)  # grades 2 and 1 in distinct colours
            st.markdown(f"#{int(row.rank)} · {what} · score {row.score:.4f} · {badge}")
            if image:
                data = source.document_image_bytes(domain, image)
                render.show_image(data, image, 160, full_key=f"{key}_img{index}")


def show_image_grid(
    source: Source,
    domain: str,
    top: pd.DataFrame,
    documents: Mapping[str, Document],
    key: str,
    per_row: int = 3,
    scores: bool = True,
) -> None:
    """Task 3 hits as a grid of images, each with its rank, score and judgment."""
    rows = list(top.itertuples(index=False))
    for start in range(0, len(rows), per_row):
        for column, row in zip(st.columns(per_row), rows[start : start + per_row], strict=False):
            with column:
                badge = render.judgment_badge(row.relevance)
                head = f"**#{int(row.rank)}** · {row.score:.2f} · " if scores else ""
                st.markdown(f"{head}{badge}")
                document = documents.get(str(row.doc_id))
                path = document.image.path if document and document.image else str(row.doc_id)
                data = source.document_image_bytes(domain, path)
                render.show_image(data, path, full_key=f"{key}_{int(row.rank)}")


def show_relevant(
    source: Source,
    domain: str,
    qrels: Mapping[str, int],
    documents: Mapping[str, Document],
    key: str,
) -> None:
    """The query's judged-relevant items, whatever any run did (grade 2 first)."""
    relevant = sorted(((-g, d) for d, g in qrels.items() if g > 0))
    if not relevant:
        st.caption("No item is judged relevant for this query.")
        return
    frame = pd.DataFrame(
        [(n, d, math.nan, float(-g)) for n, (g, d) in enumerate(relevant, 1)],
        columns=["rank", "doc_id", "score", "relevance"],
    )
    images = [documents.get(d) for d in frame["doc_id"]]
    if all(doc is not None and doc.image is not None and not doc.text for doc in images):
        show_image_grid(source, domain, frame, documents, key, per_row=4, scores=False)
        return
    for row in frame.itertuples(index=False):
        document = documents.get(str(row.doc_id))
        shown = literal(display_id(str(row.doc_id)))
        st.markdown(f"{render.judgment_badge(row.relevance)} {shown}")
        if document is not None and document.text:
            render.show_passage(document.text)
        if document is not None and document.image is not None:
            render.show_image(
                source.document_image_bytes(domain, document.image.path),
                document.image.path,
                160,
                full_key=f"{key}_{int(row.rank)}",
            )


def show_hits(
    source: Source,
    task: int,
    domain: str,
    top: pd.DataFrame,
    documents: Mapping[str, Document],
    found: Mapping[str, Attribution],
    key: str,
) -> None:
    """A run's top list, each hit with its attribution.

    Task 3 is an image grid; Task 4 one item per passage (its with-image and text-only
    pairs together); passages one card each.
    """
    corpus = TASK_TABLE[task].corpus
    if corpus == "images":
        show_image_grid(source, domain, top, documents, key)
        return
    if corpus == "pairs":
        for index, (passage, rows) in enumerate(group_pairs(top)):
            show_pair_group(source, domain, passage, rows, documents, found, f"{key}_{index}")
        return
    for hit in top.itertuples(index=False):
        row = top.iloc[int(hit.rank) - 1]
        doc = str(hit.doc_id)
        render.show_hit(
            source,
            domain,
            row,
            documents.get(doc),
            f"{key}_{hit.rank}",
            explained=lambda doc=doc: show_attribution(found.get(doc)),  # type: ignore[misc]
        )


def show_displacing(
    source: Source,
    domain: str,
    run_b: str,
    top_b: pd.DataFrame,
    docs: pd.DataFrame,
    documents: Mapping[str, Document],
    found_b: Mapping[str, Attribution],
    key: str,
    k: int = 10,
) -> None:
    """The items that rose into run B's top ``k`` above a relevant item B ranks lower.

    Each is shown as a hit of B with its attribution (which of the image's words it
    matched), open without a click.
    """
    pushed, displacing = pushed_down(docs, k)
    if displacing.empty:
        return
    st.subheader(f"What pushed relevant items down in {literal(run_b)}")
    moves = ", ".join(
        f"{display_id(str(r.doc_id))} ({r.move})" for r in pushed.itertuples(index=False)
    )
    st.caption(literal(f"Relevant items ranked lower: {moves}"))
    for row in displacing.itertuples(index=False):
        doc = str(row.doc_id)
        hit = top_b.loc[top_b["doc_id"] == doc].iloc[0]
        render.show_hit(
            source,
            domain,
            hit,
            documents.get(doc),
            f"{key}_{int(row.rank_b)}",
            explained=lambda doc=doc: show_attribution(found_b.get(doc)),  # type: ignore[misc]
        )
