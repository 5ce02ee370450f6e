"""What a run from the Run page runs: the retrievers offered, their fields, or a preset.

The retrievers offered for a task are those whose own ``tasks`` include it (read without
building a model), less ``api``: with it a visitor would spend the key in the server's
environment (docs/safety.md); its owner runs it from the command line. Model fields become
``get_retriever`` options, each local path confined to the server's root (:mod:`.confine`).
A catalogue preset resolves as ``mmbright run --model-preset`` resolves it, a preset that
runs hub code only with the page's opt-in (off by default; :mod:`.remote_code` of retrieval).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from mmbright_core.errors import InputError, MMBrightError
from mmbright_core.retrieval.base import declared_tasks
from mmbright_core.retrieval.catalogue import get_preset
from mmbright_core.retrieval.instructions import DEFAULT_INSTRUCTIONS
from mmbright_core.retrieval.preset_run import Resolved, resolve
from mmbright_core.types import Task
from mmbright_core.ui.confine import Confinement

# Retrievers the page does not offer (see the module's docstring).
COMMAND_LINE_ONLY = frozenset({"api"})
# Offered through their presets only, with the opt-in to hub code beside them.
PRESETS_ONLY = frozenset({"remote"})

# The model options each retriever takes, shown as fields on the page (``mmbright run
# --model / --pretrained``); a checkpoint file is open_clip's ``pretrained`` given as a path.
RETRIEVER_FIELDS: Mapping[str, tuple[str, ...]] = {
    "dense": ("model",),
    "ocr-dense": ("model",),
    "clip": ("model", "pretrained", "checkpoint"),
    "hf": ("model",),
    "mteb": ("model",),
}
_LOCAL_DIR = "local-dir:"


def runnable(names: Sequence[str], task: Task) -> list[str]:
    """The retrievers that can run ``task``.

    Each retriever's tasks are read from the retriever itself without building it
    (:func:`~mmbright_core.retrieval.base.declared_tasks`); one whose tasks depend on its
    model (``hf``, ``mteb``, a plugin) is kept, and the run says if the model cannot.
    """
    hidden = COMMAND_LINE_ONLY | PRESETS_ONLY
    return [n for n in names if n not in hidden and _may_run(n, task)]


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

    Args:
        name: The retriever.
        fields: ``model``, ``pretrained`` and ``checkpoint`` as typed (blank = default).
        confinement: Where local model folders and checkpoint files must lie.

    Raises:
        InputError: Both a pretrained tag and a checkpoint file, or a path outside the root.
    """
    given = {k: v.strip() for k, v in fields.items() if k in RETRIEVER_FIELDS.get(name, ())}
    given = {k: v for k, v in given.items() if v}
    options: dict[str, str] = {}
    model = given.get("model")
    if model is not None:
        options["model"] = _model_path(model, confinement)
    checkpoint = given.get("checkpoint")
    if checkpoint is not None:
        if "pretrained" in given:
            raise InputError(
                "a pretrained tag and a checkpoint file both given",
                expected="one of them",
                found=f"{given['pretrained']!r} and {checkpoint!r}",
                hint="Clear one field",
            )
        path = confinement.typed(checkpoint, "checkpoint file")
        options["pretrained"] = str(confinement.check(path, "checkpoint file", strict=True))
    elif "pretrained" in given:
        options["pretrained"] = given["pretrained"]
    return options


def _model_path(model: str, confinement: Confinement) -> str:
    # A model given as a local folder is read from disk: on a shared server it must lie
    # inside the root like any other folder. A hub name ("BAAI/bge-large-en") is not a path.
    if model.startswith(_LOCAL_DIR):
        folder = confinement.typed(model[len(_LOCAL_DIR) :], "model folder")
        return _LOCAL_DIR + str(confinement.check(folder, "model folder", strict=True))
    looks_local = model.startswith(("/", ".", "~")) or os.path.lexists(model.replace("\0", ""))
    if looks_local:
        return str(confinement.typed(model, "model folder"))
    return model


def choose(
    name: str,
    fields: Mapping[str, str],
    task: Task,
    preset: str | None = None,
    instructions: str | None = None,
    trust_remote_code: bool = False,
) -> Resolved:
    """The retriever and options a run from the page uses: a preset's, else the fields'.

    Args:
        name: The retriever chosen (ignored when a preset is).
        fields: Its model fields as typed, confined like every path (:mod:`.confine`).
        task: The task to run.
        preset: A catalogue preset, run as the official harness runs it.
        instructions: The preset's instruction set (default: ``official``).
        trust_remote_code: The page's opt-in to a preset's hub code (``--trust-remote-code``);
            ``MMBRIGHT_ALLOW_REMOTE_CODE=0`` still forbids it.

    Raises:
        InputError: A bad field, or a preset or instruction set that cannot run ``task``.
    """
    if preset is None:
        return Resolved(name, retriever_options(name, fields, Confinement.from_env()))
    chosen = get_preset(preset)
    return resolve(chosen, task, instructions or DEFAULT_INSTRUCTIONS, trust_remote_code)
