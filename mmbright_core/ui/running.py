"""Running a retriever from the dashboard: progress within each domain, cancel, reuse.

The run goes through the core's runner (:func:`mmbright_core.retrieval.runner.task_run.run_task`) in
one call, which writes the official outputs and reuses a domain whose stored configuration
matches; its ``progress`` hook moves the bar per batch of queries, and its ``guard`` checks
every folder and file it reads or writes against the server's data root. Cancelling reruns
the page: Streamlit stops the script at its next call (the next progress step); finished
domains stay on disk and are reused by the next run. A folder holding another
configuration is never written into: the run goes to the next free ``<subdir>_<n>`` and the
page says where and why. A folder another job is writing (a command in a shell, another
session's run) is not written either: the page says which job holds it
(:mod:`mmbright_core.io.claims`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from mmbright_core.errors import InputError, MMBrightError, escaped_traceback
from mmbright_core.io.claims import Claimant
from mmbright_core.io.recorded import config_differences
from mmbright_core.retrieval import Retriever, get_retriever
from mmbright_core.retrieval.catalogue.preset_run import Chosen, Resolved
from mmbright_core.retrieval.runner.task_run import Progress, RunOutcome, run_task
from mmbright_core.types import Task
from mmbright_core.ui import loaders, run_choice, state
from mmbright_core.ui.confine import Confinement, data_root
from mmbright_core.ui.literal import literal

MESSAGES_KEY = "run_page_messages"

PAGE_JOB = "a run from the dashboard's Run page"
"""What a run of this page is called in its output folder's claim (another job's refusal)."""

OUTPUTS_ENV = "MMBRIGHT_OUTPUTS"
"""The variable naming the Run page's default output folder."""


def installed_plugins() -> list[str]:
    """The retriever names installed packages register (entry points ``mmbright.retrievers``)."""
    from mmbright_core.retrieval.plugins import entry_points

    return sorted(entry_points())


def default_output_folder() -> str:
    """Where runs go unless the user types another folder.

    ``$MMBRIGHT_OUTPUTS`` if set; else ``outputs`` inside ``MMBRIGHT_DATA_ROOT`` on a shared
    server; else the user's data folder, ``$XDG_DATA_HOME/mmbright/outputs`` (by default
    ``~/.local/share/mmbright/outputs``). Never the folder the server happened to start in.
    """
    value = os.environ.get(OUTPUTS_ENV, "").strip()
    if value:
        return value
    try:
        root = data_root()
    except InputError:
        root = None  # the run itself reports the misconfigured root
    if root is not None:
        return str(root / "outputs")
    base = os.environ.get("XDG_DATA_HOME", "").strip() or "~/.local/share"
    return str(Path(base).expanduser() / "mmbright" / "outputs")


@st.cache_resource(max_entries=2, show_spinner="Loading the retriever…")
def retriever(
    name: str,
    options: tuple[tuple[str, Any], ...] = (),
    preset: str | None = None,
    instructions: str | None = None,
) -> Retriever:
    """Build a retriever once (models and indexes are heavy) and share it.

    A preset or an instruction set is recorded in the run's ``config.json`` (:class:`Chosen`).
    """
    built = get_retriever(name, **dict(options))
    if preset is None and instructions is None:
        return built
    return Chosen(built, preset, instructions)


def _built(chosen: Resolved) -> Retriever:
    return retriever(chosen.retriever, _key(chosen.options), chosen.preset, chosen.instructions)


def cancel() -> None:
    """Cancel button callback: the rerun it triggers stops the run in flight."""
    _say("warning", "Run cancelled. Finished domains are kept on disk and reused next time.")


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGES_KEY] = [*st.session_state.get(MESSAGES_KEY, []), (kind, text)]


def render_messages() -> None:
    """Show (once) what the last run or cancel reported."""
    for kind, text in st.session_state.pop(MESSAGES_KEY, []):
        {"warning": st.warning, "success": st.success}.get(kind, st.error)(literal(text))


def run(
    spec: str,
    task: Task,
    protocol: str,
    name: str,
    domains: Sequence[str],
    k: int,
    out_dir: str,
    fields: Mapping[str, str] | None = None,
    preset: str | None = None,
    instructions: str | None = None,
    trust_remote_code: bool = False,
) -> None:
    """Run retriever ``name``, or ``preset``, on the chosen domains; add the run to the session.

    ``trust_remote_code`` is the page's opt-in to a preset's hub code.

    The same configuration run again into the same folder replaces its earlier entry
    (its domains are reused from disk) instead of adding a copy. Errors are shown on the
    page with the core's message; nothing else changes.
    """
    if not domains:
        st.error("Choose at least one domain.")
        return
    try:
        chosen = run_choice.choose(
            name, fields or {}, task, preset, instructions, trust_remote_code
        )
        outcome = _run_with_progress(spec, task, protocol, chosen, domains, k, out_dir)
    except (MMBrightError, OSError) as err:
        st.error(literal(err), icon=":material/error:")
        return
    except Exception as err:  # a backend's own failure (model, device): report, keep the app up
        message = f"The retriever failed: {type(err).__name__}: {err}"
        st.error(literal(message), icon=":material/error:")
        if _show_tracebacks():
            with st.expander("Details"):  # a plugin's message, its controls written out
                st.code(escaped_traceback(err), language=None)
        return
    _add(outcome, spec, task, chosen)
    st.rerun()


