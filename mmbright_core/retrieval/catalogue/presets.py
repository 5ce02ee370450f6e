"""The model catalogue: the models of the paper's tables as named presets, kept as data.

``catalogue.json`` beside this module holds one record per model the official harness runs
(its ``--model`` names: ``contriever``, ``gme-qwen2-vl-7b``...): the checkpoint, the backend
that runs it here, pooling, truncation, the image fusion, the instructions of each instruction
set, the tasks it runs and the published averages it should reproduce, named by task and the
paper's model (their values are kept once, in :mod:`~mmbright_core.retrieval.catalogue.reference`).
:func:`load_catalogue` checks it whole (a preset naming an unknown backend, fusion, pooling or
instruction set, a task outside 1-4, or a published number that ``reference.json`` lacks fails
the load), and :func:`resolve` turns a preset into the retriever name and options a run uses.

The official harness pins no revision. A hub model is pinned here to the revision MTEB's model
registry lists for it, and ``revision_source`` names the registry's version, entry and file; a
model the registry lacks stays unpinned, ``revision_source`` saying why. No hash is invented: a
test checks each pin against the registry itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backend_table import BACKENDS, PRESET_BACKENDS, canonical_name
from mmbright_core.retrieval.catalogue.pinning import COMMIT
from mmbright_core.retrieval.catalogue.reference import load_reference
from mmbright_core.task_table import TASKS

FUSIONS = ("raw-mean", "zero-image", "normalised-mean", "joint", "text")
"""The named fusion rules of text and image vectors (``text``: a text-only model)."""
POOLINGS = ("last-token", "mean", "cls")
"""Poolings a preset may name; none means the model's own code pools."""
OFFLINE = ("tested", "untested", "hub-code", "api")
"""How far a preset's code path runs offline (see :attr:`Preset.offline`)."""
STORED_SETS = ("official", "bright")
"""The instruction sets the catalogue stores the texts of (``none`` is empty; MTEB has its own)."""
_FILE = "catalogue.json"


@dataclass(frozen=True)
class Published:
    """A published average a preset should reproduce.

    Attributes:
        task: The task number.
        model: The model's name in ``reference.json`` (the paper's column).
        value: nDCG@10 x100, mean over the 29 domains, as ``reference.json`` holds it.
    """

    task: int
    model: str
    value: float


@dataclass(frozen=True)
class UpstreamBug:
    """A defect of the official code that changes a published number (not reproduced here).

    Attributes:
        task: The task whose official number it changes.
        effect: What the official code does, and what it means for comparing with it.
    """

    task: int
    effect: str


@dataclass(frozen=True)
class Instructions:
    """The instruction texts of one set: put before every query and every document."""

    query: str = ""
    document: str = ""


