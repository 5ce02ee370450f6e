"""MM-BRIGHT failure-analysis dashboard: the entry script (``mmbright app``).

It draws the shared sidebar (data source, task, protocol, runs) and hands over to the page
the user picked; each page is the ``page.py`` of its package (``ui/inspector/``) and only
calls the core's public API.
The repository's ``app.py`` calls :func:`main`, so ``streamlit run app.py`` serves the same app.

Every run leaves one invisible marker in the page, ``<style data-mmb-run="N"
data-mmb-state="S">`` (docs/dashboard.md, "A marker for each run"), so that a browser
waits for a run to finish, never for a time.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import RerunException

from mmbright_core.ui.common import hosts, navigation, runs_panel, sessions, state
from mmbright_core.ui.common.sidebar import render_sidebar

# The tab's icon, drawn here: for a ":material/...:" page icon the browser fetches an SVG
# from fonts.gstatic.com, and the dashboard asks nothing of another host. An SVG page icon
# reaches the page as a data: URL, with no request at all.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24">'
    '<rect width="24" height="24" rx="5" fill="#ff4b4b"/>'
    '<path d="M5 17l4.5-5 3.5 3 6-7" fill="none" stroke="#fff" stroke-width="2.4" '
    'stroke-linecap="round" stroke-linejoin="round"/></svg>'
)
ABOUT = (
    "**MM-BRIGHT failure analysis**: per-query scores, comparisons and the inspector for "
    "runs of the MM-BRIGHT benchmark. The theme (light, dark or the system's) is chosen "
    "in this menu."
)
"""The menu's About text (docs/dashboard.md)."""
RUN_COUNT_KEY = "_run_count"
"""How many script runs this session has started (the marker's N)."""


def main() -> None:
    """Draw the dashboard once: Streamlit calls this on every rerun of the script."""
    # With the minimal toolbar, Streamlit shows its menu (and in it the theme switch) only
    # when an item is set here: the About item keeps light/dark within reach.
    st.set_page_config(
        page_title="MM-BRIGHT dashboard",
        page_icon=ICON,
        layout="wide",
        menu_items={"About": ABOUT},
    )
    run_marked(_draw)


def _draw() -> None:
    """The shared sidebar, then the page the user picked."""
    hosts.guard_host()  # before anything is read: a page for a name not allowed stops here
    state.init_state()
    sessions.watch_session()  # its memory is released once the session ends
    runs_panel.autoload_demo_runs()
    page = st.navigation(navigation.pages())
    render_sidebar()
    page.run()


def run_marked(draw: Callable[[], None]) -> None:
    """Run ``draw`` between this run's markers: "running" before it, "done" or "rerun" after."""
    run = int(st.session_state.get(RUN_COUNT_KEY, 0)) + 1
    st.session_state[RUN_COUNT_KEY] = run
    mark_run(run, "running")
    try:
        draw()
    except RerunException:
        mark_run(run, "rerun")  # st.rerun, st.switch_page: another run follows at once
        raise
    mark_run(run, "done")


def mark_run(run: int, run_state: str) -> None:
    """Say in the page that run ``run`` of the session is ``run_state``.

    Style-only HTML goes to Streamlit's event container: the marker takes no space, a run's
    markers follow each other there, and the next run's replace them. A run ended by
    ``st.stop()`` can send nothing more and stays "running" here: Streamlit's own
    ``data-test-script-state`` says when it has finished.
    """
    st.html(f'<style data-mmb-run="{run}" data-mmb-state="{run_state}"></style>')


if __name__ == "__main__":  # Streamlit runs the entry script as ``__main__``
    main()
