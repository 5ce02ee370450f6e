"""Names from users and data are shown as written in every figure, never as markup.

Plotly renders pseudo-HTML in titles, tick labels, legend names and hover text: a run
uploaded as ``<b>BOLD<a href=...>LINK.parquet`` must not come out bold with a live link.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import plotly.graph_objects as go
import pytest

from mmbright_core.analysis import figures
from mmbright_core.analysis.compare import compare_runs, image_effect
from mmbright_core.analysis.report import comparison_report

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
        "scatter": figures.pair_scatter(comparison),
        "deltas": figures.delta_histogram(comparison),
        "domains": figures.domain_deltas(comparison),
        "breakdown": figures.breakdown_bars(groups, comparison, "<a href=x>images"),
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
    assert figures.plain("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_report_escapes_names_in_text_and_figures() -> None:
    page = comparison_report(_comparison())
    assert "&lt;b&gt;BOLD&lt;a href=" in page and "&lt;i&gt;bio&lt;/i&gt;&amp;co" in page
    # plotly.js itself holds an '<a href=' (a map attribution): look for the input's link
    assert "<b>BOLD" not in page and "<a href='https://evil" not in page and "<i>bio" not in page
