"""Compare: two runs on the same task, query by query, with paired statistics."""

from __future__ import annotations

import functools

import streamlit as st

from mmbright_core.analysis.compare import POOLED, most_hurt
from mmbright_core.analysis.slices import SLICES, tagged, with_tags
from mmbright_core.present import comparison_figures
from mmbright_core.present.report_tables import format_value, shown_table, summary_tables
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.ui.common import (
    failure_tags,
    loaders,
    opening,
    queries,
    render,
    state,
    views,
    widgets,
)
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.compare import reports, slices, weight_view
from mmbright_core.ui.compare.two_stage_view import show_two_stage

GAP = "judgment_gap"
HURT_COLUMNS = ["domain", "query_id", "query", "delta", "judged_a", "judged_b", GAP, "tags"]
"""The most-hurt table's columns: enough to recognise the query; the CSV has them all."""
HURT_ROWS = 20


def _p(text: str) -> str:
    """A p-value as written in the tables, after its name: "= 0.0123" or "< 1e-4"."""
    return text if text.startswith("<") else f"= {text}"


st.title("Compare two runs")
names = list(state.task_runs())
if len(names) < 2:
    st.info("Comparing needs two runs of this task: add them on the Home page.")
    st.stop()

left, right = st.columns(2)
# One pair of runs for every page (widgets.run_pair): chosen here or on Per query.
first_a, first_b = widgets.run_pair(names)
run_a = widgets.pick_run(
    left, "Baseline A (e.g. text only)", names, "cmp_a", state.RUN_A_KEY, first_a
)
run_b = widgets.pick_run(
    right, "Compared B (e.g. with images)", names, "cmp_b", state.RUN_B_KEY, first_b
)
if run_a == run_b:
    st.warning("Choose two different runs.")
    st.stop()
entries = state.task_runs()
view = render.attempt(loaders.current_view)
comparison = render.attempt(loaders.comparison_for, view, entries, run_a, run_b) if view else None
if view is None or comparison is None:
    st.stop()
task = view.task
compared = state.Compared(view, entries, run_a, run_b)

pooled = comparison.summary.loc[comparison.summary["scope"] == POOLED].iloc[0]
wins, ties, losses, delta = st.columns(4)
wins.metric("B wins", int(pooled["wins"]))
ties.metric("Ties", int(pooled["ties"]))
losses.metric("B loses", int(pooled["losses"]))
delta.metric(
    "Mean B − A",
    format_value("delta", pooled["delta"]),
    help=literal(
        f"95% CI [{format_value('ci_low', pooled['ci_low'])}, "
        f"{format_value('ci_high', pooled['ci_high'])}], "
        f"permutation p {_p(format_value('p_perm', pooled['p_perm']))}, "
        f"{int(pooled['queries'])} paired queries"
    ),
)
if comparison.unpaired:
    st.caption(f"{comparison.unpaired:,} queries scored in one run only are left out.")
# A reranked run (A or B) beside its first stage and the oracle of the same depth.
show_two_stage(compared)

# Only the open tab is computed and drawn: the others cost nothing until they are opened
# (the scatter alone, one point per query, takes the browser a noticeable part of a second).
domain_tab, pair_tab, hurt_tab, slice_tab, export_tab = st.tabs(
    state.COMPARE_SECTIONS, key=state.COMPARE_SECTION_KEY, on_change="rerun"
)
if domain_tab.open:
    with domain_tab:
        st.caption(
            "Per domain and pooled; the Holm columns correct the p-values over the domains "
            "(the pooled test is raw)."
        )
        st.plotly_chart(comparison_figures.domain_deltas(comparison), key="cmp_domains")
        for part in summary_tables(comparison.summary):
            st.table(shown_table(part, (run_a, run_b)), hide_index=True)
        render.csv_download(
            views.named_columns(comparison.summary, run_a, run_b, comparison.measure),
            f"compare_{run_a}_vs_{run_b}.csv",
            key="cmp_summary_csv",
        )

if pair_tab.open:
    # A clicked point leaves the page: open it before the figures are built and sent again.
    opening.open_query(
        comparison.per_query, opening.point_positions(st.session_state.get("cmp_scatter"))
    )
    with pair_tab:
        st.caption(
            "Click a point to open that query in the inspector (or a row of the table under "
            "'Where B loses most')."
        )
        scatter, histogram = st.columns(2)
        scatter.plotly_chart(
            comparison_figures.pair_scatter(comparison),
            key="cmp_scatter",
            on_select="rerun",
            selection_mode="points",
        )
        histogram.plotly_chart(comparison_figures.delta_histogram(comparison), key="cmp_delta_hist")

