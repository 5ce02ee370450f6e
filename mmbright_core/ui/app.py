"""MM-BRIGHT failure-analysis dashboard: the entry point (``streamlit run app.py``).

It draws the shared sidebar (data source, task, protocol, runs) and hands over to the page
the user picked; each page lives in ``app_pages/`` and only calls the core's public API.
"""

from __future__ import annotations

import streamlit as st

from mmbright_core.ui import runs_panel, state
from mmbright_core.ui.sidebar import render_sidebar

PAGES = [
    st.Page("app_pages/home.py", title="Home", icon=":material/home:", default=True),
    st.Page("app_pages/per_query.py", title="Per query", icon=":material/table:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("app_pages/inspector.py", title="Inspector", icon=":material/search:"),
    st.Page("app_pages/run.py", title="Run a retriever", icon=":material/play_arrow:"),
]

st.set_page_config(page_title="MM-BRIGHT dashboard", page_icon=":material/insights:", layout="wide")
state.init_state()
runs_panel.autoload_demo_runs()
navigation = st.navigation(PAGES)
render_sidebar()
navigation.run()
