"""Compare: two runs on the same task, query by query, with paired statistics."""

from __future__ import annotations

import functools

import streamlit as st

from mmbright_core.analysis import figures
from mmbright_core.analysis.compare import POOLED, image_effect, most_hurt
from mmbright_core.ui import inspect, loaders, navigation, render, reports, state

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

scatter, histogram = st.columns(2)
scatter.plotly_chart(figures.pair_scatter(comparison), key="cmp_scatter")
histogram.plotly_chart(figures.delta_histogram(comparison), key="cmp_delta_hist")

st.subheader("By domain (Holm-corrected over domains)")
st.plotly_chart(figures.domain_deltas(comparison), key="cmp_domains")
st.dataframe(comparison.summary, hide_index=True, key="cmp_summary")
render.csv_download(comparison.summary, f"compare_{run_a}_vs_{run_b}.csv", key="cmp_summary_csv")

st.subheader("Where images hurt most")
hurt = most_hurt(comparison, top=20)
st.dataframe(hurt, hide_index=True, key="cmp_hurt")
render.csv_download(hurt, f"most_hurt_{run_a}_vs_{run_b}.csv", key="cmp_hurt_csv")
if len(hurt) and st.button("Inspect the most hurt query", key="cmp_inspect"):
    state.set_inspect_target(str(hurt.iloc[0]["domain"]), str(hurt.iloc[0]["query_id"]))
    st.switch_page(navigation.page_file("inspector"))

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
