"""Names from users and data are shown as written in every figure, never as markup.

Plotly renders pseudo-HTML in titles, tick labels, legend names and hover text: a run
uploaded as ``<b>BOLD<a href=...>LINK.parquet`` must not come out bold with a live link.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import plotly.graph_objects as go
import pytest

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.slices import image_effect
from mmbright_core.present import comparison_figures, figure_parts, figures, palette
from mmbright_core.present.report import comparison_report

RUN = "<b>BOLD<a href='https://evil.example'>LINK.parquet"
DOMAIN = "<i>bio</i>&co"
QUERY = "<a href=x>q1"
SHOWN_RUN = "&lt;b&gt;BOLD&lt;a href='https://evil.example'&gt;LINK.parquet"
COLUMNS = ["run", "task", "domain", "query_id", "nDCG@10", "n_images", "n_decodable_images"]


def _comparison():  # type: ignore[no-untyped-def]
    rows = []
    for i, (a, b) in enumerate([(0.9, 0.1), (0.5, 0.2), (0.1, 0.4), (0.3, 0.3)]):
        query = f"{QUERY}{i}"
        rows += [("plain", 2, DOMAIN, query, a, i % 3, i % 3), (RUN, 2, DOMAIN, query, b, 1, 1)]
    frame = pd.DataFrame(rows, columns=COLUMNS).assign(
        query_chars=900, n_judged=3, n_relevant=1, first_relevant_rank=1.0, covered=True
    )
    return compare_runs(frame, "plain", RUN, n_resamples=50)


def _board() -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples([(2, RUN), (2, "plain")], names=["task", "run"])
    return pd.DataFrame(
        {DOMAIN: [10.0, 20.0], "Avg.": [10.0, 20.0], "domains": [1, 1]}, index=index
    )


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _texts(item)
    elif hasattr(value, "tolist"):  # numpy arrays of labels or customdata
        yield from _texts(value.tolist())


def _all_figures() -> dict[str, go.Figure]:
    comparison = _comparison()
    groups = next(iter(image_effect(comparison).values()))
    groups = groups.assign(group=[f"<b>{g}</b>" for g in groups["group"]])
    return {
        "heatmap": figures.leaderboard_heatmap(_board()),
        "histogram": figures.score_histogram(pd.Series([0.1, 0.5]), RUN, "<b>nDCG</b>"),
        "scatter": comparison_figures.pair_scatter(comparison),
        "deltas": comparison_figures.delta_histogram(comparison),
        "domains": comparison_figures.domain_deltas(comparison),
        "breakdown": comparison_figures.breakdown_bars(groups, comparison, "<a href=x>images"),
    }


@pytest.mark.parametrize("name", list(_all_figures()))
def test_no_markup_from_names_survives(name: str) -> None:
    texts = list(_texts(_all_figures()[name].to_dict()))
    live = [t for t in texts if "<b>" in t or "<a " in t or "<i>" in t]
    assert not live, live[:5]
    if name != "deltas":  # the only figure without a name from the data
        assert any("&lt;" in t for t in texts)  # escaped, not stripped


def test_names_stay_readable() -> None:
    heatmap = _all_figures()["heatmap"].to_dict()["data"][0]
    assert list(heatmap["y"]) == [f"T2 · {SHOWN_RUN}", "T2 · plain"]
    assert list(heatmap["x"]) == ["&lt;i&gt;bio&lt;/i&gt;&amp;co", "Avg."]
    scatter = _all_figures()["scatter"].to_dict()
    assert scatter["layout"]["xaxis"]["title"]["text"] == "plain (A)"
    assert scatter["layout"]["yaxis"]["title"]["text"] == f"{SHOWN_RUN} (B)"
    assert scatter["data"][0]["text"][0] == "&lt;i&gt;bio&lt;/i&gt;&amp;co / &lt;a href=x&gt;q10"
    assert figure_parts.plain("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_report_escapes_names_in_text_and_figures() -> None:
    page = comparison_report(_comparison())
    assert "&lt;b&gt;BOLD&lt;a href=" in page and "&lt;i&gt;bio&lt;/i&gt;&amp;co" in page
    # plotly.js itself holds an '<a href=' (a map attribution): look for the input's link
    assert "<b>BOLD" not in page and "<a href='https://evil" not in page and "<i>bio" not in page


def _numeric_comparison():  # type: ignore[no-untyped-def]
    # Domains and groups that look like numbers; three queries tie at (1, 1).
    rows = []
    pairs = [(1.0, 1.0), (1.0, 1.0), (1.0, 1.0), (0.9, 0.1), (0.2, 0.6), (0.5, 0.5)]
    for i, (a, b) in enumerate(pairs):
        domain, images = ("2019", "7")[i % 2], (0, 1, 4, 4, 2, 9)[i]
        rows += [("a", 2, domain, str(i), a, images, images), ("b", 2, domain, str(i), b, 1, 1)]
    frame = pd.DataFrame(rows, columns=COLUMNS).assign(
        query_chars=900, n_judged=3, n_relevant=1, first_relevant_rank=1.0, covered=True
    )
    return compare_runs(frame, "a", "b", n_resamples=50)


def test_groups_that_look_numeric_stay_categories() -> None:
    comparison = _numeric_comparison()
    groups = image_effect(comparison)["query images"]
    assert "3-5" in list(groups["group"])
    bars = comparison_figures.breakdown_bars(groups, comparison, "query images").to_dict()
    assert bars["layout"]["xaxis"]["type"] == "category"
    assert list(bars["layout"]["xaxis"]["categoryarray"]) == ["0", "1", "2", "3-5", "6+"]
    domains = comparison_figures.domain_deltas(comparison).to_dict()["layout"]["yaxis"]
    assert domains["type"] == "category"
    assert list(domains["categoryarray"]) == ["2019", "7", "(pooled)"]
    heatmap = figures.leaderboard_heatmap(_board()).to_dict()["layout"]
    assert heatmap["xaxis"]["type"] == heatmap["yaxis"]["type"] == "category"


def test_heatmap_is_anchored_and_shows_absent_and_partial() -> None:
    index = pd.MultiIndex.from_tuples([(2, "full"), (2, "half")], names=["task", "run"])
    board = pd.DataFrame(
        {"1": [80.0, 96.0], "2": [77.0, float("nan")], "Avg.": [78.5, 96.0], "domains": [2, 1]},
        index=index,
    )
    trace = figures.leaderboard_heatmap(board, {2: 2}).to_dict()["data"][0]
    assert (trace["zmin"], trace["zmax"]) == figures.SCALE_POINTS == (0.0, 100.0)
    assert list(trace["y"]) == ["T2 · full", "T2 · half · partial 1/2"]
    assert trace["text"][1] == ["96.0", "—", "96.0 (1/2)"]
    assert trace["customdata"][1][1] == "not run"
    assert "partial: 1 of 2 domains" in trace["customdata"][1][2]


def test_coinciding_points_are_set_apart_and_counted() -> None:
    comparison = _numeric_comparison()
    trace = comparison_figures.pair_scatter(comparison).data[0]
    points = list(zip(trace.x, trace.y, strict=True))
    assert len(set(points)) == len(points)  # three ties at (1, 1) drawn apart
    ties = [i for i, row in enumerate(trace.customdata) if list(row[2:4]) == [1.0, 1.0]]
    assert len(ties) == 3  # the hover keeps the true values
    assert max(abs(points[i][0] - 1) + abs(points[i][1] - 1) for i in ties) < 0.05  # near
    assert {trace.customdata[i][4] for i in ties} == {" · 3 queries at this point"}
    assert trace.customdata[next(i for i in range(6) if i not in ties)][4] == ""
    again = comparison_figures.pair_scatter(comparison).data[0]
    assert points == list(zip(again.x, again.y, strict=True))  # deterministic


def test_scatter_colours_show_on_light_and_dark() -> None:
    marker = comparison_figures.pair_scatter(_numeric_comparison()).to_dict()["data"][0]["marker"]
    scale = marker["colorscale"]
    mid = next(color for stop, color in scale if stop == 0.5)
    assert mid.lower() not in ("#ffffff", "white", "#f7f7f7")  # vanishes on the light theme
    assert marker["cmid"] == 0 and marker["cmin"] == -marker["cmax"]
    assert marker["line"]["width"] > 0  # an outline keeps pale points visible


def test_few_values_are_dots_many_a_histogram() -> None:
    few = figures.score_histogram(pd.Series([0.1, 0.1, 0.5]), "r", "nDCG@10", ["a", "b", "c"])
    trace = few.data[0]
    assert trace.type == "scatter" and list(trace.y) == [1, 2, 1]  # equal values stack
    many = figures.score_histogram(pd.Series([0.1] * figures.STRIP_BELOW), "r", "nDCG@10")
    assert many.to_dict()["data"][0]["type"] == "histogram"
    deltas = figures.delta_distribution(pd.Series([-0.2, 0.0, 0.3]), "nDCG@10")
    assert deltas.to_dict()["data"][0]["type"] == "scatter"


def _delta_colours(figure: go.Figure) -> list[tuple[float, str]]:
    """(delta, colour) of every bar or dot of a delta chart, across its traces."""
    found = []
    for trace in figure.data:
        values = trace.y if trace.type == "bar" and trace.orientation != "h" else trace.x
        colours = trace.marker.color
        for i, value in enumerate(values):
            found.append((float(value), colours if isinstance(colours, str) else colours[i]))
    return found


def test_every_delta_chart_colours_a_loss_red_and_a_win_blue() -> None:
    # Deltas B − A of the comparison: -0.8, -0.3, +0.3, 0; the domain's mean is -0.2.
    comparison = _comparison()
    slices = pd.DataFrame(
        {
            "group": ["0", "1", "2"],
            "delta": [-0.5, 0.0, 0.25],
            "ci_low": [-0.6, -0.1, 0.1],
            "ci_high": [-0.4, 0.1, 0.4],
            "queries": [2, 1, 1],
            "wins": [0, 0, 1],
            "ties": [0, 1, 0],
            "losses": [2, 0, 0],
        }
    )
    many = pd.Series([-0.4] * 20 + [0.0] * 5 + [0.6] * 10)
    charts = {
        "domains": comparison_figures.domain_deltas(comparison),
        "slices": comparison_figures.slice_deltas(slices, comparison, "images"),
        "strip": comparison_figures.delta_histogram(comparison),
        "histogram": figures.delta_distribution(many, "nDCG@10"),
    }
    for name, chart in charts.items():
        bars = [(d, c) for d, c in _delta_colours(chart) if c != palette.POOLED]
        assert bars, name
        for delta, colour in bars:
            assert colour == palette.delta_color(delta), (name, delta, colour)
        assert {palette.DELTA_NEGATIVE, palette.DELTA_POSITIVE} <= {c for _, c in bars} or (
            name == "domains"  # one domain, its mean negative: red
            and {c for _, c in bars} == {palette.DELTA_NEGATIVE}
        ), name
    marker = comparison_figures.pair_scatter(comparison).to_dict()["data"][0]["marker"]
    assert [tuple(stop) for stop in marker["colorscale"]] == list(palette.DIVERGING)
    assert palette.DIVERGING[0][1] == palette.DELTA_NEGATIVE  # the low end is the loss
