"""The inspector's explanations: what an image added to a query, and why each hit scored.

The HTML of an attribution is built, escaped, in :mod:`mmbright_core.ui.inspector.attribution_html`;
everything else goes through widgets that escape.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass

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
from mmbright_core.ui.common import render
from mmbright_core.ui.common.literal import literal, visible
from mmbright_core.ui.inspector.attribution_html import mark, snippet_html, split_html, terms_html

QUERY_IMAGE_WIDTH = 360
"""Query images are shown this wide (full size one click away), to leave the words in view."""


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


@dataclass(frozen=True)
class Items:
    """What a query's items are drawn from: the data, the query's domain, its shown items.

    Attributes:
        source: The data source (the items' images).
        domain: The query's domain.
        documents: doc_id -> the item, for every item shown (top lists and judgments).
    """

    source: Source
    domain: str
    documents: Mapping[str, Document]

    def image(self, path: str, width: int | None, key: str) -> None:
        """Draw one item image of the domain, full size a click away (button ``key``)."""
        render.show_image(
            self.source.document_image_bytes(self.domain, path), path, width, full_key=key
        )

    def hit(self, row: pd.Series, found: Attribution | None, key: str) -> None:
        """Draw one hit of a top list with its attribution, open without a click."""
        doc = str(row["doc_id"])
        render.show_hit(
            self.source,
            self.domain,
            row,
            self.documents.get(doc),
            key,
            explained=lambda: show_attribution(found),
        )


def show_pair_group(
    items: Items, passage: str, rows: pd.DataFrame, found: Mapping[str, Attribution], key: str
) -> None:
    """One passage of a Task 4 top list: its text once, then each of its pairs with its grade."""
    with st.container(border=True, key=key):
        ranks = ", ".join(f"#{int(r)}" for r in rows["rank"])
        st.markdown(f"**{ranks}** · {literal(passage)}")
        first = items.documents.get(str(rows["doc_id"].iloc[0]))
        show_attribution(found.get(str(rows["doc_id"].iloc[0])))
        if first is not None and first.text:
            render.show_passage(first.text)
        for index, row in enumerate(rows.itertuples(index=False)):
            image = pair_parts(str(row.doc_id))[1]
            what = "with its image" if image else "text only"
            badge = render.judgment_badge(row.relevance)  # grades 2 and 1 in distinct colours
            st.markdown(f"#{int(row.rank)} · {what} · score {row.score:.4f} · {badge}")
            if image:
                items.image(image, 160, f"{key}_img{index}")


def show_image_grid(
    items: Items, top: pd.DataFrame, key: str, per_row: int = 3, scores: bool = True
) -> None:
    """Task 3 hits as a grid of images, each with its rank, score and judgment."""
    rows = list(top.itertuples(index=False))
    for start in range(0, len(rows), per_row):
        for column, row in zip(st.columns(per_row), rows[start : start + per_row], strict=False):
            with column:
                badge = render.judgment_badge(row.relevance)
                head = f"**#{int(row.rank)}** · {row.score:.2f} · " if scores else ""
                st.markdown(f"{head}{badge}")
                document = items.documents.get(str(row.doc_id))
                path = document.image.path if document and document.image else str(row.doc_id)
                items.image(path, None, f"{key}_{int(row.rank)}")


def show_relevant(items: Items, qrels: Mapping[str, int], key: str) -> None:
    """The query's judged-relevant items, whatever any run did (grade 2 first)."""
    relevant = sorted(((-g, d) for d, g in qrels.items() if g > 0))
    if not relevant:
        st.caption("No item is judged relevant for this query.")
        return
    frame = pd.DataFrame(
        [(n, d, math.nan, float(-g)) for n, (g, d) in enumerate(relevant, 1)],
        columns=["rank", "doc_id", "score", "relevance"],
    )
    images = [items.documents.get(d) for d in frame["doc_id"]]
    if all(doc is not None and doc.image is not None and not doc.text for doc in images):
        show_image_grid(items, frame, key, per_row=4, scores=False)
        return
    for row in frame.itertuples(index=False):
        document = items.documents.get(str(row.doc_id))
        shown = literal(display_id(str(row.doc_id)))
        st.markdown(f"{render.judgment_badge(row.relevance)} {shown}")
        if document is not None and document.text:
            render.show_passage(document.text)
        if document is not None and document.image is not None:
            items.image(document.image.path, 160, f"{key}_{int(row.rank)}")


def show_hits(
    items: Items, task: int, top: pd.DataFrame, found: Mapping[str, Attribution], key: str
) -> None:
    """A run's top list, each hit with its attribution.

    Task 3 is an image grid; Task 4 one item per passage (its with-image and text-only
    pairs together); passages one card each.
    """
    corpus = TASK_TABLE[task].corpus
    if corpus == "images":
        show_image_grid(items, top, key)
        return
    if corpus == "pairs":
        for index, (passage, rows) in enumerate(group_pairs(top)):
            show_pair_group(items, passage, rows, found, f"{key}_{index}")
        return
    for hit in top.itertuples(index=False):
        row = top.iloc[int(hit.rank) - 1]
        items.hit(row, found.get(str(hit.doc_id)), f"{key}_{hit.rank}")


def show_displacing(
    items: Items,
    run_b: str,
    top_b: pd.DataFrame,
    docs: pd.DataFrame,
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
        items.hit(hit, found_b.get(doc), f"{key}_{int(row.rank_b)}")
