"""Home: the runs of the chosen task, their headline numbers and the leaderboard."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from mmbright_core.analysis import figures
from mmbright_core.analysis.leaderboard import leaderboard, load_reference, reproduction
from mmbright_core.ui import loaders, render, runs_panel, state
from mmbright_core.ui.sidebar import TASK_LABELS, selected_runs

st.title("MM-BRIGHT failure analysis")
spec = state.source_spec()
task = state.current_task()
protocol = state.current_protocol()
if spec == state.DEFAULT_SOURCE:
    st.info(render.SYNTHETIC_NOTE, icon=":material/science:")
st.caption(f"Source: {render.escape_md(spec)} · {TASK_LABELS[task]} · protocol {protocol}")

with st.expander("Add or remove runs", expanded=not state.task_runs()):
    runs_panel.render_panel()

chosen = {name: state.task_runs()[name] for name in selected_runs()}
st.subheader("Headline numbers")
table = render.attempt(loaders.table_for, spec, task, protocol, chosen) if chosen else None
board = leaderboard(table, loaders.MEASURE) if table is not None else None
if table is None or board is None:
    st.info("Choose runs in the sidebar (or add some above) to see their scores.")
else:
    for row in loaders.headlines(table, board).itertuples(index=False):
        line = chosen[row.run].provenance
        st.markdown(f"**{render.escape_md(row.run)}** · {render.escape_md(line)}")
        macro, coverage, dropped, missing = st.columns(4)
        macro.metric(
            "nDCG@10 ×100 (macro)", f"{row.macro:.1f}", help=f"mean over {row.domains} domain(s)"
        )
        coverage.metric(
            "Coverage", f"{100 * row.coverage:.1f}%", help="judged queries the run ranks"
        )
        dropped.metric(
            "Dropped queries",
            int(row.dropped),
            help="queries with no judgment at all, left out of scoring as trec_eval leaves them",
        )
        missing.metric("Missing from run", int(row.missing), help="judged but not ranked")

st.subheader("Leaderboard")
boards = {task: board} if board is not None and len(board) else {}
# Other tasks' runs are scored only on request: scoring is the slow part of a first visit,
# and the page is about the chosen task.
others = sorted({task_of for task_of, _ in state.all_runs()} - {task})
others = [t for t in others if state.task_runs(t)]
if others and st.toggle(
    "Add the other tasks' runs",
    key="home_other_tasks",
    help="Score the runs loaded for " + ", ".join(f"task {t}" for t in others),
):
    for each_task in others:
        other = render.attempt(
            loaders.board_for, spec, each_task, protocol, state.task_runs(each_task)
        )
        if other is not None and len(other):
            boards[each_task] = other
if boards:
    board = pd.concat([boards[t] for t in sorted(boards)])
    left, right = st.columns([3, 1])
    with left:
        st.plotly_chart(figures.leaderboard_heatmap(board), key="leaderboard_heatmap")
        render.csv_download(board.reset_index(), "leaderboard.csv", key="leaderboard_csv")
    with right:
        st.markdown("**Published (nDCG@10 ×100, Avg. over 29 domains)**")
        reference = pd.DataFrame(
            [(r.task, r.model, r.value, r.source) for r in load_reference() if r.task == task],
            columns=["task", "model", "reported", "source"],
        )
        st.dataframe(reference, hide_index=True, key="reference_table", on_select="ignore")
        matched = reproduction(board)
        if len(matched):
            st.markdown("**Runs matching a published model**")
            st.dataframe(
                matched.drop(columns="citation"), hide_index=True, key="reproduction_table"
            )
    if spec == state.DEFAULT_SOURCE:
        st.caption("Demo averages cover the demo's few synthetic domains, not the 29 of the paper.")
else:
    st.info("No scored run to put on the leaderboard yet.")
