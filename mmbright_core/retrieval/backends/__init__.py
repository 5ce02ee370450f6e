"""The built-in backends, one record each: everything the package knows of a backend by name.

A :class:`Backend` says where its factory lives (imported on first use, so a backend's heavy
dependencies load only when it is asked for), how a run of it is rebuilt from ``config.json``
or why it cannot be, how a catalogue preset becomes its options and how it takes instruction
texts, the model fields the Run page shows for it and whether the page offers it, and what it
imports beyond the ``app`` extra. The registry, the catalogue's checks, the preset runner, the
Run page and the command line's help all read :data:`BACKENDS`; none names a backend
otherwise. A new built-in backend is its module, its record here and its tests.

This module imports nothing of the package but the task table, so every layer may read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from mmbright_core.task_table import (
    IMAGE_QUERY_TEXT_TASKS,
    PASSAGE_TASKS,
    TASKS,
    TEXT_CORPUS_TASKS,
)

PresetRecipe = Literal["none", "model", "dense", "zoo", "zoo-by-characters"]
"""How a preset becomes a backend's options (``retrieval/catalogue/preset_run.py``): ``none`` takes
no options (BM25's parameters are the official ones by default); ``model`` takes the checkpoint and
the preset's own options; ``dense`` takes sentence-transformers' names (the instructions as
prefixes or prompts, ``max_length``); ``zoo`` takes the model zoo's names (``model``,
``revision``, ``pooling``, ``max_length``, the instructions, the hub-code ``interface``);
``zoo-by-characters`` the same less ``pooling`` and ``max_length`` (an endpoint cuts by
characters, ``max_chars``)."""
InstructionOptions = Literal["prefix", "instruction"]
"""How a backend takes instruction texts: ``query_prefix`` / ``document_prefix``, or
``query_instruction`` / ``document_instruction``."""
Page = Literal["offered", "presets", "command-line"]
"""Where the Run page offers a backend: as a retriever with its fields, through its presets
only (with the opt-in to hub code beside them), or not at all (``api`` would spend the key in
the server's environment: docs/safety.md)."""


@dataclass(frozen=True)
class Backend:
    """One built-in backend.

    Attributes:
        name: The name ``--retriever`` and ``get_retriever`` answer to.
        module: The module of its factory and rebuild recipe.
        factory: The factory's attribute in ``module``.
        rebuild: The rebuild recipe's attribute in ``module`` (``retrieval/runner/rebuild.py``), or
            None.
        not_rebuildable: Why its runs cannot be rebuilt, where ``rebuild`` is None.
        preset_recipe: How a catalogue preset becomes its options; None: no preset runs on it.
        instructions: How it takes instruction texts; None: it takes none.
        fields: The model options the Run page shows as fields (``checkpoint``: open_clip's
            ``pretrained`` given as a file).
        page: Where the Run page offers it.
        needs: What it imports beyond the ``app`` extra, as ``(extra, module)`` pairs in the
            order its code asks for them (``errors.require``).
        default_model: The model it runs when none is given; empty where it has none.
        interfaces: The calls into a model's hub code a preset of it names (``interface``),
            where it runs hub code through one of several
            (``retrieval/backends/hub_code/interfaces.py``).
        takes_model: Whether it runs a model named by ``--model`` (``model``).
        scaled: Whether its scores are a cosine it can write at a preset's scale (a vector
            search); BM25's and a random ranking's are not.
        tasks: The tasks it runs, read from the task table's corpus and query facts; a dual
            encoder runs those its model's modalities allow among them.
    """

    name: str
    module: str
    factory: str
    rebuild: str | None = None
    not_rebuildable: str | None = None
    preset_recipe: PresetRecipe | None = None
    instructions: InstructionOptions | None = None
    fields: tuple[str, ...] = ()
    page: Page = "offered"
    needs: tuple[tuple[str, str], ...] = ()
    default_model: str = ""
    interfaces: tuple[str, ...] = ()
    takes_model: bool = True
    scaled: bool = True
    tasks: frozenset[int] = frozenset(TASKS)


_PACKAGE = "mmbright_core.retrieval"
_TEXT = (("text", "torch"), ("text", "sentence_transformers"))
_HF = (("hf", "torch"), ("hf", "transformers"))
_OCR = (("ocr", "rapidocr_onnxruntime"),)

BACKENDS: Mapping[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "bm25",
            f"{_PACKAGE}.lexical.bm25",
            "BM25Retriever",
            rebuild="rebuild",
            preset_recipe="none",
            takes_model=False,
            scaled=False,
            tasks=TEXT_CORPUS_TASKS,
        ),
        Backend(
            "dense",
            f"{_PACKAGE}.backends.dense",
            "DenseRetriever",
            rebuild="rebuild",
            preset_recipe="dense",
            instructions="prefix",
            fields=("model",),
            needs=_TEXT,
            tasks=TEXT_CORPUS_TASKS,
        ),
        Backend(
            "clip",
            f"{_PACKAGE}.backends.clip",
            "ClipRetriever",
            rebuild="rebuild",
            preset_recipe="model",
            fields=("model", "pretrained", "checkpoint"),
            needs=(("clip", "torch"), ("clip", "open_clip")),
            default_model="ViT-L-14",
        ),
        Backend(
            "hf",
            f"{_PACKAGE}.backends.hf",
            "hf_retriever",
            rebuild="rebuild",
            preset_recipe="zoo",
            instructions="instruction",
            fields=("model",),
            needs=_HF,
        ),
        Backend(
            "mteb",
            f"{_PACKAGE}.backends.mteb",
            "mteb_retriever",
            not_rebuildable="its model loads through MTEB's registry; its settings map back "
            "to no options",
            instructions="instruction",
            fields=("model",),
            needs=(("mteb", "torch"), ("mteb", "mteb"), ("mteb", "datasets")),
        ),
        Backend(
            "ocr-bm25",
            f"{_PACKAGE}.backends.ocr",
            "ocr_bm25",
            rebuild="rebuild_ocr_bm25",
            needs=_OCR,
            takes_model=False,
            scaled=False,
            tasks=IMAGE_QUERY_TEXT_TASKS,
        ),
        Backend(
            "ocr-dense",
            f"{_PACKAGE}.backends.ocr",
            "ocr_dense",
            rebuild="rebuild_ocr_dense",
            fields=("model",),
            needs=(*_OCR, *_TEXT),
            tasks=IMAGE_QUERY_TEXT_TASKS,
        ),
        Backend(
            "random",
            f"{_PACKAGE}.backends.random_rank",
            "RandomRetriever",
            rebuild="rebuild",
            takes_model=False,
            scaled=False,
        ),
        Backend(
            "api",
            f"{_PACKAGE}.backends.api",
            "ApiRetriever",
            not_rebuildable="its vectors come from a remote endpoint, with a key and request "
            "budget of its own",
            preset_recipe="zoo-by-characters",
            instructions="instruction",
            page="command-line",
            tasks=PASSAGE_TASKS,
        ),
        Backend(
            "hub-code",
            f"{_PACKAGE}.backends.hub_code.interfaces",
            "hub_code_retriever",
            not_rebuildable="its models run their own hub code, which is not run again to "
            "explain a run",
            preset_recipe="zoo",
            instructions="instruction",
            page="presets",
            needs=_HF,
            # Jina-CLIP's encode_text / encode_image, Nomic's text and vision models side by
            # side, BGE-VL's encode(images=, text=), GME's sentence-transformers dicts,
            # ReasonIR's encode(instruction=) and M2's sentence_embedding output.
            interfaces=(
                "encode-text-image",
                "text-vision-pair",
                "encode-images-text",
                "st-dicts",
                "encode-instruction",
                "sentence-embedding",
            ),
        ),
        Backend(
            "late-interaction",
            f"{_PACKAGE}.backends.late_interaction",
            "LateInteractionRetriever",
            rebuild="rebuild",
            fields=("model",),
            needs=_HF,
        ),
        Backend(
            "gritlm",
            f"{_PACKAGE}.backends.gritlm",
            "gritlm_retriever",
            not_rebuildable="gritlm loads its model with the hub's code, which is not run "
            "again to explain",
            preset_recipe="zoo",
            instructions="instruction",
            page="presets",
        ),
    )
}
"""Every built-in backend by name."""

ALIASES: Mapping[str, str] = {"remote": "hub-code"}
"""Former names still accepted (``--retriever remote``, a recorded ``config.json``, a preset
file): ``remote`` was the hub-code backend's name while the remote endpoint is ``api``."""


def canonical_name(name: str) -> str:
    """Return the built-in backend's name for ``name``, a former one included."""
    return ALIASES.get(name, name)


PRESET_BACKENDS = tuple(name for name, b in BACKENDS.items() if b.preset_recipe is not None)
"""The backends a catalogue preset may name. MTEB's implementation of a model is a preset's
``mteb`` instruction set, not a backend of its own."""
