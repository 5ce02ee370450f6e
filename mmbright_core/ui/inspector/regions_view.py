"""Where in an image a wrong hit beat a relevant item: occlusion on request.

The image occluded is the query's, or, where the task's items carry images (TASK_TABLE's
``corpus``: tasks 3 and 4), the hit's own, as the choice of side says (:func:`sides`); a query
without an image still has the hit's image to occlude. The grid is
:func:`~mmbright_core.retrieval.dual.regions.explain_regions` of the run's own retriever (rebuilt
as the text/image split rebuilds it, :mod:`~mmbright_core.ui.common.explain_cache`), computed only
when the button is pressed, with a progress bar. Pressing Cancel (or any other widget of the
page) while it runs stops it at its next batch: Streamlit stops a running script when the page
is used, and the progress update is where it stops; nothing partial is stored. Each result is
kept for the session and content-keyed in the cache under ``regions/``, so asking again, in
this session or another, reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import pandas as pd
import streamlit as st

from mmbright_core.data.ids import display_id
from mmbright_core.data.sources import Source
from mmbright_core.data.view import QueryRef
from mmbright_core.present.region_overlay import heat_figure, legend, sentence
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.dual.regions import EncodesImages, explain_regions
from mmbright_core.retrieval.explanation import GRID, RegionAttribution, Unavailable
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Document, Query, Task, TaskData
from mmbright_core.ui.common import explain_cache, render
from mmbright_core.ui.common.literal import literal, visible
from mmbright_core.ui.common.state import RunEntry

#: Session state: (run fingerprint, domain, query, side, wrong, relevant, grid) -> the result.
RESULTS_KEY = "insp_regions_results"
#: Session state: set by Cancel, read by the next run to say the work was stopped.
CANCELLED_KEY = "insp_regions_cancelled"
#: The deepest rank offered in the pickers.
PICK_DEPTH = 100
#: How each side of :data:`~mmbright_core.retrieval.explanation.SIDES` reads in the choice.
SIDE_LABELS = {"query": "the query image", "document": "the hit's own image"}


def sides(task: Task, query: Query) -> list[str]:
    """The images the panel can occlude for ``query``: the query's, the hit's own, or none.

    The query's when the task's queries carry images and this one has one; the hit's own
    when the task's items carry images (TASK_TABLE's ``corpus``), whatever the query holds.
    """
    info = TASK_TABLE[task]
    offered = {"query": not info.text_only and bool(query.images), "document": info.corpus_images}
    return [side for side, shown in offered.items() if shown]


def default_pair(ranked: Sequence[str], qrels: Mapping[str, int]) -> tuple[str | None, str | None]:
    """The top-ranked non-relevant hit above the best-ranked relevant item, and that item.

    With no relevant item ranked: the top non-relevant hit and None. With the best relevant
    item ranked first (nothing above it): the first non-relevant hit below it.
    """
    relevant = next((d for d in ranked if qrels.get(d, 0) > 0), None)
    wrong = next((d for d in ranked if qrels.get(d, 0) <= 0), None)
    return wrong, relevant


class _Choice(NamedTuple):
    """What the panel occludes and compares: the side, the wrong hit, the item, the grid."""

    side: str
    doc: str
    versus: str | None
    grid: int


def show_regions(
    ref: QueryRef, entries: Mapping[str, RunEntry], ranked: Mapping[str, Sequence[str]]
) -> None:
    """The "Where in the image" panel: pick a run and two items, compute on request, show.

    Not a fragment: a widget of a fragment asks for a rerun of that fragment, which
    Streamlit queues behind the fragment's run in progress instead of stopping it, so
    Cancel would wait for the whole occlusion to end (and store it). Each choice here
    reruns the page, as any other widget of the inspector does.
    """
    st.subheader("Where in the image")
    task, domain, query, qrels = ref.view.task, ref.domain, ref.query, ref.qrels
    names = [n for n in ranked if ranked[n]]
    offered = sides(task, query)
    if not offered or not names:
        st.caption("This query has no image to occlude.")
        return
    name = st.selectbox(
        "Run", names, index=len(names) - 1, key="insp_regions_run", format_func=visible
    )
    entry = entries[name]
    found = _image_retriever(entry, ref)
    if found is None:
        return
    retriever, data, source = found
    side = _side(task, offered)
    choice = _choose(side, list(ranked[name])[:PICK_DEPTH], qrels)
    if choice is None:
        return
    key = (entry.fingerprint, domain, query.query_id, *choice)
    result = _on_request(key, retriever, data, source, query.query_id, choice)
    if isinstance(result, Unavailable):
        _no_regions(result)
    elif isinstance(result, RegionAttribution):
        compared = {d for d in (choice.doc, choice.versus) if d is not None}
        documents = ref.view.shown_documents(domain, compared)
        _show(result, source, domain, documents)


def _no_regions(why: Unavailable) -> None:
    st.info(literal(f"No regions: {why.reason}"), icon=":material/info:")


def _image_retriever(entry: RunEntry, ref: QueryRef) -> tuple[Retriever, TaskData, Source] | None:
    """The run's retriever, if it encodes images, with what it scores against.

    None, once the panel says why, for a run whose retriever cannot be rebuilt or reads no
    images (answered at once: nothing is computed).
    """
    retriever = explain_cache.entry_retriever(entry)
    if isinstance(retriever, Unavailable):
        _no_regions(retriever)
        return None
    data = explain_cache.task_data(ref.view, ref.domain)
    source = ref.view.source
    if not isinstance(retriever, EncodesImages):
        found = render.attempt(explain_regions, retriever, data, source, ref.query_id, "")
        if isinstance(found, Unavailable):
            _no_regions(found)
        return None
    return retriever, data, source


def _side(task: Task, offered: list[str]) -> str:
    """The image occluded: the query's, unless the task's items carry images to choose from."""
    if not TASK_TABLE[task].corpus_images:
        return "query"
    return st.radio(
        "Occlude",
        offered,
        horizontal=True,
        key="insp_regions_side",
        format_func=SIDE_LABELS.__getitem__,
    )


def _choose(side: str, options: list[str], qrels: Mapping[str, int]) -> _Choice | None:
    """The wrong hit, the item it is compared with and the grid, as picked in one row.

    The pickers start on :func:`default_pair`. None, once the panel says so, when the two
    items picked are the same.
    """
    rank = {doc: i for i, doc in enumerate(options, 1)}
    wrong, relevant = default_pair(options, qrels)

    def label(doc: str) -> str:
        grade = qrels.get(doc, 0)
        judged = f"relevant {grade}" if grade > 0 else "not relevant"
        return visible(f"#{rank[doc]} {display_id(doc)} ({judged})")

    left, right, size = st.columns([3, 3, 1], vertical_alignment="bottom")
    doc = left.selectbox(
        "Wrong hit",
        options,
        index=options.index(wrong) if wrong in rank else 0,
        key="insp_regions_doc",
        format_func=label,
    )
    choices = [None, *options]
    versus = right.selectbox(
        "Compared with",
        choices,
        index=choices.index(relevant),
        key="insp_regions_versus",
        format_func=lambda d: "(the hit's score alone)" if d is None else label(d),
    )
    grid = int(size.number_input("Grid", 2, 16, GRID, key="insp_regions_grid"))
    if versus == doc:
        st.info("Choose two different items to compare.")
        return None
    return _Choice(side, doc, versus, grid)


def _on_request(
    key: tuple[object, ...],
    retriever: Retriever,
    data: TaskData,
    source: Source,
    query_id: str,
    choice: _Choice,
) -> RegionAttribution | Unavailable | None:
    """The grid computed when the button is pressed (with Cancel beside its progress bar).

    The session keeps each result under ``key``; a rerun that follows Cancel says that
    nothing was stored, unless the result was stored after all. Cancel is there only while
    the work runs: it is taken off the page when the work ends. None: not asked for yet, or
    the computation failed (said on the page).
    """
    results = st.session_state.setdefault(RESULTS_KEY, {})
    if st.button("Where in the image", key="insp_regions_go", icon=":material/grid_on:"):
        st.session_state.pop(CANCELLED_KEY, None)
        cancel = st.empty()
        cancel.button("Cancel", key="insp_regions_cancel", on_click=_cancel)
        grid = choice.grid
        with render.progress_bar(f"Occluding {grid}x{grid} cells…", "forward passes") as bar:
            found = render.attempt(
                explain_regions,
                retriever,
                data,
                source,
                query_id,
                choice.doc,
                versus=choice.versus,
                side=choice.side,
                grid=grid,
                progress=bar,
            )
        cancel.empty()
        if found is not None:
            results[key] = found
    elif st.session_state.pop(CANCELLED_KEY, False) and key not in results:
        st.info("Cancelled: nothing was stored. Press the button to start again.")
    return results.get(key)


def _cancel() -> None:
    st.session_state[CANCELLED_KEY] = True


def _show(
    result: RegionAttribution, source: Source, domain: str, documents: Mapping[str, Document]
) -> None:
    """Each occluded image with its heat and its grid, beside the two items compared."""
    picture_col, items_col = st.columns([3, 2])
    with picture_col:
        for index, image in enumerate(result.images):
            st.markdown(literal(sentence(result, index)))
            if image.picture is not None:
                st.plotly_chart(heat_figure(image), key=f"insp_regions_heat_{index}")
                st.caption(literal(image.image))
            st.dataframe(grid_table(result, index), key=f"insp_regions_grid_{index}")
        st.caption(literal(legend(result)))
    with items_col:
        shown = [(result.doc_id, result.score, "Wrong hit")]
        if result.versus is not None and result.versus_score is not None:
            shown.append((result.versus, result.versus_score, "Compared with"))
        for doc, score, what in shown:
            with st.container(border=True):
                st.markdown(
                    f"**{literal(what)}** · score {score:.4f}  \n{literal(display_id(doc))}"
                )
                render.show_document(source, domain, doc, documents.get(doc))


def grid_table(result: RegionAttribution, image: int = 0) -> pd.DataFrame:
    """One image's grid as a table: a row per grid row, top to bottom, left to right."""
    values = result.images[image].values
    grid = len(values)
    return pd.DataFrame(
        values,
        index=[f"row {r + 1}" for r in range(grid)],
        columns=[f"col {c + 1}" for c in range(grid)],
    )
