"""The dashboard under AppTest: the app, its pages, and the small helpers every app test uses."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import streamlit as st
from locations import ROOT
from streamlit.testing.v1 import AppTest

from mmbright_core.data.sources import open_source
from mmbright_core.io.runs import write_trec_run

APP = ROOT / "mmbright_core" / "ui" / "app.py"
TASK = 2


def make_runs(dataset: Path, out: Path) -> Path:
    source = open_source(str(dataset))
    text: dict[str, dict[str, float]] = {}
    multi: dict[str, dict[str, float]] = {}
    for domain in source.domains():
        data = source.task(TASK, domain)
        corpus = [doc.doc_id for doc in data.corpus]
        for i, query in enumerate(data.queries):
            relevant = sorted(d for d, r in data.qrels.get(query.query_id, {}).items() if r > 0)
            others = [d for d in corpus if d not in relevant] * 3  # enough to fill 10 places
            others = [f"{d}#{n}" if n else d for n, d in enumerate(dict.fromkeys(others))]
            others += [f"{domain}/filler{n:02d}_1.txt" for n in range(12)]
            qid = f"{domain}/{query.query_id}"
            text[qid] = {d: 100.0 - n for n, d in enumerate(relevant + others)}
            order = others[:10] + relevant + others[10:] if i % 2 == 0 else relevant + others
            multi[qid] = {d: 50.0 - n for n, d in enumerate(order)}
    out.mkdir()
    write_trec_run(out / "text.trec", text, tag="text")
    write_trec_run(out / "multi.trec", multi, tag="multi")
    return out


def fresh(clear: bool = True, timeout: float = 60) -> AppTest:
    """A new app run from the start, the caches cleared first unless ``clear`` is False."""
    if clear:
        st.cache_data.clear()
        st.cache_resource.clear()
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    at.run()
    return at


def use_folder(at: AppTest, dataset: Path) -> None:
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(dataset)).run()
    at.selectbox(key="task").set_value(TASK).run()


def add_folder(at: AppTest, folder: Path) -> None:
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()


def choose_pair(at: AppTest, a: str, b: str) -> None:
    """Choose runs A and B for every page, as a choice on Per query or Compare does."""
    at.session_state["keep_run_a"] = a
    at.session_state["keep_run_b"] = b


def goto(at: AppTest, page: str) -> AppTest:
    return at.switch_page(f"{page}/page.py").run()


def stay(at: AppTest, page: str) -> None:
    # AppTest re-requests the page last given to switch_page() on every run; after the
    # app itself switched pages, point it at the page the app is now on.
    at.switch_page(f"{page}/page.py")


def open_tab(at: AppTest, key: str, label: str) -> AppTest:
    """Open the tab ``label`` of the tabs with ``key``: a closed tab is neither run nor drawn."""
    at.session_state[key] = label
    return at.run()


def chart_traces(at: AppTest, key: str) -> list[dict]:
    for chart in at.get("plotly_chart"):
        if chart.proto.id.endswith(key) or key in chart.proto.id:
            return json.loads(chart.proto.spec)["data"]
    raise AssertionError(f"no plotly chart {key!r}")


def dataframe_with(at: AppTest, *columns: str):
    # Dataframes carry no key in the element tree: find one by its columns.
    for frame in at.dataframe:
        if set(columns) <= set(frame.value.columns):
            return frame.value
    raise AssertionError(f"no dataframe with columns {columns}")


def table_with(at: AppTest, *columns: str):
    # A static table (st.table) shows each cell as text under readable headings.
    for table in at.table:
        if set(columns) <= set(table.value.columns):
            return table.value
    raise AssertionError(f"no table with columns {columns}")


def plotly_values(data: object) -> list:
    # Plotly writes numpy arrays as {"dtype": ..., "bdata": base64}; lists stay lists.
    if isinstance(data, dict) and "bdata" in data:
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).tolist()
    return list(data)  # type: ignore[call-overload]


def error_messages(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def no_html_from_data(at: AppTest) -> None:
    # Every Markdown element must escape: none may allow raw HTML.
    assert not any(m.proto.allow_html for m in at.markdown)


def image_captions(at: AppTest) -> set[str]:
    """The paths shown under the page's images (each caption's full text is its tooltip)."""
    import html
    import re

    bodies = (e.proto.body for e in at.get("html"))
    pattern = re.compile(r'class="mmb-image-caption" title="([^"]*)"')
    return {html.unescape(m) for body in bodies for m in pattern.findall(body)}
