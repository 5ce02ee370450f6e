"""Compare: two runs on the same task, query by query, with paired statistics."""

from __future__ import annotations

import functools

import streamlit as st

from mmbright_core.analysis import figures
from mmbright_core.analysis.compare import POOLED, image_effect, most_hurt
from mmbright_core.ui import inspect, loaders, queries, render, reports, state, views

HURT_COLUMNS = ["domain", "query_id", "query", "delta"]
"""The most-hurt table's columns: enough to recognise the query; the CSV has them all."""

st.title("Compare two runs")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
names = list(state.task_runs())
if len(names) < 2:
    st.info("Comparing needs two runs of this task: add them on the Home page.")
    st.stop()

left, right = st.columns(2)
run_a = left.selectbox("Baseline A (e.g. text only)", names, index=0, key="cmp_a")
run_b = right.selectbox("Compared B (e.g. with images)", names, index=1, key="cmp_b")
if run_a == run_b:
    st.warning("Choose two different runs.")
    st.stop()
st.session_state[inspect.PAIR_KEY] = (run_a, run_b)
entries = state.task_runs()
comparison = render.attempt(loaders.comparison_for, spec, task, protocol, entries, run_a, run_b)
if comparison is None:
    st.stop()

pooled = comparison.summary.loc[comparison.summary["scope"] == POOLED].iloc[0]
wins, ties, losses, delta = st.columns(4)
wins.metric("B wins", int(pooled["wins"]))
ties.metric("Ties", int(pooled["ties"]))
losses.metric("B loses", int(pooled["losses"]))
delta.metric(
    "Mean delta (B − A)",
    f"{pooled['delta']:+.4f}",
    help=f"95% CI [{pooled['ci_low']:+.4f}, {pooled['ci_high']:+.4f}], "
    f"permutation p = {pooled['p_perm']:.3g}, {int(pooled['queries'])} paired queries",
)
if comparison.unpaired:
    st.caption(f"{comparison.unpaired} queries scored in one run only are left out.")

st.caption("Click a point of the scatter or a row of the table below to open that query.")
scatter, histogram = st.columns(2)
clicked = scatter.plotly_chart(
    figures.pair_scatter(comparison),
    key="cmp_scatter",
    on_select="rerun",
    selection_mode="points",
)
histogram.plotly_chart(figures.delta_histogram(comparison), key="cmp_delta_hist")
inspect.open_query(comparison.per_query, inspect.point_positions(clicked))

st.subheader("By domain (Holm-corrected over domains)")
st.plotly_chart(figures.domain_deltas(comparison), key="cmp_domains")
st.dataframe(comparison.summary, hide_index=True, key="cmp_summary")
render.csv_download(comparison.summary, f"compare_{run_a}_vs_{run_b}.csv", key="cmp_summary_csv")

st.subheader(
    f"Where {render.escape_md(run_b)} (B) loses most against {render.escape_md(run_a)} (A)"
)
hurt = most_hurt(comparison, top=20)
texts = render.attempt(queries.query_texts, spec, task, protocol, hurt["domain"].unique())
shown = views.with_text(hurt, texts or {})[HURT_COLUMNS]
rows = st.dataframe(
    shown,
    hide_index=True,
    key="cmp_hurt",
    on_select="rerun",
    selection_mode="single-row",
    column_config={
        "domain": st.column_config.TextColumn("domain", width="small"),
        "query_id": st.column_config.TextColumn("query id", width="small"),
        "query": st.column_config.TextColumn("query", width="medium"),
        "a": st.column_config.NumberColumn("A", format="%.3f", width="small"),
        "b": st.column_config.NumberColumn("B", format="%.3f", width="small"),
        "delta": st.column_config.NumberColumn("B − A", format="%+.3f", width="small"),
        "n_images": st.column_config.NumberColumn("images", width="small"),
    },
)
inspect.open_query(hurt, rows.selection.rows if rows is not None else [])
render.csv_download(hurt, f"most_hurt_{run_a}_vs_{run_b}.csv", key="cmp_hurt_csv")
if len(hurt) and st.button("Inspect the most hurt query", key="cmp_inspect"):
    inspect.open_query(hurt, [0])

st.subheader("By number of query images")
by_images = image_effect(comparison)["query images"]
st.plotly_chart(figures.breakdown_bars(by_images, comparison, "query images"), key="cmp_images")
st.dataframe(by_images, hide_index=True, key="cmp_images_table")

st.subheader("Export")
source = render.attempt(loaders.get_source, spec)
if source is not None:
    st.download_button(
        "Download the comparison report (HTML)",
        functools.partial(reports.comparison_html, source, task, protocol, entries, comparison),
        file_name=f"compare_{run_a}_vs_{run_b}.html",
        mime="text/html",
        key="cmp_report",
        icon=":material/download:",
    )
