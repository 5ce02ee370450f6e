"""Running a retriever from the dashboard: one domain at a time, with progress and cancel.

Each domain goes through the core's runner (:func:`mmbright_core.retrieval.runner.run_task`),
which writes the official outputs and reuses a domain whose stored configuration matches. A
final call over all the chosen domains therefore only rewrites the summary. Cancelling
reruns the page: Streamlit stops the script at its next call, after the domain in flight;
finished domains stay on disk and are reused by the next run.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from mmbright_core.errors import MMBrightError
from mmbright_core.retrieval import Retriever, get_retriever
from mmbright_core.retrieval.runner import RunOutcome, run_task
from mmbright_core.types import Task
from mmbright_core.ui import loaders, render, state
from mmbright_core.ui.confine import confine

MESSAGES_KEY = "run_page_messages"


@st.cache_resource(max_entries=2, show_spinner="Loading the retriever…")
def retriever(name: str) -> Retriever:
    """Build a retriever once (models and indexes are heavy) and share it."""
    return get_retriever(name)


def cancel() -> None:
    """Cancel button callback: the rerun it triggers stops the run in flight."""
    _say("warning", "Run cancelled. Finished domains are kept on disk and reused next time.")


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGES_KEY] = [*st.session_state.get(MESSAGES_KEY, []), (kind, text)]


def render_messages() -> None:
    """Show (once) what the last run or cancel reported."""
    for kind, text in st.session_state.pop(MESSAGES_KEY, []):
        {"warning": st.warning, "success": st.success}.get(kind, st.error)(
            render.escape_message(text)
        )


def run(
    spec: str, task: Task, protocol: str, name: str, domains: Sequence[str], k: int, out_dir: str
) -> None:
    """Run retriever ``name`` on the chosen domains, then add the run to the session.

    Errors are shown on the page with the core's message; nothing else changes.
    """
    if not domains:
        st.error("Choose at least one domain.")
        return
    try:
        outcome = _run_with_progress(spec, task, protocol, name, domains, k, out_dir)
    except (MMBrightError, OSError) as err:
        st.error(render.escape_message(err), icon=":material/error:")
        return
    except Exception as err:  # a backend's own failure (model, device): report, keep the app up
        message = f"The retriever failed: {type(err).__name__}: {err}"
        st.error(render.escape_message(message), icon=":material/error:")
        if _show_tracebacks():
            with st.expander("Details"):
                st.exception(err)
        return
    config = outcome.config.to_json()
    entry = state.RunEntry(
        name=state.unique_name(retriever(name).label(), task),
        source=spec,
        task=task,
        runs={o.domain: o.run for o in outcome.domains},
        origin=f"retriever: {name} → {outcome.task_dir}",
        fingerprint=state.fingerprint(str(outcome.task_dir), config),
        negatives=outcome.config.negatives,
    )
    state.add_run(entry)
    reused = sum(o.reused for o in outcome.domains)
    _say(
        "success", f"Added run {entry.name!r}: {len(domains)} domain(s), {reused} reused from disk."
    )
    st.rerun()


def _show_tracebacks() -> bool:
    # st.exception ignores client.showErrorDetails; a shared server that hides tracebacks
    # of uncaught errors (README, "Bad input and safety") must not show these either.
    return str(st.get_option("client.showErrorDetails")).lower() in ("full", "true")


def _run_with_progress(
    spec: str, task: Task, protocol: str, name: str, domains: Sequence[str], k: int, out_dir: str
) -> RunOutcome:
    out_dir = str(confine(out_dir, "output folder"))
    source = loaders.get_source(spec)
    backend = retriever(name)
    bar = st.progress(0.0, text=f"Running {name} on {len(domains)} domain(s)…")
    for done, domain in enumerate(domains, start=1):
        run_task(source, task, backend, out_dir, domains=[domain], protocol=protocol, k=k)
        bar.progress(done / len(domains), text=f"{domain} done ({done}/{len(domains)})")
    outcome = run_task(
        source, task, backend, out_dir, domains=list(domains), protocol=protocol, k=k
    )
    bar.empty()
    return outcome
