"""Per query: a run's nDCG@10 per query (and B − A against a second run), filterable."""

from __future__ import annotations

import streamlit as st

from mmbright_core.analysis import figures
from mmbright_core.analysis.compare import JUDGED, tagged, with_tags
from mmbright_core.ui import inspect, loaders, navigation, queries, render, slices, state, views
from mmbright_core.ui.sidebar import selected_runs

NO_PAIR = "(none)"
CHOICES_KEY = "pq_choices"

# "Open in inspector" leaves the page: go before the table is scored and sent again.
inspect.open_clicked("pq_open", "pq_query", CHOICES_KEY)
st.title("Per-query scores")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
names = selected_runs()
if not names:
    st.info("Choose runs in the sidebar (or add some on the Home page).")
    st.stop()
pick_a, pick_b = st.columns(2)
run = pick_a.selectbox("Run (A)", names, key="pq_run")
others = [NO_PAIR, *(n for n in names if n != run)]
run_b = pick_b.selectbox(
    "Compared with (B)", others, key="pq_run_b", help="Adds B's score and B − A per query"
)
paired = run_b != NO_PAIR
entries = state.task_runs()
# Only the runs shown are scored (each run's scores are cached on their own).
table = render.attempt(loaders.table_for, spec, task, protocol, {run: entries[run]})
if table is None:
    st.stop()
rows = views.run_rows(table, run, loaders.MEASURE)
if paired:
    deltas = render.attempt(loaders.deltas_for, spec, task, protocol, entries, run, run_b)
    if deltas is None:
        st.stop()
    rows = views.with_pair(rows, deltas, loaders.MEASURE)
texts = render.attempt(queries.query_texts, spec, task, protocol, rows["domain"].unique())
rows = views.with_text(rows, texts or {})
tags = render.attempt(slices.query_tags, spec, task, protocol) or {}
rows = with_tags(rows, tags)

domain_col, image_col, score_col = st.columns(3)
domains = domain_col.multiselect("Domains", sorted(rows["domain"].unique()), key="pq_domains")
most_images = max(int(rows["n_images"].max()) if len(rows) else 0, 1)
images = image_col.slider("Query images", 0, most_images, (0, most_images), key="pq_images")
scores = score_col.slider("nDCG@10 of A", 0.0, 1.0, (0.0, 1.0), step=0.05, key="pq_scores")
tag_col, loses_col = st.columns([2, 1], vertical_alignment="bottom")
chosen = tag_col.multiselect(
    "Failure tags (a query with any of them)", slices.tag_names(), key="pq_tags"
)
loses = loses_col.toggle("Only where B loses (B − A < 0)", key="pq_loses", disabled=not paired)
shown = views.filter_rows(rows, loaders.MEASURE, domains=domains, images=images, scores=scores)
shown = shown.loc[tagged(shown, tags, chosen)].reset_index(drop=True)
if paired:
    shown = shown.loc[shown["delta"].notna()].reset_index(drop=True)
    if loses:
        shown = shown.loc[shown["delta"] < 0].reset_index(drop=True)

labels = [f"{d} / {q}" for d, q in zip(shown["domain"], shown["query_id"], strict=True)]
inspect.remember_choices(CHOICES_KEY, labels, shown)
st.caption(
    f"{len(shown)} of {len(rows)} queries shown (queries without a score are left out"
    + (", and those B does not score)." if paired else ").")
    + " Pick a row to open it in the inspector."
)
# One tab shown at a time: the browser draws the chart only when its tab is opened.
table_tab, chart_tab = st.tabs(["Table", "Distribution"])
with chart_tab:
    if paired:
        figure = figures.delta_distribution(shown["delta"], loaders.MEASURE, labels)
    else:
        figure = figures.score_histogram(shown[loaders.MEASURE], run, loaders.MEASURE, labels)
    st.plotly_chart(figure, key="pq_hist")
with table_tab:
    number = st.column_config.NumberColumn(format="%.4f", width="small")
    picked = st.dataframe(
        shown,
        hide_index=True,
        key="pq_table",
        on_select="rerun",
        selection_mode="single-row",
        column_config={
            "query": st.column_config.TextColumn("query", width="large"),
            loaders.MEASURE: number,
            f"{loaders.MEASURE} (B)": number,
            "delta": st.column_config.NumberColumn("B − A", format="%+.4f", width="small"),
            JUDGED: st.column_config.NumberColumn(format="%.1f", width="small"),
            f"{JUDGED} (B)": st.column_config.NumberColumn(format="%.1f", width="small"),
            "tags": st.column_config.TextColumn("tags", width="medium"),
        },
    )
    render.csv_download(shown, f"per_query_{run}.csv", key="pq_csv")

selected_rows = picked.selection.rows if picked is not None else []
if selected_rows:
    st.session_state["pq_query"] = labels[selected_rows[0]]
left, right = st.columns([3, 1], vertical_alignment="bottom")
choice = left.selectbox("Query to inspect", labels, key="pq_query") if labels else None
if right.button("Open in inspector", key="pq_open", disabled=choice is None) and choice:
    domain, query_id = shown.iloc[labels.index(choice)][["domain", "query_id"]]
    state.set_inspect_target(str(domain), str(query_id))
    st.switch_page(navigation.page_file("inspector"))
