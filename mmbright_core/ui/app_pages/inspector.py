"""Inspector: one query, its images, and each run's top 10 with judgments and rank diff."""

from __future__ import annotations

import streamlit as st

from mmbright_core.analysis.rankdiff import rank_diff
from mmbright_core.ui import inspect, loaders, render, state, views

TOP = 10

st.title("Query inspector")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
source = render.attempt(loaders.get_source, spec)
if source is None:
    st.stop()
order = inspect.hurt_order(spec, task, protocol)
target = inspect.sync_target(source, task, protocol, order)
if target is None:
    st.info("This source has no query for this task.")
    st.stop()

pick_domain, pick_query, back, forward = st.columns([2, 3, 1, 1], vertical_alignment="bottom")
pick_domain.selectbox("Domain", source.domains(), key=inspect.DOMAIN_KEY, on_change=inspect.on_pick)
ids = list(loaders.queries(spec, task, target.domain, protocol))
pick_query.selectbox("Query", ids, key=inspect.QUERY_KEY, on_change=inspect.on_pick)
back.button(
    "◀ Previous", key="insp_prev", on_click=inspect.step, args=(order, -1), disabled=not order
)
forward.button(
    "Next ▶", key="insp_next", on_click=inspect.step, args=(order, 1), disabled=not order
)
if order:
    st.caption(render.escape_message(inspect.order_caption(order, target)))

query = loaders.queries(spec, task, target.domain, protocol)[target.query_id]
qrels = loaders.qrels(spec, task, target.domain, protocol).get(target.query_id, {})
runs = state.task_runs()
shown = st.multiselect("Runs", list(runs), default=inspect.default_runs(runs), key="insp_runs")
excluded = {  # each run under its own policy for negative_ids
    name: loaders.excluded(spec, task, target.domain, protocol, runs[name].negatives).get(
        target.query_id, frozenset()
    )
    for name in shown
}

query_col, *run_cols = st.columns([2] + [3] * max(len(shown), 1))
with query_col:
    st.subheader(f"{render.escape_md(target.domain)} / {render.escape_md(target.query_id)}")
    st.caption(f"{len(query.images)} image(s) · {sum(v > 0 for v in qrels.values())} relevant")
    render.show_query(source, query)
rankings = {
    name: scores
    for name in shown
    if (scores := runs[name].runs.get(target.domain, {}).get(target.query_id, {}))
}
tops = {name: views.ranking(s, qrels, excluded[name], TOP) for name, s in rankings.items()}
hit_ids = {doc for top, _ in tops.values() for doc in top["doc_id"]}
documents = loaders.shown_documents(spec, task, target.domain, protocol, hit_ids)
for index, (column, name) in enumerate(zip(run_cols, shown, strict=False)):
    with column:
        st.subheader(render.escape_md(name))
        if name not in tops:
            st.info("This run does not rank this query.")
            continue
        scores = rankings[name]
        top, removed = tops[name]
        for hit in top.itertuples(index=False):
            row = top.iloc[int(hit.rank) - 1]
            render.show_hit(
                source, target.domain, row, documents.get(hit.doc_id), f"hit_{index}_{hit.rank}"
            )
        if len(removed):
            st.caption(
                f"{len(removed)} excluded document(s) the run had in its top {TOP} were removed."
            )
            st.dataframe(
                removed.assign(judgment="excluded"), hide_index=True, key=f"insp_removed_{index}"
            )
        st.markdown("**Relevant items missed in the top 10**")
        st.dataframe(
            views.missed(scores, qrels, excluded[name], TOP),
            hide_index=True,
            key=f"insp_missed_{index}",
        )

if len(shown) >= 2:
    a, b = shown[:2]
    st.subheader(f"Rank diff: {render.escape_md(a)} → {render.escape_md(b)}")
    diff = rank_diff(
        qrels,
        inspect.scored(runs[a], target, excluded[a]),
        inspect.scored(runs[b], target, excluded[b]),
        k=TOP,
    )
    tau, overlap = st.columns(2)
    tau.metric("Kendall tau (top 10 union)", render.score_text(diff.kendall_tau))
    overlap.metric("RBO (p = 0.9)", render.score_text(diff.rbo))
    st.dataframe(diff.docs, hide_index=True, key="insp_rankdiff")
    render.csv_download(
        diff.docs, f"rank_diff_{target.domain}_{target.query_id}.csv", key="insp_csv"
    )