@dataclass(frozen=True)
class Preset:
    """One model as the official harness runs it.

    Attributes:
        name: The official harness's ``--model`` name.
        paper: The model's name in the paper's tables.
        model: Hub id or backend model name (None for BM25).
        revision: The hub commit the model is pinned to (None: unpinned, or no hub model).
        revision_source: Where the pinned revision comes from (MTEB's model registry: its
            version, entry and file), or why there is none.
        backend: The retriever name that runs it here.
        interface: For a model whose hub code encodes, the call into that code (one of
            :attr:`.backend_table.Backend.interfaces`); None for the others.
        pooling: ``last-token``, ``mean``, ``cls``, or None (the model's own code pools).
        max_length: Token truncation (None: the model's own).
        fusion: The fusion rule of text and image vectors (``text`` for text models).
        score_scale: What the official code multiplies the cosine by in the scores it writes
            (1 or 100; None for BM25, which has no cosine): the written ``scores.json`` is on
            that scale (docs/protocol.md, Fusion rules).
        tasks: The tasks the official harness runs it on.
        instructions: The stored instruction sets (``official``, and ``bright`` where BRIGHT
            has configurations for the model).
        mteb_model: The model's name in MTEB's registry, if it has one.
        published: The published averages it should reproduce.
        trust_remote_code: Whether loading it runs code from the hub.
        offline: ``tested`` (its code path runs offline in the tests, on tiny random weights
            of the same architecture), ``untested`` (runs offline, but no test runs it on
            such weights), ``hub-code`` (needs the hub's code: checkable offline
            only up to loading) or ``api`` (an endpoint).
        architecture: What runs, in words.
        parameters: Parameter count, for time estimates (None: unknown or remote).
        passage_tokens: Estimated tokens per passage at its truncation, or ``"long"``.
        source: The official file and function it follows.
        departures: Where this preset departs from the official harness, and why.
        upstream_bugs: Defects of the official code that change its published number and
            that mmbright does not reproduce (it encodes what the data holds).
        options: Further backend options of its recipe.
        batching: How it batches texts and how the official code does, cited, where the two
            were compared (None: its backend's default batch, not compared).
    """

    name: str
    paper: str
    model: str | None
    revision: str | None
    revision_source: str
    backend: str
    interface: str | None
    pooling: str | None
    max_length: int | None
    fusion: str
    score_scale: int | None
    tasks: tuple[int, ...]
    instructions: Mapping[str, Instructions]
    mteb_model: str | None
    published: tuple[Published, ...]
    trust_remote_code: bool
    offline: str
    architecture: str | None
    parameters: int | None
    passage_tokens: int | str | None
    source: str
    departures: tuple[str, ...]
    upstream_bugs: tuple[UpstreamBug, ...]
    options: Mapping[str, Any]
    batching: str | None = None

    @property
    def batch_composition(self) -> str:
        """Say how a run of this preset batches its texts (docs/models.md, ``mmbright models``)."""
        size = self.options.get("batch_size")
        if self.batching is not None:
            return self.batching
        if size is not None:
            return f"{size} per forward pass (not compared with the official code's batches)"
        return "the backend's default batch (not compared with the official code's batches)"

    @property
    def multimodal(self) -> bool:
        """Whether its queries fuse text with an image."""
        return self.fusion != "text"

    def instruction_sets(self) -> tuple[str, ...]:
        """Return the instruction sets a run of this preset can name."""
        stored = [s for s in STORED_SETS if s in self.instructions]
        return (*stored, *(("mteb",) if self.mteb_model else ()), "none")

    def instructions_for(self, name: str) -> Instructions:
        """Return the texts of instruction set ``name`` (``none``: empty).

        Raises:
            InputError: The preset has no such set (``mteb``: resolved by MTEB, not stored).
        """
        if name == "none":
            return Instructions()
        if name not in self.instructions:
            raise InputError(
                f"preset {self.name!r} has no {name!r} instructions",
                expected=f"one of {', '.join(self.instruction_sets())}",
                found=name,
                hint="BRIGHT ships instructions for some of its models only; "
                "MTEB's prompts are applied by --instructions mteb through the mteb backend.",
            )
        return self.instructions[name]


@lru_cache(maxsize=1)
def load_catalogue() -> tuple[Preset, ...]:
    """Load and check the packaged catalogue.

    Raises:
        InputError: A preset that names an unknown backend, fusion, pooling, instruction set
            or offline status, a task outside 1-4, a duplicate name, a published number
            that ``reference.json`` lacks, or a revision that is not a commit.
    """
    text = resources.files("mmbright_core.retrieval.catalogue").joinpath(_FILE).read_text("utf-8")
    reference = _paper_numbers()
    presets = tuple(_preset(record, reference) for record in json.loads(text)["presets"])
    check_catalogue(presets)
    return presets


def check_catalogue(presets: Sequence[Preset]) -> None:
    """Check a catalogue: names unique, choices known, numbers as reference, revisions commits.

    Raises:
        InputError: The first inconsistency found, naming the preset.
    """
    reference = _paper_numbers()
    seen: set[str] = set()
    for preset in presets:
        if preset.name in seen:
            raise InputError("duplicate preset", source=_FILE, found=repr(preset.name))
        seen.add(preset.name)
        _check_choices(preset)
        _check_revision(preset)
        for number in preset.published:
            if reference.get((number.task, number.model)) != number.value:
                raise InputError(
                    f"preset {preset.name!r}: published number not in reference.json",
                    source=_FILE,
                    expected=f"task {number.task} {number.model!r} = "
                    f"{reference.get((number.task, number.model))}",
                    found=str(number.value),
                    hint="Add the paper's number to retrieval/catalogue/reference.json with "
                    "its source.",
                )


def _paper_numbers() -> dict[tuple[int, str], float]:
    """``(task, model)`` -> the paper's published average (``reference.json``)."""
    return {(r.task, r.model): r.value for r in load_reference() if r.source == "paper"}


