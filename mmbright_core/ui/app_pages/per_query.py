"""Per query: one run's distribution of nDCG@10, a filterable table, and click-through."""

from __future__ import annotations

import streamlit as st

from mmbright_core.analysis import figures
from mmbright_core.ui import loaders, navigation, render, state, views
from mmbright_core.ui.sidebar import selected_runs

st.title("Per-query scores")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
names = selected_runs()
if not names:
    st.info("Choose runs in the sidebar (or add some on the Home page).")
    st.stop()
run = st.selectbox("Run", names, key="pq_run")
# Only the run shown is scored (each run's scores are cached on their own).
table = render.attempt(loaders.table_for, spec, task, protocol, {run: state.task_runs()[run]})
if table is None:
    st.stop()
rows = views.run_rows(table, run, loaders.MEASURE)
domain_col, image_col, score_col = st.columns(3)
domains = domain_col.multiselect("Domains", sorted(rows["domain"].unique()), key="pq_domains")
most_images = max(int(rows["n_images"].max()) if len(rows) else 0, 1)
images = image_col.slider("Query images", 0, most_images, (0, most_images), key="pq_images")
scores = score_col.slider("nDCG@10 range", 0.0, 1.0, (0.0, 1.0), step=0.05, key="pq_scores")
shown = views.filter_rows(rows, loaders.MEASURE, domains=domains, images=images, scores=scores)

st.plotly_chart(
    figures.score_histogram(shown[loaders.MEASURE], run, loaders.MEASURE), key="pq_hist"
)
st.caption(f"{len(shown)} of {len(rows)} queries shown (queries without a score are left out).")
picked = st.dataframe(
    shown,
    hide_index=True,
    key="pq_table",
    on_select="rerun",
    selection_mode="single-row",
    column_config={loaders.MEASURE: st.column_config.NumberColumn(format="%.4f")},
)
render.csv_download(shown, f"per_query_{run}.csv", key="pq_csv")

labels = [f"{d} / {q}" for d, q in zip(shown["domain"], shown["query_id"], strict=True)]
selected_rows = picked.selection.rows if picked is not None else []
if selected_rows:
    st.session_state["pq_query"] = labels[selected_rows[0]]
left, right = st.columns([3, 1], vertical_alignment="bottom")
choice = left.selectbox("Query to inspect", labels, key="pq_query") if labels else None
if right.button("Open in inspector", key="pq_open", disabled=choice is None) and choice:
    domain, query_id = shown.iloc[labels.index(choice)][["domain", "query_id"]]
    state.set_inspect_target(str(domain), str(query_id))
    st.switch_page(navigation.page_file("inspector"))
