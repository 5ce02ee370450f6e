"""Running a catalogue preset: the retriever name and options it resolves to, and the record.

:func:`resolve` turns a preset, a task and an instruction set into what ``get_retriever``
takes. What of the preset becomes options is the backend's record's (``preset_options``), under
the backend's names: a backend taking prefixes takes the instructions as ``query_prefix`` /
``document_prefix``, or as ``query_prompt`` / ``document_prompt`` where the recipe pools without
the prompt's tokens (``pooling_include_prompt: false``, instructor); the others take
``query_instruction`` / ``document_instruction``, beside ``model``, ``revision``, ``pooling``,
``max_length`` and their recipe's further options as the record lists them.
``--instructions mteb`` runs the preset's model through the ``mteb`` backend, which resolves
MTEB's own prompts; the model's registry entry is checked then, so a set the backend would
refuse is refused at resolution. A multimodal preset gets the
``first`` image policy, the released code's ``images[0]``, which made the published runs.
A preset's pinned revision (``catalogue.json``'s ``revision``) is among the options of the
backends that load a hub model, so the loader loads that commit; :func:`with_flags` lays the
command line's options over it. A preset whose model runs its own hub code resolves only with
``trust_remote_code=True`` (``--trust-remote-code``; :mod:`.remote_code`), and then to options
that pass it on, through MTEB's implementation too (whose loader runs the same code); the
``remote`` backend also takes the preset's ``interface``.

:class:`Chosen` wraps the built retriever so that ``config.json`` records the preset and the
instruction set beside the settings they produced.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.backends.code_gate import gate, needs_opt_in
from mmbright_core.retrieval.backends.instructions import DEFAULT_INSTRUCTIONS, INSTRUCTION_SETS
from mmbright_core.retrieval.backends.mteb_registry import model_meta
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.catalogue.presets import (
    Instructions,
    Preset,
    get_preset,
    preset_for_model,
)
from mmbright_core.types import TaskData


@dataclass(frozen=True)
class Resolved:
    """What a preset runs as.

    Attributes:
        retriever: The registered retriever name.
        options: Its options.
        preset: The preset's name.
        instructions: The instruction set's name.
    """

    retriever: str
    options: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None
    instructions: str | None = None


def check_instruction_set(name: str) -> str:
    """Return ``name`` if it is an instruction set.

    Raises:
        InputError: It is not.
    """
    if name not in INSTRUCTION_SETS:
        raise InputError(
            "unknown instruction set",
            expected=f"one of {', '.join(INSTRUCTION_SETS)}",
            found=repr(name),
        )
    return name


def resolve(
    preset: Preset,
    task: int,
    instructions: str = DEFAULT_INSTRUCTIONS,
    trust_remote_code: bool = False,
) -> Resolved:
    """Return the retriever and options that run ``preset`` on ``task`` as the harness does.

    Args:
        preset: The preset.
        task: The task to run.
        instructions: The instruction set (``official``, ``bright``, ``mteb``, ``none``).
        trust_remote_code: Run a model's own code from the hub, where the preset needs it
            (``--trust-remote-code``; :mod:`.remote_code`).

    Raises:
        InputError: A task the official harness does not run the preset on, an instruction
            set the preset does not have (``mteb``: a model MTEB's backend refuses), or a
            preset needing hub code without the opt-in (or where the operator forbids it).
    """
    check_instruction_set(instructions)
    if task not in preset.tasks:
        raise InputError(
            f"preset {preset.name!r} is not run on task {task} by the official harness",
            expected=f"one of tasks {', '.join(str(t) for t in preset.tasks)}",
            found=f"task {task}",
            hint="Use --retriever with the model's backend to run it elsewhere.",
        )
    via_mteb = instructions == "mteb"
    options = _mteb_options(preset) if via_mteb else None
    if preset.trust_remote_code:  # MTEB's loader runs the same hub code
        _check_hub_code(preset, trust_remote_code, preset.mteb_model if via_mteb else None)
    if options is None:
        options = _backend_options(preset, preset.instructions_for(instructions))
        if preset.multimodal:
            options["image_policy"] = "first"
    if preset.trust_remote_code:
        options["trust_remote_code"] = True
    return Resolved("mteb" if via_mteb else preset.backend, options, preset.name, instructions)


def with_flags(chosen: Resolved, preset: Preset, flags: Mapping[str, Any]) -> Resolved:
    """Return ``chosen`` with the options given beside the preset over its own.

    The preset's pinned revision is its model's: a ``model`` other than the preset's drops it,
    so that no run records a revision its model does not have (a ``revision`` among ``flags``
    pins the other model).
    """
    own = dict(chosen.options)
    if flags.get("model") not in (None, preset.model):
        own.pop("revision", None)
    return Resolved(chosen.retriever, {**own, **flags}, chosen.preset, chosen.instructions)


def _check_hub_code(preset: Preset, trusted: bool, model: str | None) -> None:
    # The operator's switch first, said before a run starts (the loader's gate says it again).
    gate(model or str(preset.model), None if model else preset.revision, True)
    if not trusted:
        raise needs_opt_in(preset.name)


def _mteb_options(preset: Preset) -> dict[str, Any]:
    if preset.mteb_model is None:
        raise InputError(
            f"preset {preset.name!r} has no model in MTEB's registry",
            expected=f"one of instruction sets {', '.join(preset.instruction_sets())}",
            found="--instructions mteb",
        )
    # The registry entry is read (not the weights): a model the mteb backend cannot score as
    # MTEB does (dot product, no dense type) is refused here, before any run starts.
    model_meta(preset.mteb_model, None)
    options: dict[str, Any] = {"model": preset.mteb_model}
    if preset.multimodal:
        options["image_policy"] = "first"
    return options


def _backend_options(preset: Preset, texts: Instructions) -> dict[str, Any]:
    # The backend's record says what of the preset it takes (retrieval/backend_table.py,
    # PresetOption), in order; an unset value is left out.
    options: dict[str, Any] = {}
    for given in BACKENDS[preset.backend].preset_options or ():
        if given == "instructions":
            options.update(_preset_instructions(preset, texts))
        elif given == "options":
            options.update(preset.options)
        else:
            options[given] = getattr(preset, given)
    return _set(options)


def instruction_options(backend: str, texts: Instructions) -> dict[str, str]:
    """Return the options that give ``backend`` these instruction texts."""
    record = BACKENDS.get(backend)
    kind = None if record is None else record.instructions
    if kind == "prefix":
        return {"query_prefix": texts.query, "document_prefix": texts.document}
    if kind == "instruction":
        return {"query_instruction": texts.query, "document_instruction": texts.document}
    return {}


def instructions_without_preset(
    retriever: str, model: str | None, instructions: str
) -> dict[str, str]:
    """Return the options that give ``--retriever R --model M`` instruction set ``instructions``.

    The texts come from the catalogue's preset of that backend and model; ``none`` needs none.

    Raises:
        InputError: The backend takes no instructions, or no preset has that model and the
            set is not ``none``.
    """
    check_instruction_set(instructions)
    if not instruction_options(retriever, Instructions()):
        raise InputError(
            f"retriever {retriever!r} takes no instructions",
            found=f"--instructions {instructions}",
            hint="--instructions applies to dense, hf, mteb and api, and to --model-preset.",
        )
    if instructions == "none":
        return instruction_options(retriever, Instructions())
    preset = preset_for_model(retriever, model)
    if preset is None:
        raise InputError(
            f"the catalogue has no {instructions!r} instructions for this model",
            found=f"--retriever {retriever} --model {model}",
            hint="Run a preset (mmbright models), use --instructions none, or give the "
            "texts with --option query_prefix=... (dense) or query_instruction=...",
        )
    return _preset_instructions(preset, preset.instructions_for(instructions))


def _preset_instructions(preset: Preset, texts: Instructions) -> dict[str, Any]:
    # Instructor's pooling leaves the instruction's tokens out (the official code's
    # set_pooling_include_prompt(False)), which sentence-transformers can only do when the
    # instruction comes as a prompt, not as a prefix glued to the text.
    prefixes = BACKENDS[preset.backend].instructions == "prefix"
    if prefixes and preset.options.get("pooling_include_prompt") is False:
        return {
            "query_prompt": texts.query,
            "document_prompt": texts.document,
            "pooling_include_prompt": False,
        }
    return instruction_options(preset.backend, texts)


def _set(options: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in options.items() if value is not None}


def set_score_scale(retriever: Retriever, scale: float) -> None:
    """Make ``retriever`` write cosine x ``scale``, the scale of its preset's official scores.

    The scale is applied where the scores are made (the vector search), through any wrapper
    that keeps the retriever as ``inner`` (an engine). Ranks and metrics do not change with it
    (docs/protocol.md, Fusion rules).

    Raises:
        InputError: No retriever under ``retriever`` scores by a vector search.
    """
    target: Any = retriever
    while not hasattr(type(target), "score_scale"):
        target = vars(target).get("inner")
        if target is None:
            raise InputError(
                "this retriever has no vector search to scale",
                expected="a dense or dual-encoder retriever",
                found=f"retriever {retriever.name!r}, score scale {scale}",
            )
    target.score_scale = float(scale)


class Chosen:
    """A retriever that records the preset and instruction set it was chosen by.

    Everything but :meth:`settings` is the wrapped retriever's own (attributes too, so
    capabilities such as the Ray engine's corpus encoding stay visible).

    Args:
        inner: The retriever built from the resolved options.
        preset: The preset's name, if one was run.
        instructions: The instruction set's name, if one was chosen.
    """

    def __init__(self, inner: Retriever, preset: str | None, instructions: str | None) -> None:
        self.inner = inner
        self.name, self.tasks = inner.name, inner.tasks
        self.preset, self.instructions = preset, instructions
        scale = None if preset is None else get_preset(preset).score_scale
        if scale is not None:
            set_score_scale(inner, scale)

    def label(self) -> str:
        """Return the wrapped retriever's label."""
        return self.inner.label()

    def settings(self) -> dict[str, Any]:
        """Return the wrapped retriever's settings, plus the preset and instruction set."""
        return {**self.inner.settings(), "preset": self.preset, "instructions": self.instructions}

    def retrieve(self, data: TaskData, source: Any, k: int) -> dict[str, dict[str, float]]:
        """Rank with the wrapped retriever."""
        return self.inner.retrieve(data, source, k)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
