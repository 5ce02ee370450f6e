"""The dashboard's pages, named once: the files ``st.navigation`` runs and ``st.switch_page`` opens.

Each page is a package of ``mmbright_core/ui/`` whose script is ``page.py`` (``ui/inspector/
page.py``), inside the package, so an installed ``mmbright[app]`` has them. They are addressed
by absolute path: Streamlit resolves a page path relative to the main script, which is
``mmbright_core/ui/app.py`` under ``mmbright app`` but the repository's ``app.py`` under
``streamlit run app.py``; each page's URL path is its package's name, as its file's was. No
folder is named ``pages/``: Streamlit would run a ``pages/`` folder beside the entry script
as a legacy multipage app, bypassing the shared sidebar.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

UI_DIR = Path(__file__).resolve().parent.parent
"""The folder holding one package per page."""

# (package, title, icon); the first page is the default.
_PAGES = (
    ("home", "Home", ":material/home:"),
    ("per_query", "Per query", ":material/table:"),
    ("compare", "Compare", ":material/compare_arrows:"),
    ("inspector", "Inspector", ":material/search:"),
    ("run", "Run a retriever", ":material/play_arrow:"),
)


def page_file(name: str) -> Path:
    """The script of the page ``name`` (``"inspector"``), for ``st.switch_page``."""
    return UI_DIR / name / "page.py"


def pages() -> list[st.Page]:
    """Every page of the dashboard, Home first and default."""
    return [
        st.Page(page_file(name), title=title, icon=icon, url_path=name, default=index == 0)
        for index, (name, title, icon) in enumerate(_PAGES)
    ]
