"""Run a retriever on the chosen task and domains; the new run joins the others when done."""

from __future__ import annotations

import streamlit as st

from mmbright_core.retrieval import DEFAULT_K, available_retrievers
from mmbright_core.ui import loaders, render, running, state

st.title("Run a retriever")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
source = render.attempt(loaders.get_source, spec)
if source is None:
    st.stop()
st.caption(
    "Runs write the official outputs layout (scores.json, metrics.json, summary.json) into the "
    "output folder; a domain already run with the same configuration is reused."
)
name = st.selectbox("Retriever", available_retrievers(), key="run_retriever")
domains = st.multiselect("Domains", source.domains(), default=source.domains(), key="run_domains")
left, right = st.columns(2)
k = left.number_input("Documents kept per query", 1, DEFAULT_K, DEFAULT_K, key="run_k")
out_dir = right.text_input("Output folder", "outputs", key="run_out")
start_col, cancel_col, _ = st.columns([1, 1, 4])
start = start_col.button("Run", key="run_start", type="primary", icon=":material/play_arrow:")
cancel_col.button("Cancel", key="run_cancel", on_click=running.cancel, icon=":material/stop:")
running.render_messages()
if start:
    running.run(spec, task, protocol, name, domains, int(k), out_dir)
