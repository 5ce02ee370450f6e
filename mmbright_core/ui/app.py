"""MM-BRIGHT failure-analysis dashboard: the entry script (``mmbright app``).

It draws the shared sidebar (data source, task, protocol, runs) and hands over to the page
the user picked; each page lives in ``app_pages/`` and only calls the core's public API.
The repository's ``app.py`` calls :func:`main`, so ``streamlit run app.py`` serves the same app.
"""

from __future__ import annotations

import streamlit as st

from mmbright_core.ui import hosts, navigation, runs_panel, state
from mmbright_core.ui.sidebar import render_sidebar


def main() -> None:
    """Draw the dashboard once: Streamlit calls this on every rerun of the script."""
    st.set_page_config(
        page_title="MM-BRIGHT dashboard", page_icon=":material/insights:", layout="wide"
    )
    hosts.guard_host()  # before anything is read: a page for a name not allowed stops here
    state.init_state()
    runs_panel.autoload_demo_runs()
    page = st.navigation(navigation.pages())
    render_sidebar()
    page.run()


if __name__ == "__main__":  # Streamlit runs the entry script as ``__main__``
    main()
