"""Widgets that keep their value across pages, and the choices of runs built on them.

Streamlit forgets a widget's value when a run does not draw it (switching pages interrupts
the run that drew the sidebar), so a widget made sticky keeps its value under a second key
of the session (:func:`~mmbright_core.ui.common.state.remembered`), copied back each time it is
drawn. The keys themselves are named in :mod:`mmbright_core.ui.common.state`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

import streamlit as st

from mmbright_core.ui.common import state
from mmbright_core.ui.common.literal import visible


class Kept(TypedDict):
    """The arguments that make a widget sticky: its key, and :func:`remember` on each change."""

    key: str
    on_change: Callable[[str], None]
    args: tuple[str]


def sticky(key: str, default: object) -> Kept:
    """Seed a widget from its remembered value; return the arguments to draw it with.

    ``st.text_input(label, **sticky(key, ""))`` draws the widget under ``key``, and
    :func:`remember` keeps each new value it is given.
    """
    value = state.remembered(key, default)
    state.keep(key, value)
    st.session_state[key] = value
    return {"key": key, "on_change": remember, "args": (key,)}


def remember(key: str) -> None:
    """Widget callback: remember the widget's new value (see :func:`sticky`)."""
    state.keep(key, st.session_state[key])


def sticky_within(key: str, options: Sequence[object]) -> Kept:
    """Seed a multiselect from its remembered values among ``options`` (see :func:`sticky`).

    A value no longer offered (a domain of another source) is dropped rather than refused.
    """
    kept = state.remembered(key, [])
    state.keep(key, [v for v in kept if v in options] if isinstance(kept, list) else [])
    return sticky(key, [])


def sticky_range(key: str, low: float, high: float) -> Kept:
    """Seed a range slider from its remembered range, cut to ``[low, high]`` (:func:`sticky`)."""
    kept = state.remembered(key)
    start, end = kept if isinstance(kept, tuple) and len(kept) == 2 else (low, high)
    start, end = min(max(start, low), high), max(min(end, high), low)
    state.keep(key, (start, end))
    return sticky(key, (low, high))


def pick(key: str, value: str) -> str:
    """Seed a selectbox with ``value`` before it is drawn and return its key."""
    st.session_state[key] = value
    return key


def remember_as(key: str, shared: str) -> None:
    """Widget callback: remember the widget's new value under a key shared by pages."""
    state.keep(shared, st.session_state[key])


def pick_run(
    where: object,
    label: str,
    names: Sequence[str],
    key: str,
    shared: str,
    first: str,
    help: str | None = None,
) -> str:
    """A selectbox of runs that opens on ``first`` and keeps its choice for every page.

    Args:
        where: The container drawn into (a column, ``st``).
        label: The widget's label.
        names: The runs offered.
        key: The widget's key on this page.
        shared: The key the choice is remembered under, the same on every page
            (:data:`state.RUN_A_KEY`, :data:`state.RUN_B_KEY`).
        first: The run shown (:func:`run_pair`).
        help: The widget's tooltip.
    """
    chosen = where.selectbox(  # type: ignore[attr-defined]
        label,
        names,
        key=pick(key, first),
        on_change=remember_as,
        args=(key, shared),
        help=help,
        format_func=visible,
    )
    return str(chosen)


def run_pair(names: Sequence[str], b_optional: bool = False) -> tuple[str, str]:
    """Runs A and B as last chosen on any page, else the first two runs of ``names``.

    Every page starts from the same pair and keeps the user's choice (Per query and
    Compare share it; the inspector walks its most-hurt queries).

    Args:
        names: The runs the page offers (not empty).
        b_optional: The page offers :data:`state.NO_RUN` for B, and keeps it when chosen.

    Returns:
        ``(a, b)``: ``b`` is another run than ``a``, or :data:`state.NO_RUN` when there is none
        (or when it was chosen on a page where it is offered).
    """
    a = state.remembered(state.RUN_A_KEY)
    a = a if a in names else names[0]
    others = [n for n in names if n != a]
    b = state.remembered(state.RUN_B_KEY)
    if b in others or (b_optional and b == state.NO_RUN):
        return str(a), str(b)
    return str(a), others[0] if others else state.NO_RUN


def sticky_runs(key: str, names: Sequence[str], default: Sequence[str]) -> str:
    """Seed a multiselect of runs from the runs last chosen in it; return its key.

    The choice is remembered with the task it was made on (:func:`remember_runs`). On that
    task it stands as made, even when empty; on another task the chosen runs it also has
    are kept, and ``default`` stands in when it has none of them (a task without runs
    leaves the next task its default, not an empty choice).
    """
    kept = state.remembered(key)
    task, before = kept if isinstance(kept, tuple) else (None, [])
    chosen = [n for n in before if n in names]
    st.session_state[key] = chosen if task == state.current_task() else chosen or list(default)
    return key


def remember_runs(key: str) -> None:
    """Widget callback: remember a run multiselect's choice with its task (:func:`sticky_runs`)."""
    state.keep(key, (state.current_task(), list(st.session_state[key])))
