"""What a run from the Run page runs: the retrievers offered, their fields, or a preset.

The retrievers offered for a task are those whose own ``tasks`` include it (read without
building a model), less ``api``: with it a visitor would spend the key in the server's
environment (docs/safety.md); its owner runs it from the command line. Model fields become
``get_retriever`` options, each local path confined to the server's root (:mod:`.confine`).
What the page chose becomes the retriever part of the ``mmbright run`` command it runs, a
preset that runs hub code only with the page's opt-in (off by default; :mod:`.remote_code`
of retrieval).
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping, Sequence

from mmbright_core.errors import InputError, MMBrightError, show
from mmbright_core.retrieval.backend_table import BACKENDS, Backend
from mmbright_core.retrieval.backends.instructions import DEFAULT_INSTRUCTIONS
from mmbright_core.retrieval.catalogue.presets import get_preset
from mmbright_core.retrieval.registry import available_retrievers, declared_tasks
from mmbright_core.types import Task
from mmbright_core.ui.common.confine import Confinement, check_typed

# Retrievers the page does not offer (see the module's docstring).
COMMAND_LINE_ONLY = frozenset(n for n, b in BACKENDS.items() if b.page == "command-line")
# Offered through their presets only, with the opt-in to hub code beside them.
PRESETS_ONLY = frozenset(n for n, b in BACKENDS.items() if b.page == "presets")
# The model options each retriever takes, shown as fields on the page (``mmbright run
# --model / --pretrained``); a checkpoint file is open_clip's ``pretrained`` given as a path.
RETRIEVER_FIELDS: Mapping[str, tuple[str, ...]] = {
    n: b.fields for n, b in BACKENDS.items() if b.fields
}
# What each built-in retriever imports beyond the ``app`` extra: (extra, module) pairs, as
# its code asks for them (``errors.require``). A preset runs its backend's, and a
# hub-code preset also what its interface needs (the sentence-transformers one, that package).
NEEDS: Mapping[str, tuple[tuple[str, str], ...]] = {
    n: b.needs for n, b in BACKENDS.items() if b.needs
}
_LOCAL_DIR = "local-dir:"
_HUB_PREFIX = "hf-hub:"  # open_clip's model from the hub
# A hub id or registry name, optionally at a revision: ORG/NAME, NAME, NAME@REVISION.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?(@[\w.-]+)?")


def runnable(names: Sequence[str], task: Task) -> list[str]:
    """The retrievers that can run ``task``.

    Each retriever's tasks are read from the retriever itself without building it
    (:func:`~mmbright_core.retrieval.registry.declared_tasks`); one whose tasks depend on its
    model (``hf``, ``mteb``, a plugin) is kept, and the run says if the model cannot.
    """
    hidden = COMMAND_LINE_ONLY | PRESETS_ONLY
    return [n for n in names if n not in hidden and _may_run(n, task)]


def missing_extras(name: str, interface: str | None = None) -> tuple[str, ...]:
    """The extras a retriever (or a preset's backend and interface) needs that are missing.

    A module counts as installed when the import system can find it, without importing
    it (torch takes seconds): what a run would import, it looks up the same way.
    """
    call = BACKENDS[name].interfaces.get(interface or "") if name in BACKENDS else None
    wanted = (*NEEDS.get(name, ()), *(call.needs if call is not None else ()))
    return tuple(dict.fromkeys(extra for extra, module in wanted if not _findable(module)))


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a finder refusing it; a module without a spec
        return False


def install_hint(extras: Sequence[str]) -> str:
    """The command that installs ``extras``: ``pip install 'mmbright[clip]'``."""
    return f"pip install 'mmbright[{','.join(extras)}]'"


def documents_kept(typed: str, most: int) -> int:
    """The page's "Documents kept per query" as a number: a whole number from 1 to ``most``.

    A text field, read here, rather than a number field: the browser keeps a number field's
    last valid value when what is typed is out of range, and a run would go on with it.

    Raises:
        InputError: Anything else, quoted short.
    """
    text = typed.strip().replace(",", "")
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise InputError(
            "documents kept per query must be a whole number",
            expected=f"1 to {most:,}",
            found=show(typed, 40),
        )
    return int(text)


def _may_run(name: str, task: Task) -> bool:
    try:
        tasks = declared_tasks(name)
    except MMBrightError:  # a broken plugin: offered, so that running it shows the error
        return True
    return tasks is None or task in tasks


def retriever_options(
    name: str, fields: Mapping[str, str], confinement: Confinement
) -> dict[str, str]:
    """Turn the page's model fields into ``get_retriever`` options, confining local paths.

    On a shared server (a root configured) a value that names a file must resolve inside
    the root; otherwise it must be a name no loader reads from disk: a hub id
    (``BAAI/bge-large-en-v1.5``, ``hf-hub:ORG/NAME``, ``NAME@REVISION``) or a pretrained
    tag open_clip knows for the model. Every other value is taken as a path inside the root.

    Args:
        name: The retriever.
        fields: ``model``, ``pretrained`` and ``checkpoint`` as typed (blank = default).
        confinement: Where local model folders and checkpoint files must lie.

    Raises:
        InputError: Both a pretrained tag and a checkpoint file, or a path outside the root
            (said the same way whether it exists or not).
    """
    given = {k: v.strip() for k, v in fields.items() if k in RETRIEVER_FIELDS.get(name, ())}
    given = {k: v for k, v in given.items() if v}
    options: dict[str, str] = {}
    model = given.get("model")
    if model is not None:
        options["model"] = _model_path(model, confinement)
    checkpoint, pretrained = given.get("checkpoint"), given.get("pretrained")
    if checkpoint is not None and pretrained is not None:
        raise InputError(
            "a pretrained tag and a checkpoint file both given",
            expected="one of them",
            found=f"{pretrained!r} and {checkpoint!r}",
            hint="Clear one field",
        )
    if checkpoint is not None:
        options["pretrained"] = str(confinement.typed(checkpoint, "checkpoint file", strict=True))
    elif pretrained is not None:
        options["pretrained"] = _pretrained(pretrained, name, model, confinement)
    return options


def _model_path(model: str, confinement: Confinement) -> str:
    # A model given as a local folder is read from disk: on a shared server it must lie
    # inside the root like any other folder. A hub name ("BAAI/bge-large-en") is not a path,
    # but no longer than one either.
    check_typed(model, "model")
    if model.startswith(_LOCAL_DIR):
        folder = confinement.typed(model[len(_LOCAL_DIR) :], "model folder", strict=True)
        return _LOCAL_DIR + str(folder)
    if confinement.root is None:
        looks_local = model.startswith(("/", ".", "~")) or os.path.lexists(model)
        return str(confinement.typed(model, "model folder")) if looks_local else model
    # Loaders try a name as a folder first (relative to the server's working folder, which
    # may lie outside the root): a name that exists there, or in the root, is a path, taken
    # inside the root; only a name that is no path anywhere goes to the hub as an id.
    hub = _HUB_ID.fullmatch(model.removeprefix(_HUB_PREFIX)) and ".." not in model
    if hub and not any(os.path.lexists(p) for p in (model, confinement.root / model)):
        return model
    return str(confinement.typed(model, "model folder", strict=True))


def _pretrained(tag: str, name: str, model: str | None, confinement: Confinement) -> str:
    # open_clip loads any file path given as a tag: on a shared server only the tags it
    # knows for this model (the backend's default when the field is blank) stay tags, with
    # the values that name no file, and anything else is a checkpoint inside the root.
    backend = BACKENDS[name]
    model = model or backend.default_model
    if confinement.root is None or tag in backend.pretrained_words:
        return tag
    known = _known_tags(backend, model)
    if tag in known:
        return tag
    path = confinement.typed(tag, "pretrained tag")
    if not path.is_file():
        raise InputError(
            f"the pretrained tag is not one open_clip knows for {model}, nor a file",
            expected=f"one of {', '.join(known) or 'none'}, or a checkpoint file "
            f"inside {confinement.root}",
            found=repr(tag),
            hint="Type a tag of the model (open_clip.list_pretrained()), or leave it blank",
        )
    return str(path)


def _known_tags(backend: Backend, model: str) -> list[str]:
    listed = getattr(importlib.import_module(backend.module), str(backend.pretrained_tags))
    tags: list[str] = listed(model)
    return tags


def _offered(name: str, task: Task) -> None:
    # The page offers registered names only; a MODULE:FACTORY spec would import any module
    # the server can see, so one that reaches the server by another way is refused here.
    if name not in runnable(available_retrievers(), task):
        raise InputError(
            "the Run page runs only the retrievers it offers",
            expected=f"one of {', '.join(runnable(available_retrievers(), task))}",
            found=repr(name),
            hint="A MODULE:FACTORY plugin runs from the command line (mmbright run "
            "--retriever MODULE:FACTORY), or here once a package registers it (docs/plugins.md)",
        )


def retriever_arguments(
    name: str,
    fields: Mapping[str, str],
    task: Task,
    preset: str | None = None,
    instructions: str | None = None,
    trust_remote_code: bool = False,
) -> list[str]:
    """The retriever part of the ``mmbright run`` command the page runs: a preset, else the fields.

    Args:
        name: The retriever chosen (ignored when a preset is).
        fields: Its model fields as typed, confined like every path (:mod:`.confine`).
        task: The task to run.
        preset: A catalogue preset, run as the official harness runs it.
        instructions: The preset's instruction set (default: ``official``).
        trust_remote_code: The page's opt-in to a preset's hub code (``--trust-remote-code``);
            ``MMBRIGHT_ALLOW_REMOTE_CODE=0`` still forbids it.

    Raises:
        InputError: A bad field, or a retriever or preset the page does not run.
    """
    if preset is None:
        _offered(name, task)
        options = retriever_options(name, fields, Confinement.from_env())
        return ["--retriever", name, *(a for o, v in options.items() for a in (f"--{o}", v))]
    if get_preset(preset).backend in COMMAND_LINE_ONLY:
        raise InputError(
            f"the Run page does not run {get_preset(preset).backend} presets",
            found=repr(preset),
            hint="Run it from the command line: mmbright run --model-preset NAME",
        )
    chosen = ["--model-preset", preset, "--instructions", instructions or DEFAULT_INSTRUCTIONS]
    return [*chosen, "--trust-remote-code"] if trust_remote_code else chosen