if hurt_tab.open:
    with hurt_tab:
        st.subheader(f"Where {literal(run_b)} (B) loses most against {literal(run_a)} (A)")
        tags = render.attempt(failure_tags.query_tags, view) or {}
        tag_col, gap_col = st.columns(2)
        # The tab's widgets keep their values while another tab is open (widgets.sticky).
        chosen = failure_tags.tag_choice(tag_col, widgets.sticky("cmp_tags", []))
        gaps = gap_col.radio(
            "Possible judgment gaps",
            slices.GAP_FILTERS,
            **widgets.sticky("cmp_gaps", slices.GAP_FILTERS[0]),
            horizontal=True,
            help="A loss where B ranks more unjudged documents (absent from the qrels) above its "
            "first relevant one than A does: they may be relevant, nobody judged them.",
        )
        losing = most_hurt(comparison, top=len(comparison.per_query))
        losing = losing.loc[tagged(losing, tags, chosen)].reset_index(drop=True)
        if gaps != slices.GAP_FILTERS[0]:
            flags = slices.gap_flags(compared, losing)
            keep = [flag == (gaps == slices.GAP_FILTERS[2]) for flag in flags]
            losing = losing.assign(**{GAP: flags}).loc[keep]
        hurt = losing.head(HURT_ROWS).reset_index(drop=True)
        if GAP not in hurt.columns:
            hurt[GAP] = slices.gap_flags(compared, hurt)
        hurt = with_tags(hurt, tags)
        texts = render.attempt(queries.query_texts, view, hurt["domain"].unique())
        shown = views.with_text(hurt, texts or {})
        # The tags column only when some listed query has a tag: at 1000 px every column must fit.
        has_tags = "tags" in shown.columns and shown["tags"].astype(bool).any()
        shown = shown[[c for c in HURT_COLUMNS if c in shown.columns and (c != "tags" or has_tags)]]
        # Its 75 px come from the text columns.
        width = dict(domain=60, query_id=80, query=50) if has_tags else {}
        width = {**dict(domain=70, query_id=95, query=115), **width}
        rows = st.dataframe(
            shown,
            hide_index=True,
            key="cmp_hurt",
            on_select="rerun",
            selection_mode="single-row",
            column_config={
                "domain": st.column_config.TextColumn("domain", width=width["domain"]),
                "query_id": st.column_config.TextColumn("query id", width=width["query_id"]),
                "query": st.column_config.TextColumn("query", width=width["query"]),
                "a": st.column_config.NumberColumn("A", format="%.3f", width="small"),
                "b": st.column_config.NumberColumn("B", format="%.3f", width="small"),
                "delta": st.column_config.NumberColumn("B − A", format="%+.3f", width=60),
                "n_images": st.column_config.NumberColumn("images", width="small"),
                "judged_a": st.column_config.NumberColumn(
                    "J@10 A", format="%.1f", width=55, help="Judged@10 of run A"
                ),
                "judged_b": st.column_config.NumberColumn(
                    "J@10 B", format="%.1f", width=55, help="Judged@10 of run B"
                ),
                GAP: st.column_config.CheckboxColumn(
                    "gap?", width=45, help="possibly a gap in the judgments, not a failure"
                ),
                "tags": st.column_config.TextColumn("tags", width=75),
            },
        )
        st.caption(f"{len(hurt)} of {len(losing)} losing queries listed (the worst first).")
        opening.open_query(hurt, rows.selection.rows if rows is not None else [])
        render.csv_download(
            views.named_columns(hurt, run_a, run_b, comparison.measure),
            f"most_hurt_{run_a}_vs_{run_b}.csv",
            key="cmp_hurt_csv",
        )
        if len(hurt) and st.button("Inspect the most hurt query", key="cmp_inspect"):
            opening.open_query(hurt, [0])

if slice_tab.open:
    with slice_tab:
        by = st.selectbox(
            "Slice by",
            SLICES,
            **widgets.sticky("cmp_slice", "images"),
            help="OCR words are those the compared OCR run recorded, else those the ocr-* "
            "retrievers cached ('not read' when neither has them); "
            "size and aspect come from the first image's file header.",
        )
        tags = render.attempt(failure_tags.query_tags, view) or {}
        sliced = render.attempt(slices.slice_table, view, comparison, by, tags)
        if sliced is not None:
            st.plotly_chart(
                comparison_figures.slice_deltas(sliced, comparison, by), key="cmp_images"
            )
            st.table(shown_table(sliced, (run_a, run_b)), hide_index=True)
        if not TASK_TABLE[task].text_only:
            weight_view.show_weights(compared, comparison)

if export_tab.open:
    with export_tab:
        st.download_button(
            "Download the comparison report (HTML)",
            functools.partial(reports.comparison_html, view, entries, comparison),
            file_name=f"compare_task{task}_{run_a}_vs_{run_b}.html",
            mime="text/html",
            key="cmp_report",
            icon=":material/download:",
            on_click="ignore",  # a download changes nothing on the page: no rerun
        )
