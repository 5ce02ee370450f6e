"""Opening the inspector from another page: on a clicked table row, chart point or button.

The inspected query lives in session state (:func:`state.set_inspect_target`); these set it
and switch to the inspector's page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from mmbright_core.ui.common import navigation, state, views


def point_positions(event: object) -> list[int]:
    """The row positions of the points selected in a chart (``st.plotly_chart`` on_select).

    Figures that support clicking keep one trace whose points are in table order
    (:func:`mmbright_core.present.comparison_figures.pair_scatter`), so a point's index is its row.
    """
    selection = event.get("selection") if isinstance(event, Mapping) else None
    points = selection.get("points", []) if isinstance(selection, Mapping) else []
    return [int(p["point_index"]) for p in points if isinstance(p, Mapping) and "point_index" in p]


def open_query(frame: pd.DataFrame, positions: Sequence[int]) -> None:
    """Open the inspector on the first selected row of ``frame`` (nothing if none is)."""
    found = views.picked(frame, positions)
    if found is not None:
        state.set_inspect_target(*found)
        st.switch_page(navigation.page_file("inspector"))


def remember_choices(key: str, labels: Sequence[str], frame: pd.DataFrame) -> None:
    """Keep ``label -> (domain, query_id)`` of a query selector, for :func:`open_clicked`."""
    targets = zip(frame["domain"].astype(str), frame["query_id"].astype(str), strict=True)
    st.session_state[key] = dict(zip(labels, targets, strict=True))


def open_clicked(button: str, choice: str, choices: str) -> None:
    """Open the inspector at once if ``button`` was clicked, on the query chosen in ``choice``.

    Called at the top of a page: the click leaves the page, so computing and drawing the
    page again first would only delay the inspector. ``choices`` holds what
    :func:`remember_choices` kept on the run that drew the selector; a label it does not
    know leaves the page to handle the click itself.
    """
    if not st.session_state.get(button):
        return
    known = st.session_state.get(choices)
    found = known.get(st.session_state.get(choice)) if isinstance(known, Mapping) else None
    if found is not None:
        state.set_inspect_target(*found)
        st.switch_page(navigation.page_file("inspector"))
