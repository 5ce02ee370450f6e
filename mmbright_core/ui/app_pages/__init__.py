"""The dashboard's pages, one script each, run by ``st.navigation`` (never imported)."""
