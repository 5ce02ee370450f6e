"""Running a retriever from the dashboard: the ``mmbright run`` command, with progress and cancel.

What the page chose becomes the arguments of ``mmbright run`` (:func:`command`), shown as a
command line one can copy, and the page runs that command through the command line's own
path (:func:`mmbright_core.cli.run.execute`), which writes the official outputs and reuses a
domain whose stored configuration matches; its ``progress`` hook moves the bar per batch of
queries, and its ``guard`` checks every folder and file it reads or writes against the
server's data root. The outputs folder is then loaded as any other run's. Cancelling reruns
the page: Streamlit stops the script at its next call (the next progress step); finished
domains stay on disk and are reused by the next run. A folder holding another
configuration is never written into: the run goes to the next free ``<subdir>_<n>`` and the
page says where and why. A folder another job is writing (a command in a shell, another
session's run) is not written either: the page says which job holds it
(:mod:`mmbright_core.io.claims`).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from mmbright_core.cli import build_parser
from mmbright_core.cli.run import Executed, execute
from mmbright_core.errors import InputError, MMBrightError, escaped_traceback
from mmbright_core.io.claims import Claimant
from mmbright_core.io.recorded import config_differences
from mmbright_core.retrieval import Retriever, get_retriever
from mmbright_core.retrieval.catalogue.preset_run import Resolved
from mmbright_core.retrieval.runner.task_run import Progress, RunOutcome
from mmbright_core.types import Task
from mmbright_core.ui.common import loaders, state
from mmbright_core.ui.common.confine import Confinement, data_root
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.workspace import outputs_entry
from mmbright_core.ui.run import run_choice

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
def retriever(name: str, options: tuple[tuple[str, Any], ...] = ()) -> Retriever:
    """Build a retriever once (models and indexes are heavy) and share it."""
    return get_retriever(name, **dict(options))


def _built(name: str, options: Mapping[str, Any]) -> Retriever:
    return retriever(name, tuple(sorted(options.items())))


@dataclass(frozen=True)
class Choice:
    """What the page runs: a retriever and its model fields, or a preset.

    Attributes:
        name: The retriever chosen (ignored when a preset is).
        fields: Its model fields as typed.
        preset: A catalogue preset, run as the official harness runs it.
        instructions: The preset's instruction set.
        trusted: The page's opt-in to a preset's hub code.
    """

    name: str
    fields: Mapping[str, str] = field(default_factory=dict)
    preset: str | None = None
    instructions: str | None = None
    trusted: bool = False


def command(
    spec: str,
    task: Task,
    protocol: str,
    choice: Choice,
    domains: Sequence[str],
    k: int,
    out_dir: str,
) -> list[str]:
    """The ``mmbright run`` arguments of what the page chose (``mmbright`` itself left out).

    Raises:
        InputError: A field the page refuses (:mod:`.run_choice`), or an output folder
            outside the server's root.
    """
    chosen = run_choice.retriever_arguments(
        choice.name, choice.fields, task, choice.preset, choice.instructions, choice.trusted
    )
    folder = Confinement.from_env().typed(out_dir, "output folder")
    where = ["--source", spec, "--task", str(task), "--protocol", protocol]
    return ["run", *where, *chosen, "--domain", *domains, "--k", str(k), "--out", str(folder)]


def shown(argv: Sequence[str]) -> str:
    """The command line of ``argv`` as a shell reads it."""
    return shlex.join(["mmbright", *argv])


def cancel() -> None:
    """Cancel button callback: the rerun it triggers stops the run in flight."""
    _say("warning", "Run cancelled. Finished domains are kept on disk and reused next time.")


def _say(kind: str, text: str) -> None:
    st.session_state[MESSAGES_KEY] = [*st.session_state.get(MESSAGES_KEY, []), (kind, text)]


def render_messages() -> None:
    """Show (once) what the last run or cancel reported."""
    for kind, text in st.session_state.pop(MESSAGES_KEY, []):
        {"warning": st.warning, "success": st.success}.get(kind, st.error)(literal(text))


def run(spec: str, task: Task, argv: Sequence[str] | Exception) -> None:
    """Run the ``mmbright run`` command ``argv`` and add its outputs to the session.

    ``argv`` is :func:`command`'s arguments, or the error that stopped it from building them.
    The same configuration run again into the same folder replaces its earlier entry (its
    domains are reused from disk) instead of adding a copy. Errors are shown on the page
    with the core's message; nothing else changes.
    """
    try:
        if isinstance(argv, Exception):
            raise argv
        done = _run_with_progress(spec, argv)
        loaded = outputs_entry(done.outcome.task_dir, spec, task)  # as any other run's folder
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
    _add(done, loaded, task)
    st.rerun()


def _add(executed: Executed, loaded: state.RunEntry, task: Task) -> None:
    """Add the run, its outputs folder ``loaded``, named and filed as this page's run."""
    outcome = executed.outcome
    done = [o.domain for o in outcome.domains]
    key = state.fingerprint(str(outcome.task_dir), outcome.config.to_json(), *done)
    same = [n for (t, n), e in state.all_runs().items() if t == task and e.fingerprint == key]
    label = same[0] if same else _run_name(executed.retriever.label(), outcome, task)
    state.add_run(
        dataclasses.replace(
            loaded,
            name=label,
            runs={domain: loaded.runs[domain] for domain in done},  # the domains it ran
            origin=f"{_what(executed.chosen)} → {outcome.task_dir}",
            fingerprint=key,
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


def _what(chosen: Resolved) -> str:
    if chosen.preset is not None:
        return f"preset: {chosen.preset} ({chosen.instructions} instructions)"
    return f"retriever: {chosen.retriever}"


def _show_tracebacks() -> bool:
    # The details are drawn by the page, not by Streamlit; a shared server that hides tracebacks
    # of uncaught errors (docs/safety.md, "Bad input and safety") must not show these either.
    return str(st.get_option("client.showErrorDetails")).lower() in ("full", "true")


def _run_with_progress(spec: str, argv: Sequence[str]) -> Executed:
    args = build_parser().parse_args(argv)
    name = args.model_preset or args.retriever
    bar = st.progress(0.0, text=f"Running {literal(name)} on {len(args.domains):d} domain(s)…")

    def show(step: Progress) -> None:
        where = f"{literal(step.domain)} ({step.index + 1:d}/{step.domains:d})"
        bar.progress(min(step.overall, 1.0), text=f"{where}: {literal(step.step)}")

    try:
        return execute(
            args,
            claimant=Claimant(job=PAGE_JOB),  # another job writing there: refused, said
            source=loaders.get_source(spec),
            build=_built,
            progress=show,
            guard=Confinement.from_env().output_guard(),
            new_folder=True,  # never over another configuration; the page says where
        )
    finally:  # an error leaves its message, not a bar stuck half-way (a cancel ends the run)
        bar.empty()
