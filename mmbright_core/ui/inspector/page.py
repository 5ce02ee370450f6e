"""Inspector: one query, what its images added, and why each run ranked what it did."""

from __future__ import annotations

import streamlit as st

from mmbright_core.analysis.attribution import LexicalAttribution
from mmbright_core.analysis.rankdiff import rank_diff
from mmbright_core.present.figures import rank_slope
from mmbright_core.ranking import ranked
from mmbright_core.ui.common import explain_cache, loaders, render, state, views, widgets
from mmbright_core.ui.common.literal import literal, visible
from mmbright_core.ui.inspector import (
    attribution_html,
    explain_view,
    inspected,
    notes_panel,
    regions_view,
    rewrite_view,
)

TOP = 10

st.title("Query inspector")
view = render.attempt(loaders.current_view)
if view is None or not inspected.readable(view):
    st.stop()
task, source = view.task, view.source
order = inspected.hurt_order(view)
target = inspected.sync_target(view, order)
if target is None:
    st.info("This source has no query for this task.")
    st.stop()

pick_domain, pick_query = st.columns([2, 3], vertical_alignment="bottom")
pick_domain.selectbox(
    "Domain", source.domains(), key=inspected.DOMAIN_KEY, on_change=inspected.on_pick
)
ids = list(view.queries(target.domain))
pick_query.selectbox(
    "Query",
    ids,
    key=inspected.QUERY_KEY,
    on_change=inspected.on_pick,
    format_func=visible,
)
with st.container(horizontal=True, vertical_alignment="center", key="insp_nav"):
    st.button(
        "Previous",
        key="insp_prev",
        icon=":material/arrow_back:",
        on_click=inspected.step,
        args=(order, -1),
        disabled=not order,
        width="content",
    )
    st.button(
        "Next",
        key="insp_next",
        icon=":material/arrow_forward:",
        on_click=inspected.step,
        args=(order, 1),
        disabled=not order,
        width="content",
    )
    if order:
        st.caption(literal(inspected.order_caption(order, target)))

query, qrels = target.query, target.qrels
runs = state.task_runs()
runs_key = widgets.sticky_runs(state.INSPECT_RUNS_KEY, list(runs), inspected.default_runs(runs))
shown = st.multiselect(
    "Runs",
    list(runs),
    key=runs_key,
    on_change=widgets.remember_runs,
    args=(runs_key,),
    format_func=visible,
)
excluded = {name: target.excluded(runs[name].negatives) for name in shown}  # each its policy
rankings = {
    name: scores
    for name in shown
    if (scores := runs[name].runs.get(target.domain, {}).get(target.query_id, {}))
}
tops = {name: views.ranking(s, qrels, excluded[name], TOP) for name, s in rankings.items()}
pending = {
    plugin: name for name in rankings if (plugin := explain_cache.pending_import(runs[name]))
}
for number, (plugin, name) in enumerate(pending.items()):
    explain_cache.ask_import(plugin, name, key=f"insp_allow_{number}")
found = {
    name: render.attempt(explain_cache.explanations, target, runs[name], list(top["doc_id"])) or {}
    for name, (top, _) in tops.items()
}
words = inspected.image_words(target, {n: runs[n] for n in rankings})
wanted = {doc for top, _ in tops.values() for doc in top["doc_id"]} | set(qrels)
documents = view.shown_documents(target.domain, wanted)
items = explain_view.Items(source, target.domain, documents)
origins = inspected.origins(task, {name: runs[name] for name in shown})  # those words can have

st.subheader(f"{literal(target.domain)} / {literal(target.query_id)}")
st.caption(f"{len(query.images)} image(s) · {sum(v > 0 for v in qrels.values())} relevant")
query_col, notes_col = st.columns([3, 2])
with query_col:
    explain_view.show_query_text(query, words)
    rewrite_view.show_rewrites(
        rewrite_view.rewrites_of({n: runs[n] for n in shown}, target.domain, target.query_id)
    )
    explain_view.show_query_images(source, query, words, key="insp_qimg")
    for name, fusion in inspected.fusions(found).items():
        explain_view.show_fusion(name, fusion, key=f"insp_fusion_{shown.index(name)}")
with notes_col:
    notes_panel.show_notes(target)
with st.expander(f"Relevant items ({sum(v > 0 for v in qrels.values())})", expanded=not tops):
    explain_view.show_relevant(items, qrels, key="insp_rel")
if any(isinstance(f, LexicalAttribution) for a in found.values() for f in a.values()):
    st.html(attribution_html.legend_html(origins))

aligned_runs = inspected.aligned_pair(list(tops), runs)
if aligned_runs is not None:
    a, b = aligned_runs
    diff = rank_diff(
        qrels,
        views.scored(runs[a], target),
        views.scored(runs[b], target),
        k=TOP,
    )
    explain_view.show_displacing(items, b, tops[b][0], diff.docs, found[b], key="insp_push")

if tops:
    regions_view.show_regions(
        target,
        {name: runs[name] for name in tops},
        {name: [doc for doc, _ in ranked(views.scored(runs[name], target))] for name in tops},
    )

run_cols = st.columns(max(len(shown), 1))
for index, (column, name) in enumerate(zip(run_cols, shown, strict=False)):
    with column:
        st.subheader(literal(name))
        if name not in tops:
            st.info("This run does not rank this query.")
            continue
        explain_view.show_hits(items, task, tops[name][0], found[name], key=f"hit_{index}")

if not tops:
    st.stop()
# Only the open tab is computed and drawn: the others cost nothing until they are opened.
missed_tab, attribution_tab, aligned_tab = st.tabs(
    state.INSPECT_SECTIONS, key=state.INSPECT_SECTION_KEY, on_change="rerun"
)
if missed_tab.open:
    with missed_tab:
        for index, (column, name) in enumerate(zip(st.columns(len(tops)), tops, strict=True)):
            removed = tops[name][1]
            with column:
                st.markdown(f"**{literal(name)}**: relevant items missed in the top {TOP}")
                st.dataframe(
                    views.readable(views.missed(rankings[name], qrels, excluded[name], TOP)),
                    hide_index=True,
                    key=f"insp_missed_{index}",
                )
                if len(removed):
                    st.caption(
                        f"{len(removed)} excluded document(s) the run had in its top {TOP} "
                        "were removed."
                    )
                    st.dataframe(
                        views.readable(removed.assign(judgment="excluded")),
                        hide_index=True,
                        key=f"insp_removed_{index}",
                    )
if attribution_tab.open:
    attribution_tab.dataframe(
        inspected.attribution_table(tops, found, origins),
        hide_index=True,
        key="insp_attribution",
    )
if aligned_tab.open:
    with aligned_tab:
        if aligned_runs is None:
            st.info("Aligning needs two runs that rank this query: choose them under Runs.")
        else:
            st.markdown(f"**{literal(a)}** → **{literal(b)}**")
            tau, overlap = st.columns(2)
            tau.metric("Kendall tau (top 10 union)", render.score_text(diff.kendall_tau))
            overlap.metric("RBO (p = 0.9)", render.score_text(diff.rbo))
            st.dataframe(inspected.aligned(diff.docs), hide_index=True, key="insp_rankdiff")
            if (diff.docs["relevance"] > 0).any():
                st.plotly_chart(rank_slope(diff.docs, a, b, TOP), key="insp_slope")
            render.csv_download(
                views.named_columns(diff.docs.drop(columns="change"), a, b),
                f"rank_diff_{target.domain}_{target.query_id}.csv",
                key="insp_csv",
            )