def _add(outcome: RunOutcome, spec: str, task: Task, chosen: Resolved) -> None:
    done = [o.domain for o in outcome.domains]
    key = state.fingerprint(str(outcome.task_dir), outcome.config.to_json(), *done)
    same = [n for (t, n), e in state.all_runs().items() if t == task and e.fingerprint == key]
    label = same[0] if same else _run_name(_built(chosen).label(), outcome, task)
    state.add_run(
        state.RunEntry(
            name=label,
            source=spec,
            task=task,
            runs={o.domain: o.run for o in outcome.domains},
            origin=f"{_what(chosen)} → {outcome.task_dir}",
            fingerprint=key,
            negatives=outcome.config.negatives,
            config=outcome.config,  # Home matches a preset run to its published row
            warnings=tuple(f"{o.domain}: {w}" for o in outcome.domains for w in o.warnings),
        )
    )
    reused = sum(o.reused for o in outcome.domains)
    verb = "Updated" if same else "Added"
    _say(
        "success",
        f"{verb} run {label!r}: {len(done)} domain(s), {len(done) - reused} run now, "
        f"{reused} reused from disk. Its files are in {outcome.task_dir}.",
    )
    for o in outcome.domains:  # no silent zeros: what lowered a domain's score, said
        for warning in o.warnings:
            _say("warning", f"{o.domain}: {warning}")
    if outcome.avoided:
        folder, reason = outcome.avoided[0]
        _say(
            "warning",
            f"Wrote to {outcome.task_dir}, not {folder}, which {reason}; that folder is left "
            "as it was.",
        )


def _run_name(label: str, outcome: RunOutcome, task: Task) -> str:
    """The retriever's label, followed where the task has a run so named by what differs.

    ``bm25 · k 5``: the settings in which this run's configuration differs from the one
    already named ``label`` (the source aside), or its folder when the settings are the
    same (a run into another output folder); a number only if that name is taken too.
    """
    taken = state.all_runs().get((task, label))
    if taken is None:
        return label
    now = outcome.config.to_dict()
    # The source is the sidebar's: runs of another source are never shown beside this one.
    before = {} if taken.config is None else taken.config.to_dict()
    differences = [d for d in config_differences(before, now) if d[0] != "source"]
    said = ", ".join(f"{name} {_short(after)}" for name, _, after in differences[:2])
    folder = f"{outcome.task_dir.parent.name}/{outcome.task_dir.name}"
    return state.unique_name(f"{label} · {said or folder}", task)


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"{text[:23]}…"


def _key(options: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(options.items()))


def _what(chosen: Resolved) -> str:
    if chosen.preset is not None:
        return f"preset: {chosen.preset} ({chosen.instructions} instructions)"
    return f"retriever: {chosen.retriever}"


def _show_tracebacks() -> bool:
    # The details are drawn by the page, not by Streamlit; a shared server that hides tracebacks
    # of uncaught errors (docs/safety.md, "Bad input and safety") must not show these either.
    return str(st.get_option("client.showErrorDetails")).lower() in ("full", "true")


def _run_with_progress(
    spec: str,
    task: Task,
    protocol: str,
    chosen: Resolved,
    domains: Sequence[str],
    k: int,
    out_dir: str,
) -> RunOutcome:
    confinement = Confinement.from_env()
    folder = confinement.typed(out_dir, "output folder")
    source = loaders.get_source(spec)
    backend = _built(chosen)
    name = chosen.preset or chosen.retriever
    bar = st.progress(0.0, text=f"Running {literal(name)} on {len(domains):d} domain(s)…")

    def show(step: Progress) -> None:
        where = f"{literal(step.domain)} ({step.index + 1:d}/{step.domains:d})"
        bar.progress(min(step.overall, 1.0), text=f"{where}: {literal(step.step)}")

    try:
        outcome = run_task(
            source,
            task,
            backend,
            folder,
            domains=list(domains),
            protocol=protocol,
            k=k,
            progress=show,
            guard=confinement.output_guard(),
            new_folder=True,  # never over another configuration; the page says where
            claimant=Claimant(job=PAGE_JOB),  # another job writing there: refused, said
        )
    finally:  # an error leaves its message, not a bar stuck half-way (a cancel ends the run)
        bar.empty()
    return outcome
