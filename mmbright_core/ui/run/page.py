"""Run a retriever on the chosen task and domains; the new run joins the others when done.

The page builds the ``mmbright run`` command of what is chosen, shows it, and runs it.
"""

from __future__ import annotations

import streamlit as st

from mmbright_core.errors import MMBrightError
from mmbright_core.retrieval import available_retrievers
from mmbright_core.retrieval.backends.code_gate import remote_code_allowed
from mmbright_core.retrieval.catalogue.presets import get_preset
from mmbright_core.task_table import RUN_DEPTH
from mmbright_core.ui.common import loaders, presets, render, state
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.run import run_choice, running

KINDS = ("Retriever", "Model preset")

FIELD_LABELS = {
    "model": (
        "Model",
        "A model name, a hub id, or a local folder (clip: local-dir:<folder>; mteb: a name of "
        "MTEB's registry, e.g. mteb/baseline-random-encoder, optionally @REVISION)",
    ),
    "pretrained": ("Pretrained tag", "open_clip's tag (openai, laion2b_s32b_b82k) or none"),
    "checkpoint": ("Checkpoint file", "A local open_clip checkpoint (instead of a tag)"),
}

st.title("Run a retriever")
spec, task, protocol = state.source_spec(), state.current_task(), state.current_protocol()
source = render.attempt(loaders.get_source, spec)
if source is None:
    st.stop()
st.caption(
    "Runs write the official outputs layout (scores.json, metrics.json, summary.json) into the "
    "output folder; a domain already run with the same configuration is reused. A folder "
    "holding another configuration is left as it is: the run goes to a new one beside it "
    "(…_2, …_3)."
)
kind = st.radio("Run", KINDS, key="run_kind", horizontal=True)
preset = instructions = None
trusted = False
fields: tuple[str, ...] = ()
missing: tuple[str, ...] = ()


def _unavailable(label: str, extras: tuple[str, ...]) -> str:
    return f"{label} · unavailable: needs {run_choice.install_hint(extras)}" if extras else label


if kind == KINDS[1]:
    offered = presets.offered(task, run_choice.COMMAND_LINE_ONLY)
    preset = st.selectbox(
        f"Model preset (those the official harness runs on task {task})",
        [p.name for p in offered],
        format_func=lambda n: _unavailable(
            presets.label(get_preset(n)),
            run_choice.missing_extras(get_preset(n).backend, get_preset(n).interface),
        ),
        key="run_preset",
        help="The models of the paper's tables, run as the official harness runs them",
    )
    if preset is not None:
        chosen = get_preset(preset)
        missing = run_choice.missing_extras(chosen.backend, chosen.interface)
        instructions = st.selectbox(
            "Instructions",
            chosen.instruction_sets(),
            key="run_instructions",
            help="official: what the released harness passes (the default); bright: BRIGHT's "
            "per-domain instructions; mteb: MTEB's prompts, through the mteb backend; none",
        )
        st.caption(presets.summary(chosen))
        for caution in presets.cautions(chosen):
            st.warning(caution, icon=":material/info:")
        if chosen.trust_remote_code:
            trusted = st.checkbox(
                "Run the model's own code from the hub",
                key="run_trust_remote_code",
                disabled=not remote_code_allowed(),
                help=presets.REMOTE_CODE_HELP,
            )
    name = preset
else:
    names = run_choice.runnable(available_retrievers(), task)
    name = st.selectbox(
        f"Retriever (those that run task {task})",
        names,
        key="run_retriever",
        format_func=lambda n: _unavailable(n, run_choice.missing_extras(n)),
    )
    missing = run_choice.missing_extras(str(name))
    plugins = running.installed_plugins()
    st.caption(
        f"Installed plugins: {', '.join(literal(p) for p in plugins)}."
        if plugins
        else "No retriever plugins installed. Your own model runs with `mmbright run --retriever "
        "MODULE:FACTORY`, or appears here once a package registers it (docs/plugins.md)."
    )
    fields = run_choice.RETRIEVER_FIELDS.get(str(name), ())
domains = st.multiselect("Domains", source.domains(), default=source.domains(), key="run_domains")
typed: dict[str, str] = {}
for column, field in zip(st.columns(3), fields, strict=False):
    label, help_text = FIELD_LABELS[field]
    typed[field] = column.text_input(label, "", key=f"run_{field}", help=help_text)
left, right = st.columns(2)
typed_k = left.text_input(
    "Documents kept per query",
    str(RUN_DEPTH),
    key="run_k",
    help=f"A whole number from 1 to {RUN_DEPTH:,}",
)
k = render.attempt(run_choice.documents_kept, typed_k, RUN_DEPTH)
out_dir = right.text_input(
    "Output folder",
    running.default_output_folder(),
    key="run_out",
    help=f"Default: ${running.OUTPUTS_ENV}, else the user's data folder",
)
if missing:
    st.warning(
        literal(
            f"{name} cannot run on this server: it needs the optional packages of "
            f"{run_choice.install_hint(missing)}, which are not installed."
        ),
        icon=":material/block:",
    )
argv: list[str] | Exception | None = None
if name is not None and k is not None and domains:
    choice = running.Choice(str(name), typed, preset, instructions, trusted)
    try:
        argv = running.command(spec, task, protocol, choice, domains, int(k), out_dir)
    except (MMBrightError, OSError) as err:
        argv = err  # said when Run is clicked
if isinstance(argv, list):
    st.caption("The command this runs:")
    st.code(running.shown(argv), language="bash")
start_col, cancel_col, _ = st.columns([1, 1, 4])
start = start_col.button(
    "Run",
    key="run_start",
    type="primary",
    icon=":material/play_arrow:",
    disabled=bool(missing) or k is None,
)
cancel_col.button("Cancel", key="run_cancel", on_click=running.cancel, icon=":material/stop:")
running.render_messages()
if start and name is not None and k is not None:
    if argv is None:
        st.error("Choose at least one domain.")
    else:
        running.run(spec, task, argv)
