"""Plotly figures of a leaderboard, of one run and of one query's ranks in two runs.

Each function takes a table the core returned (leaderboard, results table, rank diff) and
only lays it out; values are plotted as they come (per-query values as fractions, the
leaderboard x100 as the benchmark reports it). The figures of a comparison of two runs are
in :mod:`mmbright_core.present.comparison_figures`; every text from users or data is shown
as written through :func:`~mmbright_core.present.figure_parts.plain`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from mmbright_core.data.ids import display_id
from mmbright_core.present import palette
from mmbright_core.present.figure_parts import MARGIN, OUTLINE, categorical, plain, plain_all

_HEIGHT_PER_ROW = 34
_ABSENT = "—"
SCALE_POINTS = (0.0, 100.0)
"""The heatmap's fixed colour range (nDCG@10 x100): equal gaps look equal on every board."""
STRIP_BELOW = 30
"""Fewer values than this are drawn one dot each (a strip), not as a histogram."""


def _row_label(task: object, run: object, domains: int, total: int | None) -> str:
    label = f"T{task} · {plain(run)}"
    return f"{label} · partial {domains}/{total}" if total and domains < total else label


def leaderboard_heatmap(
    board: pd.DataFrame, task_domains: Mapping[int, int] | None = None
) -> go.Figure:
    """Heatmap of a leaderboard: one row per (task, run), one column per domain, then Avg.

    The colour scale is fixed to 0-100, so a 2-point gap looks like 2 points whatever the
    spread of the board. A domain a run did not cover is blank ("—", hover "not run"); a
    run covering fewer domains than its task has is labelled partial, its Avg. too.

    Args:
        board: :func:`mmbright_core.analysis.leaderboard.leaderboard` output (x100).
        task_domains: task -> how many domains the task has; marks partial runs.
    """
    columns = [c for c in board.columns if c not in ("domains",)]
    totals = task_domains or {}
    counts = board["domains"].astype(int).tolist() if "domains" in board else [0] * len(board)
    rows = [
        _row_label(task, run, count, totals.get(int(task)))
        for (task, run), count in zip(board.index, counts, strict=True)
    ]
    values = board[columns].to_numpy(dtype=float)
    text = [[_absent_or(v) for v in row] for row in values]
    hover = [["not run" if math.isnan(v) else f"{v:.1f}" for v in row] for row in values]
    average = len(columns) - 1
    for i, ((task, _), count) in enumerate(zip(board.index, counts, strict=True)):
        total = totals.get(int(task))
        if total and count < total and not math.isnan(values[i][average]):
            text[i][average] += f" ({count}/{total})"
            hover[i][average] += f" · partial: {count} of {total} domains"
    x = plain_all(columns)
    figure = go.Figure(
        go.Heatmap(
            z=values,
            x=x,
            y=rows,
            text=text,
            texttemplate="%{text}",
            customdata=hover,
            zmin=SCALE_POINTS[0],
            zmax=SCALE_POINTS[1],
            colorscale="Viridis",
            colorbar={"title": "nDCG@10 ×100"},
            hovertemplate="%{y}<br>%{x}: %{customdata}<extra></extra>",
            hoverongaps=True,
            xgap=1,
            ygap=1,
        )
    )
    figure.add_vline(x=len(columns) - 1.5, line_width=2, line_color="white")  # before Avg.
    figure.update_layout(
        height=120 + _HEIGHT_PER_ROW * len(rows),
        margin=MARGIN,
        yaxis={**categorical(rows), "autorange": "reversed"},
        xaxis={**categorical(x), "side": "top"},
    )
    return figure


def _absent_or(value: float) -> str:
    return _ABSENT if math.isnan(value) else f"{value:.1f}"


def score_histogram(
    values: pd.Series, name: str, measure: str, labels: Sequence[str] | None = None
) -> go.Figure:
    """Distribution of one run's per-query values (fractions in [0, 1]).

    Below :data:`STRIP_BELOW` values each query is one dot (hover: ``labels``), since a
    histogram of a handful of queries is mostly empty bins.
    """
    title = f"{plain(measure)} per query"
    if len(values) < STRIP_BELOW:
        return _strip(values, name, title, labels, (-0.02, 1.02))
    figure = go.Figure(
        go.Histogram(x=values, xbins={"start": 0, "end": 1.0001, "size": 0.05}, name=plain(name))
    )
    figure.update_layout(
        xaxis_title=title,
        yaxis_title="queries",
        bargap=0.05,
        height=320,
        margin=MARGIN,
    )
    return figure


def _strip(
    values: pd.Series,
    name: str,
    title: str,
    labels: Sequence[str] | None,
    x_range: tuple[float, float] | None = None,
    color: object = palette.RUN_A,
) -> go.Figure:
    """One dot per value along x, equal values stacked upwards so each stays visible."""
    x = pd.Series(values, dtype=float).reset_index(drop=True)
    level = x.round(3).groupby(x.round(3)).cumcount()
    shown = plain_all(labels) if labels is not None else [""] * len(x)
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=level + 1,
            mode="markers",
            text=shown,
            name=plain(name),
            marker={"size": 11, "color": color, "line": OUTLINE},
            hovertemplate="%{text}<br>%{x:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        xaxis={"title": title, "range": list(x_range) if x_range else None},
        yaxis={"title": "queries", "rangemode": "tozero", "dtick": 1},
        height=260,
        margin=MARGIN,
    )
    return figure


def delta_distribution(
    deltas: pd.Series, measure: str, labels: Sequence[str] | None = None
) -> go.Figure:
    """Distribution of per-query deltas B − A: a histogram, or a strip of dots when few."""
    title = f"{plain(measure)}: B − A"
    if len(deltas) < STRIP_BELOW:
        colors = [palette.delta_color(d) for d in deltas]
        figure = _strip(deltas, "B − A", title, labels, (-1.05, 1.05), colors)
    else:
        figure = _delta_bins(pd.Series(deltas, dtype=float), title)
    figure.add_vline(x=0, line_dash="dot", line_color="gray")
    return figure


def _delta_bins(deltas: pd.Series, title: str) -> go.Figure:
    """A histogram of deltas, its losses, ties and wins stacked in their delta colours.

    The bins are 0.05 wide and centred on zero, so the bin of the ties holds only values
    near zero and every other bin is wholly below or wholly above it.
    """
    bins = {"start": -1.025, "end": 1.025, "size": 0.05}
    parts = (("B loses", deltas < 0), ("tie", deltas == 0), ("B wins", deltas > 0))
    figure = go.Figure(
        [
            go.Histogram(
                x=deltas[keep],
                xbins=bins,
                name=name,
                marker_color=palette.delta_color(sign),
            )
            for (name, keep), sign in zip(parts, (-1, 0, 1), strict=True)
        ]
    )
    figure.update_layout(
        barmode="stack",
        xaxis_title=title,
        yaxis_title="queries",
        height=420,
        margin=MARGIN,
    )
    return figure


def rank_slope(docs: pd.DataFrame, run_a: str, run_b: str, k: int = 10) -> go.Figure:
    """One line per judged-relevant document: its rank in run A (left) and in run B (right).

    Args:
        docs: A rank-diff table (:func:`~mmbright_core.analysis.rankdiff.rank_diff`'s
            ``docs``, or any frame with ``doc_id``, ``relevance``, ``rank_a``, ``rank_b``).
            Only rows with relevance > 0 are drawn; a rank a run lacks is drawn at
            ``k + 1``, labelled "> k".
        run_a: The name of run A (the left axis).
        run_b: The name of run B (the right axis).
        k: The cut-off: a dotted line is drawn between ranks ``k`` and ``k + 1``.

    Returns:
        Rank 1 at the top; each line is named by its item as people read it (a Task 4
        pair by its passage and image name, :func:`~mmbright_core.data.ids.display_id`)
        and its grade, coloured by the grade (:data:`palette.GRADES`, so grade 2 and
        grade 1 differ), dashed when the item fell.
    """
    relevant = docs.loc[docs["relevance"] > 0]
    outside = k + 1
    fig = go.Figure()
    sides = [plain(run_a), plain(run_b)]
    if sides[0] == sides[1]:
        sides = [f"A: {sides[0]}", f"B: {sides[1]}"]
    deepest = float(outside)
    for row in relevant.itertuples(index=False):
        ranks = [_rank_or(row.rank_a, outside), _rank_or(row.rank_b, outside)]
        deepest = max(deepest, *ranks)
        words = [_rank_word(row.rank_a), _rank_word(row.rank_b)]
        label = f"{plain(display_id(str(row.doc_id)))} · grade {int(row.relevance)}"
        fig.add_trace(
            go.Scatter(
                x=sides,
                y=ranks,
                mode="lines+markers+text",
                name=label,
                text=words,
                textposition=["middle left", "middle right"],
                line={
                    "color": palette.grade(row.relevance).hex,
                    "width": 2,
                    "dash": "dash" if ranks[1] > ranks[0] else "solid",
                },
                hovertemplate=f"{label}<br>%{{x}}: rank %{{text}}<extra></extra>",
            )
        )
    fig.add_hline(y=k + 0.5, line_dash="dot", line_color="#9e9e9e")
    fig.update_layout(
        title=f"Judged-relevant items: rank in {sides[0]} → {sides[1]}",
        xaxis=categorical(sides),
        yaxis={"autorange": "reversed", "title": "rank", "range": [deepest + 0.5, 0.5]},
        height=320,
        margin={"l": 60, "r": 60, "t": 50, "b": 30},
    )
    return fig


def _rank_or(rank: float, outside: int) -> float:
    return outside if math.isnan(rank) or rank > outside else float(rank)


def _rank_word(rank: float) -> str:
    return "not ranked" if math.isnan(rank) else f"{int(rank)}"
