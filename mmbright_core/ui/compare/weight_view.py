"""Compare's "where the image's weight lies": run B's occlusion grids over queries, on request.

For at most N queries with an image (in the comparison's order), run B's top hit against its
best-ranked relevant item is occluded (:mod:`~mmbright_core.retrieval.dual.regions`), and,
where the ``ocr`` extra is installed, the text in each image is found by its OCR boxes, with a
progress bar; the grids are content-keyed in the cache (asking again reads them back) and the
table is kept for the session. Cancel, or any other widget used while it runs, stops it at the
next query.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mmbright_core.analysis.compare import Comparison
from mmbright_core.ranking import ranked
from mmbright_core.retrieval.backends.ocr_reader import OcrReader, engine_installed
from mmbright_core.retrieval.cache.store import default_cache_dir
from mmbright_core.retrieval.dual.regions import Case, case, query_weights, weight_groups
from mmbright_core.retrieval.explanation import GRID, Unavailable
from mmbright_core.ui.common import explain_cache, render, views
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.state import Compared

#: Session state: (run B fingerprint, queries, grid, OCR installed) -> (per-query table,
#: skipped cases).
RESULTS_KEY = "cmp_weights_results"
#: How many queries are weighed unless the user asks for another number.
QUERIES = 20


def show_weights(compared: Compared, comparison: Comparison) -> None:
    """The section: how many queries, a button, then the groups and the per-query shares."""
    st.subheader("Where the image's weight lies")
    ocr = engine_installed()
    st.caption(
        literal(
            f"Occlusion of the query image in {compared.run_b} (B): for each query, the share "
            "of the grid's absolute values in the centre cells (the middle third both ways) "
            "and on the edges (every other cell), of B's top hit against its best-ranked "
            "relevant item (the hit's score alone when it is relevant or none is ranked). "
            "A query is 'edges' when the edges weigh more per cell than the centre."
            + (
                " The text cells are those the OCR engine's text boxes cover a tenth of; a "
                "query is 'text' first, when they weigh more per cell than the others."
                if ocr
                else " Install the ocr extra to find the images' text regions too."
            )
        )
    )
    entry = compared.entries[compared.run_b]
    plugin = explain_cache.pending_import(entry)
    if plugin is not None:
        explain_cache.ask_import(plugin, compared.run_b, key="cmp_weights_allow")
        return
    retriever = explain_cache.entry_retriever(entry)
    if isinstance(retriever, Unavailable):
        st.info(literal(f"No regions: {retriever.reason}"), icon=":material/info:")
        return
    count, grid = st.columns(2)
    limit = int(count.number_input("Queries (at most)", 1, 500, QUERIES, key="cmp_weights_n"))
    cells = int(grid.number_input("Grid", 2, 16, GRID, key="cmp_weights_grid"))
    key = (entry.fingerprint, limit, cells, ocr)
    results = st.session_state.setdefault(RESULTS_KEY, {})
    if st.button("Weigh the query images", key="cmp_weights_go", icon=":material/grid_on:"):
        st.button("Cancel", key="cmp_weights_cancel")
        cases = _cases(compared, comparison, limit)
        with render.progress_bar(f"Occluding {len(cases)} query image(s)…", "queries") as bar:
            found = render.attempt(
                query_weights,
                retriever,
                compared.view.source,
                cases,
                lambda domain: explain_cache.task_data(compared.view, domain),
                grid=cells,
                progress=bar,
                text_boxes=OcrReader(default_cache_dir()).text_boxes if ocr else None,
            )
        if found is not None:
            results[key] = found
    if key not in results:
        return
    weights, skipped = results[key]
    if len(weights):
        render.number_table(
            weight_groups(weights, comparison.per_query),
            "cmp_weights_groups",
            {
                "delta": ("mean B − A", "%+.3f"),
                "edge_share": ("mean edge share", "%.2f"),
                "text_share": ("mean text share", "%.2f"),
            },
        )
        st.dataframe(weights, hide_index=True, key="cmp_weights_queries")
    for one, reason in skipped[:5]:
        st.caption(literal(f"{one.domain}/{one.query_id}: no grid ({reason})"))
    if len(skipped) > 5:
        st.caption(f"{len(skipped) - 5} more queries without a grid.")


def _cases(compared: Compared, comparison: Comparison, limit: int) -> list[Case]:
    """The first ``limit`` compared queries with an image that run B ranks, as cases."""
    entry = compared.entries[compared.run_b]
    rows = comparison.per_query
    rows = rows.loc[pd.to_numeric(rows["n_images"], errors="coerce").fillna(0) > 0]
    out = []
    for domain, query_id in zip(rows["domain"], rows["query_id"], strict=True):
        ref = compared.view.query(str(domain), str(query_id))
        order = [d for d, _ in ranked(views.scored(entry, ref))]
        if order:
            out.append(case(ref.domain, ref.query_id, order, ref.qrels))
        if len(out) == limit:
            break
    return out
