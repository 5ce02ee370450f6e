"""Plotly figures of the dashboard, built from the core's tables without recomputing them.

Each function takes a table the core returned (leaderboard, results table, comparison) and
only lays it out; values are plotted as they come (per-query values as fractions, the
leaderboard x100 as the benchmark reports it).

Plotly reads every text it draws (titles, axis titles, tick labels and categories, legend
names, hover text, annotations) as pseudo-HTML: ``<b>``, ``<a href>``... are rendered, and
the entities ``&lt;``, ``&gt;``, ``&amp;`` are shown as the characters (plotly.js decodes
entities after tags, since 1.41). Every text that comes from users or data (run names,
domains, query ids, measures, groups) therefore goes through :func:`plain` once, here, so
a run named ``<b>x</b>.trec`` is shown as written, not in bold.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

import pandas as pd
import plotly.graph_objects as go

from mmbright_core.analysis.compare import POOLED, Comparison

_HEIGHT_PER_ROW = 34
_A_COLOR = "#1f77b4"
_B_COLOR = "#d62728"


def plain(text: object) -> str:
    """Escape ``&``, ``<`` and ``>`` so Plotly shows ``text`` as written, never as markup."""
    return html.escape(str(text), quote=False)


def _plain_all(values: Iterable[object]) -> list[str]:
    return [plain(v) for v in values]


def leaderboard_heatmap(board: pd.DataFrame) -> go.Figure:
    """Heatmap of a leaderboard: one row per (task, run), one column per domain, then Avg.

    Args:
        board: :func:`mmbright_core.analysis.leaderboard.leaderboard` output (x100).
    """
    columns = [c for c in board.columns if c != "domains"]
    rows = [f"T{task} · {plain(run)}" for task, run in board.index]
    values = board[columns]
    figure = go.Figure(
        go.Heatmap(
            z=values.to_numpy(dtype=float),
            x=_plain_all(columns),
            y=rows,
            text=values.to_numpy(dtype=float),
            texttemplate="%{text:.1f}",
            colorscale="Viridis",
            colorbar={"title": "nDCG@10 ×100"},
            hovertemplate="%{y}<br>%{x}: %{z:.1f}<extra></extra>",
            xgap=1,
            ygap=1,
        )
    )
    figure.add_vline(x=len(columns) - 1.5, line_width=2, line_color="white")  # before Avg.
    figure.update_layout(
        height=120 + _HEIGHT_PER_ROW * len(rows),
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        yaxis={"autorange": "reversed"},
        xaxis={"side": "top"},
    )
    return figure


def score_histogram(values: pd.Series, name: str, measure: str) -> go.Figure:
    """Distribution of one run's per-query values (fractions in [0, 1])."""
    figure = go.Figure(
        go.Histogram(x=values, xbins={"start": 0, "end": 1.0001, "size": 0.05}, name=plain(name))
    )
    figure.update_layout(
        xaxis_title=f"{plain(measure)} per query",
        yaxis_title="queries",
        bargap=0.05,
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def pair_scatter(comparison: Comparison) -> go.Figure:
    """Per-query value of run A (x) against run B (y), with the diagonal."""
    frame = comparison.per_query
    labels = [
        f"{plain(d)} / {plain(q)}" for d, q in zip(frame["domain"], frame["query_id"], strict=True)
    ]
    figure = go.Figure(
        go.Scatter(
            x=frame["a"],
            y=frame["b"],
            mode="markers",
            text=labels,
            marker={"color": frame["delta"], "colorscale": "RdBu", "cmid": 0, "size": 7},
            hovertemplate="%{text}<br>A %{x:.3f} → B %{y:.3f}<extra></extra>",
            name="queries",
        )
    )
    figure.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line={"dash": "dot", "color": "gray"})
    figure.update_layout(
        xaxis_title=f"{plain(comparison.run_a)} (A)",
        yaxis_title=f"{plain(comparison.run_b)} (B)",
        height=420,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def delta_histogram(comparison: Comparison) -> go.Figure:
    """Distribution of per-query deltas B - A."""
    figure = go.Figure(
        go.Histogram(x=comparison.per_query["delta"], xbins={"size": 0.05}, name="B − A")
    )
    figure.add_vline(x=0, line_dash="dot", line_color="gray")
    figure.update_layout(
        xaxis_title=f"{plain(comparison.measure)}: B − A",
        yaxis_title="queries",
        height=420,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def domain_deltas(comparison: Comparison) -> go.Figure:
    """Mean delta per domain (and pooled) with its bootstrap CI; hover shows Holm p-values."""
    s = comparison.summary
    figure = go.Figure(
        go.Bar(
            x=s["delta"],
            y=_plain_all(s["scope"]),
            orientation="h",
            error_x={
                "type": "data",
                "array": s["ci_high"] - s["delta"],
                "arrayminus": s["delta"] - s["ci_low"],
            },
            marker_color=["#555" if scope == POOLED else _A_COLOR for scope in s["scope"]],
            customdata=s[["p_perm_holm", "queries"]].to_numpy(),
            hovertemplate="%{y}: %{x:+.3f}<br>Holm p %{customdata[0]:.3g}, "
            "%{customdata[1]} queries<extra></extra>",
        )
    )
    figure.add_vline(x=0, line_color="gray")
    figure.update_layout(
        xaxis_title=f"mean {plain(comparison.measure)} delta (B − A), 95% CI",
        height=120 + 26 * len(s),
        yaxis={"autorange": "reversed"},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def breakdown_bars(frame: pd.DataFrame, comparison: Comparison, title: str) -> go.Figure:
    """Mean of A and B per group of an image-effect breakdown (e.g. by image count)."""
    groups = _plain_all(frame["group"])
    figure = go.Figure(
        [
            go.Bar(
                x=groups, y=frame["mean_a"], name=plain(comparison.run_a), marker_color=_A_COLOR
            ),
            go.Bar(
                x=groups, y=frame["mean_b"], name=plain(comparison.run_b), marker_color=_B_COLOR
            ),
        ]
    )
    figure.update_layout(
        barmode="group",
        xaxis_title=plain(title),
        yaxis_title=f"mean {plain(comparison.measure)}",
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure
