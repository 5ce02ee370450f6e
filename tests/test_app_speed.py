"""Clicks that leave a page go at once: the page they leave is not computed and drawn again.

"Open in inspector" on the per-query page and a point of Compare's scatter both open the
inspector. Each is checked to open the right query, and to do it without rebuilding what the
page it leaves would show (its table, its figures): on the full benchmark that work is most of
the click's time, and the browser would draw it only to replace it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from apptest import add_folder, fresh, goto, make_runs, open_tab, use_folder
from streamlit.testing.v1 import AppTest

from mmbright_core.analysis import figures
from mmbright_core.ui import state, views


@pytest.fixture(scope="module")
def runs_dir(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_runs(fixture_dir, tmp_path_factory.mktemp("speed-runs") / "runs")


@pytest.fixture
def app(fixture_dir: Path, runs_dir: Path) -> AppTest:
    at = fresh()
    use_folder(at, fixture_dir)
    add_folder(at, runs_dir)
    assert not at.exception
    return at


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[int]:
    """Count the calls of ``owner.name`` (the real function still runs)."""
    calls: list[int] = []
    real: Callable[..., Any] = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return calls


def test_open_in_inspector_skips_the_per_query_table(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    goto(app, "per_query")
    labels = app.selectbox(key="pq_query").options
    app.selectbox(key="pq_query").set_value(labels[2]).run()
    rows = counted(monkeypatch, views, "run_rows")
    app.button(key="pq_open").click().run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    target = app.session_state["inspect_query"]
    assert f"{target.domain} / {target.query_id}" == labels[2]
    assert rows == []  # the per-query table was not rebuilt on the way out


def test_scatter_point_skips_the_scatter(app: AppTest, monkeypatch: pytest.MonkeyPatch) -> None:
    goto(app, "compare")
    app.selectbox(key="cmp_a").set_value("text").run()
    app.selectbox(key="cmp_b").set_value("multi").run()
    open_tab(app, state.COMPARE_SECTION_KEY, "Query by query")
    scatters = counted(monkeypatch, figures, "pair_scatter")
    app.session_state["cmp_scatter"] = {
        "selection": {"points": [{"point_index": 1}], "point_indices": [1], "box": [], "lasso": []}
    }
    app.run()
    assert not app.exception
    assert app.title[0].value == "Query inspector"
    assert scatters == []  # the 1-point-per-query figure was not built on the way out