def _check_choices(preset: Preset) -> None:
    if preset.backend not in PRESET_BACKENDS:
        raise InputError(
            f"preset {preset.name!r}: unknown backend",
            source=_FILE,
            expected=f"one of {', '.join(PRESET_BACKENDS)}",
            found=repr(preset.backend),
        )
    backend = BACKENDS[preset.backend]
    choices: list[tuple[str, Sequence[Any], Sequence[Any]]] = [
        ("fusion", FUSIONS, [preset.fusion]),
        ("pooling", (*POOLINGS, None), [preset.pooling]),
        ("offline", OFFLINE, [preset.offline]),
        ("task", TASKS, preset.tasks or [None]),
        ("instruction set", STORED_SETS, list(preset.instructions)),
        # BM25 has no cosine to scale; every vector search writes cosine or cosine x 100.
        ("score scale", (1, 100) if backend.scaled else (None,), [preset.score_scale]),
    ]
    if backend.interfaces:
        choices.append(("interface", tuple(backend.interfaces), [preset.interface]))
    for kind, known, values in choices:
        for value in values:
            if value not in known:
                raise InputError(
                    f"preset {preset.name!r}: unknown {kind}",
                    source=_FILE,
                    expected=f"one of {', '.join(str(k) for k in known)}",
                    found=repr(value),
                )
    if preset.interface is not None and not backend.interfaces:
        raise InputError(
            f"preset {preset.name!r}: the {backend.name} backend takes no interface",
            source=_FILE,
            expected=f"a backend with interfaces ({_with_interfaces()}), or no interface",
            found=f"interface {preset.interface}",
        )
    if "official" not in preset.instructions:
        raise InputError(
            f"preset {preset.name!r} has no official instructions",
            source=_FILE,
            hint='Give "official": {"query": "", "document": ""} where the harness passes none.',
        )


def _check_revision(preset: Preset) -> None:
    if preset.revision is not None and not COMMIT.fullmatch(preset.revision):
        raise InputError(
            f"preset {preset.name!r}: a revision that is not a commit",
            source=_FILE,
            expected="40 lowercase hex digits, the hub commit the model is pinned to",
            found=repr(preset.revision),
            hint="A branch or tag moves; pin the commit (MTEB's model registry lists them).",
        )
    if not preset.revision_source.strip():
        raise InputError(
            f"preset {preset.name!r}: no revision_source",
            source=_FILE,
            hint="Say where the revision comes from, or why the model is unpinned.",
        )


def _with_interfaces() -> str:
    return ", ".join(name for name, backend in BACKENDS.items() if backend.interfaces)


def _preset(record: Mapping[str, Any], reference: Mapping[tuple[int, str], float]) -> Preset:
    """Build a preset from its record, its published numbers' values read from ``reference``."""
    try:
        return Preset(
            name=str(record["name"]),
            paper=str(record["paper"]),
            model=record["model"],
            revision=record["revision"],
            revision_source=str(record["revision_source"]),
            backend=canonical_name(str(record["backend"])),
            interface=record["interface"],
            pooling=record["pooling"],
            max_length=record["max_length"],
            fusion=str(record["fusion"]),
            score_scale=record["score_scale"],
            tasks=tuple(int(t) for t in record["tasks"]),
            instructions={k: Instructions(**v) for k, v in record["instructions"].items()},
            mteb_model=record["mteb_model"],
            published=tuple(
                _published(str(record["name"]), int(p["task"]), str(p["model"]), reference)
                for p in record["published"]
            ),
            trust_remote_code=bool(record["trust_remote_code"]),
            offline=str(record["offline"]),
            architecture=record["architecture"],
            parameters=record["parameters"],
            passage_tokens=record["passage_tokens"],
            source=str(record["source"]),
            departures=tuple(record["departures"]),
            upstream_bugs=tuple(
                UpstreamBug(int(b["task"]), str(b["effect"])) for b in record["upstream_bugs"]
            ),
            options=dict(record["options"]),
            batching=record.get("batching"),
        )
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(
            "malformed preset", source=_FILE, found=f"{record.get('name')!r}: {err!r}"
        ) from err


def _published(
    name: str, task: int, model: str, reference: Mapping[tuple[int, str], float]
) -> Published:
    """The published number a preset names, its value read from ``reference``.

    Raises:
        InputError: ``reference.json`` holds no paper number for ``task`` and ``model``.
    """
    if (task, model) not in reference:
        raise InputError(
            f"preset {name!r}: published number not in reference.json",
            source=_FILE,
            expected=f"a model of the paper's Task {task} table in reference.json",
            found=repr(model),
            hint="Add the paper's number to retrieval/catalogue/reference.json with its source.",
        )
    return Published(task, model, reference[(task, model)])


def presets(task: int | None = None) -> tuple[Preset, ...]:
    """Return every preset, or those the official harness runs on ``task``."""
    return tuple(p for p in load_catalogue() if task is None or task in p.tasks)


def get_preset(name: str) -> Preset:
    """Return the preset called ``name``.

    Raises:
        UnknownNameError: No preset has that name (with close matches).
    """
    for preset in load_catalogue():
        if preset.name == name:
            return preset
    raise UnknownNameError("model preset", name, [p.name for p in load_catalogue()])


def preset_for_model(backend: str, model: str | None) -> Preset | None:
    """Return the preset a ``--retriever BACKEND --model MODEL`` run matches, if any."""
    for preset in load_catalogue():
        if preset.backend == backend and preset.model == model:
            return preset
    return None
