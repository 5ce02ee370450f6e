"""Plotly figures of a comparison of two runs: per query, per domain and per slice.

Each function takes a :class:`~mmbright_core.analysis.compare.Comparison` (or a table cut
from one) and only lays it out; every text from users or data is shown as written through
:func:`~mmbright_core.present.figure_parts.plain`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from mmbright_core.analysis.compare import POOLED, Comparison
from mmbright_core.present import palette
from mmbright_core.present.figure_parts import (
    MARGIN,
    OUTLINE,
    categorical,
    ci_bars,
    plain,
    plain_all,
)
from mmbright_core.present.figures import delta_distribution

_SPREAD = 0.012  # radius by which queries sharing one point are set apart, in score units


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
                    plain_all(frame["domain"]),
                    plain_all(frame["query_id"]),
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
                "line": OUTLINE,
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
        margin=MARGIN,
        clickmode="event+select",
    )
    return figure


def delta_histogram(comparison: Comparison) -> go.Figure:
    """Distribution of per-query deltas B - A."""
    frame = comparison.per_query
    labels = [f"{d} / {q}" for d, q in zip(frame["domain"], frame["query_id"], strict=True)]
    return delta_distribution(frame["delta"], comparison.measure, labels)


def domain_deltas(comparison: Comparison) -> go.Figure:
    """Mean delta per domain (and pooled) with its bootstrap CI; hover shows Holm p-values."""
    s = comparison.summary
    scopes = plain_all(s["scope"])
    figure = go.Figure(
        go.Bar(
            x=s["delta"],
            y=scopes,
            orientation="h",
            error_x=ci_bars(s),
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
        margin=MARGIN,
    )
    return figure


def breakdown_bars(frame: pd.DataFrame, comparison: Comparison, title: str) -> go.Figure:
    """Mean of A and B per group of an image-effect breakdown (e.g. by image count)."""
    groups = plain_all(frame["group"])
    runs = (
        ("mean_a", comparison.run_a, palette.RUN_A),
        ("mean_b", comparison.run_b, palette.RUN_B),
    )
    figure = go.Figure(
        [
            go.Bar(x=groups, y=frame[column], name=plain(run), marker_color=colour)
            for column, run, colour in runs
        ]
    )
    y_title = f"mean {plain(comparison.measure)}"
    return _by_group(figure, groups, title, y_title, 320, barmode="group")


def slice_deltas(frame: pd.DataFrame, comparison: Comparison, by: str) -> go.Figure:
    """Mean delta (B − A) per group of a slice with its bootstrap CI, groups in slice order."""
    groups = plain_all(frame["group"])
    figure = go.Figure(
        go.Bar(
            x=groups,
            y=frame["delta"],
            error_y=ci_bars(frame),
            marker_color=[palette.delta_color(d) for d in frame["delta"]],
            customdata=frame[["queries", "wins", "ties", "losses"]].to_numpy(),
            hovertemplate="%{x}: %{y:+.3f}<br>%{customdata[0]} queries, wins/ties/losses "
            "%{customdata[1]}/%{customdata[2]}/%{customdata[3]}<extra></extra>",
        )
    )
    figure.add_hline(y=0, line_color="gray")
    y_title = f"mean {plain(comparison.measure)} delta (B − A), 95% CI"
    return _by_group(figure, groups, by, y_title, 340)


def _by_group(
    figure: go.Figure, groups: list[str], by: str, y_title: str, height: int, **layout: object
) -> go.Figure:
    """Lay out bars per group of a slice: the groups as categories in their order, titled."""
    figure.update_layout(
        **layout,
        xaxis={**categorical(groups), "title": plain(by)},
        yaxis_title=y_title,
        height=height,
        margin=MARGIN,
    )
    return figure
