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
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from mmbright_core.analysis.compare import POOLED, Comparison
from mmbright_core.data.ids import display_id
from mmbright_core.present import palette

_HEIGHT_PER_ROW = 34
_ABSENT = "—"
SCALE_POINTS = (0.0, 100.0)
"""The heatmap's fixed colour range (nDCG@10 x100): equal gaps look equal on every board."""
# Every delta is coloured on palette.DIVERGING (red below zero, blue above); the grey
# outline keeps pale points visible on both themes.
_OUTLINE = {"width": 0.8, "color": "rgba(120, 120, 120, 0.9)"}
STRIP_BELOW = 30
"""Fewer values than this are drawn one dot each (a strip), not as a histogram."""
_SPREAD = 0.012  # radius by which queries sharing one point are set apart, in score units


def plain(text: object) -> str:
    """Escape ``&``, ``<`` and ``>`` so Plotly shows ``text`` as written, never as markup."""
    return html.escape(str(text), quote=False)


def _plain_all(values: Iterable[object]) -> list[str]:
    return [plain(v) for v in values]


def categorical(labels: Sequence[str]) -> dict[str, object]:
    """An axis showing exactly ``labels``, in that order, as categories.

    Labels that look like numbers (image counts ``"0"``, ``"3-5"``, numeric domain names or
    query ids) would otherwise make Plotly guess a numeric or date axis and drop the rest.
    """
    return {"type": "category", "categoryorder": "array", "categoryarray": list(labels)}


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
    x = _plain_all(columns)
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
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
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
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
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
    shown = _plain_all(labels) if labels is not None else [""] * len(x)
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=level + 1,
            mode="markers",
            text=shown,
            name=plain(name),
            marker={"size": 11, "color": color, "line": _OUTLINE},
            hovertemplate="%{text}<br>%{x:.3f}<extra></extra>",
        )
    )
    figure.update_layout(
        xaxis={"title": title, "range": list(x_range) if x_range else None},
        yaxis={"title": "queries", "rangemode": "tozero", "dtick": 1},
        height=260,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def spread(a: Sequence[float], b: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Set apart the points that coincide: a small circle around the shared point.

    Deterministic (the k-th of n queries at one point sits at angle 2πk/n), so a point
    clicked stays the same query from one rerun to the next.

    Returns:
        ``(x, y, count)``: the drawn positions and how many queries share each true point.
    """
    key = pd.DataFrame(
        {"a": np.round(np.asarray(a, float), 6), "b": np.round(np.asarray(b, float), 6)}
    )
    group = key.groupby(["a", "b"], sort=False)
    count = group["a"].transform("size").to_numpy()
    k = group.cumcount().to_numpy()
    angle = 2 * np.pi * k / np.maximum(count, 1)
    radius = np.where(count > 1, _SPREAD, 0.0)
    return (
        key["a"].to_numpy() + radius * np.cos(angle),
        key["b"].to_numpy() + radius * np.sin(angle),
        count,
    )


def pair_scatter(comparison: Comparison) -> go.Figure:
    """Per-query value of run A (x) against run B (y), with the diagonal.

    Colour is B − A on a diverging scale centred on 0; queries sharing one point (ties at
    (1, 1)) are set apart by :func:`spread` and the hover says how many share it. Each
    point's ``customdata`` is (domain, query_id, A, B, shared-point note) as shown, in
    ``per_query`` order, so a selected point's index is its row there.
    """
    frame = comparison.per_query
    labels = [
        f"{plain(d)} / {plain(q)}" for d, q in zip(frame["domain"], frame["query_id"], strict=True)
    ]
    x, y, count = spread(frame["a"], frame["b"])
    shared = [f" · {n} queries at this point" if n > 1 else "" for n in count]
    widest = float(frame["delta"].abs().max()) if len(frame) else 0.0
    widest = widest if widest > 0 else 1.0
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=y,
            mode="markers",
            text=labels,
            customdata=[
                list(row)
                for row in zip(
                    _plain_all(frame["domain"]),
                    _plain_all(frame["query_id"]),
                    frame["a"].astype(float),
                    frame["b"].astype(float),
                    shared,
                    strict=True,
                )
            ],
            marker={
                "color": frame["delta"],
                "colorscale": [list(stop) for stop in palette.DIVERGING],
                "cmin": -widest,
                "cmax": widest,
                "cmid": 0,
                "size": 9,
                "line": _OUTLINE,
                "colorbar": {"title": "B − A"},
            },
            hovertemplate="%{text}<br>A %{customdata[2]:.3f} → B %{customdata[3]:.3f}"
            "%{customdata[4]}<extra></extra>",
            name="queries",
        )
    )
    figure.add_shape(type="line", x0=0, y0=0, x1=1, y1=1, line={"dash": "dot", "color": "gray"})
    figure.update_layout(
        xaxis={"title": f"{plain(comparison.run_a)} (A)", "range": [-0.05, 1.05]},
        yaxis={"title": f"{plain(comparison.run_b)} (B)", "range": [-0.05, 1.05]},
        height=420,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        clickmode="event+select",
    )
    return figure


def delta_histogram(comparison: Comparison) -> go.Figure:
    """Distribution of per-query deltas B - A."""
    frame = comparison.per_query
    labels = [f"{d} / {q}" for d, q in zip(frame["domain"], frame["query_id"], strict=True)]
    return delta_distribution(frame["delta"], comparison.measure, labels)


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
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def domain_deltas(comparison: Comparison) -> go.Figure:
    """Mean delta per domain (and pooled) with its bootstrap CI; hover shows Holm p-values."""
    s = comparison.summary
    scopes = _plain_all(s["scope"])
    figure = go.Figure(
        go.Bar(
            x=s["delta"],
            y=scopes,
            orientation="h",
            error_x={
                "type": "data",
                "array": s["ci_high"] - s["delta"],
                "arrayminus": s["delta"] - s["ci_low"],
            },
            marker_color=[
                palette.POOLED if scope == POOLED else palette.delta_color(d)
                for scope, d in zip(s["scope"], s["delta"], strict=True)
            ],
            customdata=s[["p_perm_holm", "queries"]].to_numpy(),
            hovertemplate="%{y}: %{x:+.3f}<br>Holm p %{customdata[0]:.3g}, "
            "%{customdata[1]} queries<extra></extra>",
        )
    )
    figure.add_vline(x=0, line_color="gray")
    figure.update_layout(
        xaxis_title=f"mean {plain(comparison.measure)} delta (B − A), 95% CI",
        height=120 + 26 * len(s),
        yaxis={**categorical(scopes), "autorange": "reversed"},
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure


def breakdown_bars(frame: pd.DataFrame, comparison: Comparison, title: str) -> go.Figure:
    """Mean of A and B per group of an image-effect breakdown (e.g. by image count)."""
    groups = _plain_all(frame["group"])
    figure = go.Figure(
        [
            go.Bar(
                x=groups,
                y=frame["mean_a"],
                name=plain(comparison.run_a),
                marker_color=palette.RUN_A,
            ),
            go.Bar(
                x=groups,
                y=frame["mean_b"],
                name=plain(comparison.run_b),
                marker_color=palette.RUN_B,
            ),
        ]
    )
    figure.update_layout(
        barmode="group",
        xaxis={**categorical(groups), "title": plain(title)},
        yaxis_title=f"mean {plain(comparison.measure)}",
        height=320,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
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


def slice_deltas(frame: pd.DataFrame, comparison: Comparison, by: str) -> go.Figure:
    """Mean delta (B − A) per group of a slice with its bootstrap CI, groups in slice order."""
    groups = _plain_all(frame["group"])
    figure = go.Figure(
        go.Bar(
            x=groups,
            y=frame["delta"],
            error_y={
                "type": "data",
                "array": frame["ci_high"] - frame["delta"],
                "arrayminus": frame["delta"] - frame["ci_low"],
            },
            marker_color=[palette.delta_color(d) for d in frame["delta"]],
            customdata=frame[["queries", "wins", "ties", "losses"]].to_numpy(),
            hovertemplate="%{x}: %{y:+.3f}<br>%{customdata[0]} queries, wins/ties/losses "
            "%{customdata[1]}/%{customdata[2]}/%{customdata[3]}<extra></extra>",
        )
    )
    figure.add_hline(y=0, line_color="gray")
    figure.update_layout(
        xaxis={**categorical(groups), "title": plain(by)},
        yaxis_title=f"mean {plain(comparison.measure)} delta (B − A), 95% CI",
        height=340,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
    )
    return figure
