"""Rendering helpers shared by the pages: error display, downloads, badges and image tiles.

Text that comes from the data (query text, passages, ids) is always rendered through
widgets that show it as it is (``st.text``, dataframes), as Markdown made literal by
:func:`~mmbright_core.ui.common.literal.literal`, or as HTML escaped with :func:`html.escape`
(image captions, passages); nothing here passes data to ``unsafe_allow_html``.
"""

from __future__ import annotations

import functools
import html
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import pandas as pd
import streamlit as st
from PIL import Image

from mmbright_core.data.ids import display_id
from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.data.sources import Source
from mmbright_core.errors import MMBrightError
from mmbright_core.io import csv_safe
from mmbright_core.present.palette import grade
from mmbright_core.types import Document, Query
from mmbright_core.ui.common.literal import literal, visible

P = ParamSpec("P")
T = TypeVar("T")

SYNTHETIC_NOTE = (
    "The demo data is **synthetic**: made-up queries, passages and images in the published "
    "layout, for trying the dashboard out. Its scores say nothing about any model; the "
    "paper's numbers beside them are for the real benchmark."
)

PASSAGE_CHARS = 5_000
"""Longest passage excerpt shown (one published passage has 25 M characters, docs/protocol.md, The
benchmark)."""
VISIBLE_PIXELS = 8
"""An image narrower or lower than this is said to be too small to show anything."""

# Older names of the one escaping helper, :func:`mmbright_core.ui.common.literal.literal`.
escape_md = escape_message = literal


def attempt(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | None:
    """Call the core; show its error message on the page and return None if it refuses.

    Only the package's own errors (bad input, unknown names, missing extras) and file
    system errors are shown this way; anything else is a bug and propagates.
    """
    try:
        return fn(*args, **kwargs)
    except (MMBrightError, OSError) as err:
        st.error(literal(err), icon=":material/error:")
        return None


@contextmanager
def progress_bar(text: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A progress bar while the block runs: the callback it yields draws ``done of total unit``.

    The bar is removed when the block ends, however it ends.
    """
    bar = st.progress(0.0, text=literal(text))

    def update(done: int, total: int) -> None:
        bar.progress(done / total, text=literal(f"{done} of {total} {unit}"))

    try:
        yield update
    finally:
        bar.empty()


def csv_download(
    frame: pd.DataFrame, file_name: str, key: str, label: str = "Download CSV"
) -> None:
    """Offer a table as a CSV file (the current view, as filtered on the page).

    The file is written when the button is clicked, not on every rerun: a page of 1,218
    queries would otherwise turn its table into CSV and store it each time anything changes.
    """
    st.download_button(
        label,
        functools.partial(csv_bytes, frame),
        file_name=file_name,
        mime="text/csv",
        key=key,
        icon=":material/download:",
        on_click="ignore",  # a download changes nothing on the page: no rerun
    )


def number_table(frame: pd.DataFrame, key: str, numbers: Mapping[str, tuple[str, str]]) -> None:
    """Show a table without its index, each column of ``numbers`` under its label and format.

    ``numbers``: column -> (label, printf-style format), e.g. ``{"delta": ("B − A", "%+.3f")}``.
    """
    st.dataframe(
        frame,
        hide_index=True,
        key=key,
        column_config={
            column: st.column_config.NumberColumn(label, format=shown)
            for column, (label, shown) in numbers.items()
        },
    )


def csv_bytes(frame: pd.DataFrame) -> bytes:
    """A table as the CSV file :func:`csv_download` offers (UTF-8 with a BOM, no index).

    The byte-order mark is how Excel knows the file is UTF-8: without it, a header such as
    ``delta (ocr-bm25 − bm25)`` or a query's accented words open garbled there (pandas and
    Python's ``utf-8-sig`` read it as plain UTF-8). Cells a spreadsheet would run as formulas
    are quoted (:mod:`mmbright_core.io.csv_safe`).
    """
    return csv_safe.frame_csv(frame).encode("utf-8-sig")


def judgment_badge(relevance: float | None, excluded: bool = False) -> str:
    """Return a Markdown badge naming a document's judgment for the query.

    Args:
        relevance: The qrels label, or None / NaN when the document is unjudged.
        excluded: True when the protocol removes the document from the ranking.
    """
    if excluded:
        return ":gray-badge[excluded]"
    if relevance is None or (isinstance(relevance, float) and math.isnan(relevance)):
        return ":orange-badge[unjudged]"
    label = int(relevance)
    # Each grade a colour of its own (present.palette): a Task 4 pair graded 1 is not one graded 2.
    words = f"relevant · {min(label, 2)}" if label > 0 else "not relevant · 0"
    return f":{grade(label).badge}-badge[{words}]"


def score_text(value: float | None) -> str:
    """Format a per-query value for display: four decimals, or an en dash when absent."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.4f}"


def points(value: float) -> str:
    """Format a fraction as the benchmark reports it: x100 with one decimal."""
    return "–" if math.isnan(value) else f"{100 * value:.1f}"


def show_image(
    data: bytes | None, path: str, width: int | None = None, full_key: str | None = None
) -> bool:
    """Show one image, or a warning with its path and why it cannot be decoded.

    Args:
        data: The image's bytes (None when missing).
        path: Its path, shown as the caption.
        width: Widest it is drawn, in pixels (default: as large as it is); never wider than
            the column, so it stays clear of the column beside it.
        full_key: When given, a button under the image (of this key) opens it full size.

    Returns:
        True when the image was shown.
    """
    try:
        image = decode_image(data, path)
    except ImageDecodeError as err:
        st.warning(
            literal(f"Image cannot be shown: {err.path} ({err.reason})"),
            icon=":material/broken_image:",
        )
        return False
    show_picture(image, path, width, full_key)
    return True


def show_picture(
    image: Image.Image, caption: str, width: int | None = None, full_key: str | None = None
) -> None:
    """Draw a decoded image with its caption (see :func:`show_image` for the arguments)."""
    # "content" is the picture's own width capped at the column's; a fixed pixel width
    # would overflow a narrow column into its neighbour (the notes panel at 1000 px).
    st.image(fit_width(image, width), width="content")
    image_caption(caption)
    if min(image.size) < VISIBLE_PIXELS:  # drawn at its own size, it is a dot or nothing
        st.caption(
            f"{image.width:d} × {image.height:d} px: too small to show anything. It is the "
            "dataset's own image, shown at its own size; retrievers read it as it is."
        )
    if full_key is not None:
        full_size_button(image, caption, full_key)


def fit_width(image: Image.Image, width: int | None) -> Image.Image:
    """``image`` scaled down to ``width`` pixels wide (kept as is when already narrower)."""
    if width is None or image.width <= width:
        return image
    height = max(1, round(image.height * width / image.width))
    return image.resize((width, height), Image.Resampling.LANCZOS)


def path_html(path: str) -> str:
    """A path as escaped HTML that may wrap after a "/" but never inside a name.

    ``<wbr>`` marks where a line may end; the caption's style keeps the browser from
    breaking anywhere else unless a single name is wider than the whole column.
    """
    return "/<wbr>".join(html.escape(visible(part)) for part in path.split("/"))


def image_caption(text: str) -> None:
    """A caption under an image: its path (or label), literal, whole names on each line.

    The full text is the tooltip too, so a wrapped path reads back in one piece.
    """
    tooltip = html.escape(visible(text))
    st.html(
        f'<div class="mmb-image-caption" title="{tooltip}" style="font-size:0.875rem;'
        'opacity:0.6;line-height:1.4;word-break:normal;overflow-wrap:anywhere">'
        f"{path_html(text)}</div>"
    )


FULL_SIZE_MARGIN = 64
"""Dialog width beyond the picture's: the dialog's padding on both sides, in pixels."""


def full_size_button(image: Image.Image, caption: str, key: str) -> None:
    """A "Full size" button that opens ``image`` at its own pixel size in a dialog.

    The dialog is as wide as the picture (and its padding); on a narrower window it
    shrinks to the window, and the picture with it, so it is always whole on screen.
    """
    if st.button("Full size", key=key, icon=":material/zoom_in:", type="tertiary"):
        dialog = st.dialog("Full size", width=image.width + FULL_SIZE_MARGIN)
        dialog(_draw_full_size)(image, caption)


def _draw_full_size(image: Image.Image, caption: str) -> None:
    st.image(image, width="content")
    image_caption(caption)
    st.caption(f"{image.width:d} × {image.height:d} px")


def cut(text: str, limit: int = PASSAGE_CHARS) -> str:
    """``text`` up to ``limit`` characters, with an ellipsis when it was longer."""
    return text[:limit] + ("…" if len(text) > limit else "")


def show_query(source: Source, query: Query) -> None:
    """Show a query's text (escaped) and every one of its images, problems included."""
    st.text(visible(query.text))
    if not query.images:
        st.caption("This query has no image.")
    for ref in query.images:
        show_image(source.query_image_bytes(query.domain, ref.path), ref.path)


def show_passage(text: str) -> None:
    """A passage's text (cut to :data:`PASSAGE_CHARS`), folded under "Passage text".

    One HTML element, a ``<details>``, rather than an expander holding a text element: a top
    list shows many passages, and every element is a message to the browser.
    """
    st.html(
        "<details><summary>Passage text</summary>"
        '<div style="white-space:pre-wrap;font-family:monospace;font-size:0.85em">'
        f"{html.escape(visible(cut(text)))}</div></details>"
    )


def show_document(
    source: Source, domain: str, doc_id: str, document: Document | None, key: str | None = None
) -> None:
    """Show a retrieved item: its passage text in an expander, its image, or both (Task 4).

    With a ``key``, the item's image opens full size from an expander of that key.
    """
    if document is None:
        st.caption(f"{literal(display_id(doc_id))} is not in the corpus.")
        return
    if document.text:
        show_passage(document.text)
    if document.image is not None:
        show_image(
            source.document_image_bytes(domain, document.image.path),
            document.image.path,
            240,
            full_key=f"full_{key}" if key else None,
        )


def show_hit(
    source: Source,
    domain: str,
    hit: pd.Series,
    document: Document | None,
    key: str,
    explained: Callable[[], None] | None = None,
) -> None:
    """Show one row of a query's top list: rank, score, judgment badge and the content.

    ``explained``, when given, draws the hit's score attribution under its id, before the
    content (which stays one click away).
    """
    with st.container(border=True, key=key):
        badge = judgment_badge(hit["relevance"])
        # One element for the head line and the id: every element is a message to the browser.
        st.markdown(
            f"**#{int(hit['rank'])}** · score {hit['score']:.4f} · {badge}  \n"
            f":gray[{literal(display_id(str(hit['doc_id'])))}]"
        )
        if explained is not None:
            explained()
        show_document(source, domain, str(hit["doc_id"]), document, key)
