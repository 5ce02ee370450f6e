"""Home: the runs of the chosen task, their headline numbers and the leaderboard."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import streamlit as st

from mmbright_core.analysis.leaderboard import published_table, reproduction
from mmbright_core.errors import cut
from mmbright_core.present import figures
from mmbright_core.ui.common import loaders, presets, queries, render, runs_panel, state
from mmbright_core.ui.common.confine import SHOWN_CHARACTERS
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.sidebar import TASK_LABELS, selected_runs
from mmbright_core.ui.home.headlines import (
    HEADLINE,
    headline_table,
    headlines,
    rank_board,
    task_domain_count,
)

st.title("MM-BRIGHT failure analysis")
spec = state.source_spec()
task = state.current_task()
protocol = state.current_protocol()
if spec == state.DEFAULT_SOURCE:
    st.info(render.SYNTHETIC_NOTE, icon=":material/science:")
shown_spec = cut(spec, SHOWN_CHARACTERS)  # a folder typed too long is refused, not shown whole
st.caption(f"Source: {literal(shown_spec)} · {TASK_LABELS[task]} · protocol {literal(protocol)}")
# A dataset folder that is missing, unreadable, outside the server's root or not in the
# published layout says why here, where the user looks first: the runs panel below would
# only say that the task has no run yet.
view = render.attempt(loaders.current_view)

# Open while the task has no run, and once used, to show what a load added or refused.
with st.expander("Add or remove runs", expanded=not state.task_runs() or runs_panel.used()):
    runs_panel.render_panel()

chosen = {name: state.task_runs()[name] for name in selected_runs()}
st.subheader("Headline numbers")
table = render.attempt(loaders.table_for, view, chosen) if view and chosen else None
board = loaders.board_for(view, chosen) if view and table is not None else None
counts = render.attempt(queries.task_counts, view) if view and board is not None else None
if table is None or board is None or counts is None:
    st.info("Choose runs in the sidebar (or add some above) to see their scores.")
else:
    # One table, not a row of metric cards per run: every element is a message to the browser.
    # Its widths add up to what a 1000 px window leaves beside the sidebar.
    counted = headlines(table, board, counts)
    lines = headline_table(counted, {name: e.negatives for name, e in chosen.items()})
    st.dataframe(
        lines,
        hide_index=True,
        key="headline_table",
        column_config={
            "run": st.column_config.TextColumn("run", width=110),
            HEADLINE: st.column_config.NumberColumn(
                HEADLINE,
                format="%.1f",
                width=95,
                help="Macro average: the mean over the domains the run is scored on",
            ),
            "domains": st.column_config.TextColumn(
                "domains", width=100, help="domains the run is scored on, of the task's"
            ),
            "coverage": st.column_config.NumberColumn(
                "coverage",
                format="%.1f%%",
                width=75,
                help="the share of the task's judged queries the run ranks",
            ),
            "missing": st.column_config.NumberColumn(
                "missing", width=65, help="judged queries the run does not rank"
            ),
            "negatives": st.column_config.TextColumn(
                "negatives",
                width=75,
                help="exclude: the official rule drops a query's negative_ids; keep: scored",
            ),
        },
    )
    unjudged = int(counted["dropped"].iloc[0]) if len(counted) else 0
    st.caption(
        f"{unjudged:,} of the task's queries have no judgment at all: they are left out of "
        "scoring, as trec_eval leaves them. Where each run came from is listed in the runs panel "
        "above."
        + (
            " A partial run's average spans only the domains it covers: it is not comparable "
            "with runs over every domain."
            if counted["partial"].any()
            else ""
        )
    )

if len(chosen) == 1:
    st.info(
        "Next: add a second run (above, or from the Run a retriever page) to compare the "
        "two: Per query, Compare and the Inspector each set one run against another.",
        icon=":material/arrow_forward:",
    )
elif len(chosen) > 1:
    st.info(
        "Next, in the sidebar's pages: **Per query** lists the queries one run wins or "
        "loses against the other; **Compare** tests the difference, overall and by slice; "
        "the **Inspector** opens one query with its images and both runs' documents.",
        icon=":material/arrow_forward:",
    )

st.subheader("Leaderboard")
boards = {task: board} if board is not None and len(board) else {}
# Other tasks' runs are scored only on request: scoring is the slow part of a first visit,
# and the page is about the chosen task.
others = sorted({task_of for task_of, _ in state.all_runs()} - {task})
others = [t for t in others if state.task_runs(t)]
if (
    view
    and others
    and st.toggle(
        "Add the other tasks' runs",
        key="home_other_tasks",
        help="Score the runs loaded for " + ", ".join(f"task {t}" for t in others),
    )
):
    for each_task in others:
        other = render.attempt(
            loaders.board_for, replace(view, task=each_task), state.task_runs(each_task)
        )
        if other is not None and len(other):
            boards[each_task] = other
totals: dict[int, int] = {
    each: task_domain_count(found)
    for each in boards
    if view and (found := render.attempt(queries.task_counts, replace(view, task=each)))
}
# One tab shown at a time: the browser draws only the open tab's charts and tables.
board_tab, published_tab = st.tabs(["Your runs", f"Published: {TASK_LABELS[task]}"])
with board_tab:
    if boards:
        board = rank_board(pd.concat([boards[t] for t in sorted(boards)]), totals)
        st.plotly_chart(figures.leaderboard_heatmap(board, totals), key="leaderboard_heatmap")
        st.caption(
            "Colours span 0-100. Per task, runs over every domain come first, by Avg.; a partial "
            "run (fewer domains) follows, its Avg. marked with the domains it covers. "
            "— marks a domain the run was not scored on."
        )
        render.csv_download(board.reset_index(), "leaderboard.csv", key="leaderboard_csv")
        if spec == state.DEFAULT_SOURCE:
            st.caption(
                "Demo averages cover the demo's few synthetic domains, not the 29 of the paper."
            )
    else:
        st.info("No scored run to put on the leaderboard yet.")

with published_tab:
    st.caption("nDCG@10 ×100, average over the paper's 29 domains")
    reference = published_table(
        task, boards.get(task), presets.reproducing(chosen, task) if boards else {}
    )
    if reference["run"].isna().all():  # no loaded run reproduces a preset: the paper's alone
        reference = reference[["model", "reported", "source"]]
    st.dataframe(
        reference,
        hide_index=True,
        key="reference_table",
        on_select="ignore",
        column_config={
            "model": st.column_config.TextColumn("model", width="medium"),
            "reported": st.column_config.NumberColumn("reported", format="%.1f", width="small"),
            "source": st.column_config.TextColumn("source", width="small"),
            "run": st.column_config.TextColumn(
                "run",
                width="small",
                help="a loaded run made from this model's preset (mmbright models)",
            ),
            "ours": st.column_config.NumberColumn("ours", format="%.1f", width="small"),
            "difference": st.column_config.NumberColumn("diff.", format="%+.1f", width="small"),
            "status": st.column_config.TextColumn(
                "status", width="small", help="OK: equal at one decimal; OKish: within 0.5"
            ),
        },
    )
    st.caption(
        "A run whose config.json records a model preset (`mmbright run --model-preset`, or a "
        "preset run from the Run page) is shown beside that preset's published row, with its "
        "average over the domains it covers and the difference."
    )
    matched = reproduction(board) if boards else None
    if matched is not None and len(matched):
        st.markdown("**Runs matching a published model**")
        render.number_table(
            matched.drop(columns=["citation", "task", "source"]),
            "reproduction_table",
            {
                "ours": ("ours", "%.1f"),
                "reported": ("reported", "%.1f"),
                "difference": ("diff.", "%+.1f"),
            },
        )
