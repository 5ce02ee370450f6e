"""The built-in backends, one record each: everything the package knows of a backend by name.

A :class:`Backend` says where its factory lives (imported on first use, so a backend's heavy
dependencies load only when it is asked for), how a run of it is rebuilt from ``config.json``
or why it cannot be, how a catalogue preset becomes its options and how it takes instruction
texts, the model fields the Run page shows for it (and the pretrained tags that name no file)
and whether the page offers it, what it imports beyond the ``app`` extra, whether the Ray
engine encodes for it, and how it runs a model's own hub code. The registry, the catalogue's
checks and its page, the preset runner, the engines, the Run page and the command line's
help all read :data:`BACKENDS`; none names a backend otherwise. A new built-in backend is its
module, its record here and its tests.

This module imports nothing of the package but the task table, so every layer may read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from mmbright_core.task_table import (
    IMAGE_QUERY_TEXT_TASKS,
    PASSAGE_TASKS,
    TASKS,
    TEXT_CORPUS_TASKS,
)

PresetOption = Literal[
    "interface", "model", "revision", "pooling", "max_length", "instructions", "options"
]
"""What of a catalogue preset becomes a backend's options (``retrieval/catalogue/preset_run.py``),
in this order, a value the preset leaves unset left out: a field of the preset under its own
name (``interface``, ``model``, ``revision``, ``pooling``, ``max_length``), ``instructions`` the
instruction set's texts under the backend's names (:data:`InstructionOptions`; as prompts where
the preset pools without them), ``options`` the preset's further recipe options."""
InstructionOptions = Literal["prefix", "instruction"]
"""How a backend takes instruction texts: ``query_prefix`` / ``document_prefix``, or
``query_instruction`` / ``document_instruction``."""
Needs = tuple[tuple[str, str], ...]
"""What a backend imports beyond the ``app`` extra, as ``(extra, module)`` pairs in the order
its code asks for them (``errors.require``)."""
Page = Literal["offered", "presets", "command-line"]
"""Where the Run page offers a backend: as a retriever with its fields, through its presets
only (with the opt-in to hub code beside them), or not at all (``api`` would spend the key in
the server's environment: docs/safety.md)."""


@dataclass(frozen=True)
class HubCode:
    """How a backend (or one of its interfaces) runs a model's own code from the hub.

    ``docs/models.md`` says it for each preset that runs hub code
    (``retrieval/catalogue/doc.py``).

    Attributes:
        tested: What the tests run offline, on a local stand-in offering the same call.
        hub_only: What only the hub's code does, which no test here runs.
        needs: What it imports beyond its backend's needs.
    """

    tested: str
    hub_only: str
    needs: Needs = ()


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
        preset_options: What of a catalogue preset becomes its options, in order; None: no
            preset runs on it.
        instructions: How it takes instruction texts; None: it takes none.
        fields: The model options the Run page shows as fields (``checkpoint``: open_clip's
            ``pretrained`` given as a file).
        pretrained_tags: Where its ``pretrained`` field takes a tag or a file: the attribute
            of ``module`` that lists the tags its library knows for a model.
        pretrained_words: The ``pretrained`` values that name no file (random weights, the
            model's own).
        page: Where the Run page offers it.
        needs: What it imports beyond the ``app`` extra.
        default_model: The model it runs when none is given; empty where it has none.
        distributed: Whether the Ray engine encodes its corpus, bit for bit as a local run
            (``--engine ray``; tested so).
        hub_code: How it runs a model's own hub code (``trust_remote_code``), where a preset
            of it does so.
        interfaces: The calls into a model's hub code a preset of it names (``interface``),
            each with how it runs, where it runs hub code through one of several
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
    preset_options: tuple[PresetOption, ...] | None = None
    instructions: InstructionOptions | None = None
    fields: tuple[str, ...] = ()
    pretrained_tags: str | None = None
    pretrained_words: tuple[str, ...] = ()
    page: Page = "offered"
    needs: Needs = ()
    default_model: str = ""
    distributed: bool = False
    hub_code: HubCode | None = None
    interfaces: Mapping[str, HubCode] = field(default_factory=dict, hash=False)
    takes_model: bool = True
    scaled: bool = True
    tasks: frozenset[int] = frozenset(TASKS)


_PACKAGE = "mmbright_core.retrieval"
_TEXT = (("text", "torch"), ("text", "sentence_transformers"))
_HF = (("hf", "torch"), ("hf", "transformers"))
_OCR = (("ocr", "rapidocr_onnxruntime"),)
_ZOO: tuple[PresetOption, ...] = (
    "interface",
    "model",
    "revision",
    "pooling",
    "max_length",
    "instructions",
    "options",
)

BACKENDS: Mapping[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "bm25",
            f"{_PACKAGE}.lexical.bm25",
            "BM25Retriever",
            rebuild="rebuild",
            preset_options=(),  # BM25's parameters are the official ones by default
            takes_model=False,
            scaled=False,
            tasks=TEXT_CORPUS_TASKS,
        ),
        Backend(
            "dense",
            f"{_PACKAGE}.backends.dense",
            "DenseRetriever",
            rebuild="rebuild",
            preset_options=("model", "revision", "instructions", "max_length", "options"),
            instructions="prefix",
            fields=("model",),
            needs=_TEXT,
            distributed=True,
            hub_code=HubCode(
                "SentenceTransformer loaded with trust_remote_code, encode(strings, "
                "normalize_embeddings=True)",
                "the model's modules (NomicBERT)",
            ),
            tasks=TEXT_CORPUS_TASKS,
        ),
        Backend(
            "clip",
            f"{_PACKAGE}.backends.clip",
            "ClipRetriever",
            rebuild="rebuild",
            preset_options=("model", "options"),
            fields=("model", "pretrained", "checkpoint"),
            pretrained_tags="pretrained_tags",
            pretrained_words=("none", "auto"),
            needs=(("clip", "torch"), ("clip", "open_clip")),
            default_model="ViT-L-14",
            distributed=True,
        ),
        Backend(
            "hf",
            f"{_PACKAGE}.backends.hf",
            "hf_retriever",
            rebuild="rebuild",
            preset_options=_ZOO,
            instructions="instruction",
            fields=("model",),
            needs=_HF,
            hub_code=HubCode(
                "transformers' AutoModel loaded with trust_remote_code, its last_hidden_state "
                "pooled and normalised by this package "
                "(tests/retrieval/backends/hub_code/test_interfaces.py, a causal stand-in)",
                "the model's forward pass",
            ),
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
            # An endpoint cuts by characters (max_chars), and pools as it does.
            preset_options=("interface", "model", "revision", "instructions", "options"),
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
            preset_options=_ZOO,
            instructions="instruction",
            page="presets",
            needs=_HF,
            # Jina-CLIP's encode_text / encode_image, Nomic's text and vision models side by
            # side, BGE-VL's encode(images=, text=), GME's sentence-transformers dicts (which
            # need that package too), ReasonIR's encode(instruction=) and M2's
            # sentence_embedding output.
            interfaces={
                "encode-text-image": HubCode(
                    "AutoModel with trust_remote_code, encode_text(texts) and "
                    "encode_image(images), the zero-image fusion",
                    "the towers, their tokenisation, truncation and image preprocessing",
                ),
                "text-vision-pair": HubCode(
                    "two AutoModels with trust_remote_code: the text model's states mean-pooled, "
                    "layer-normalised, the vision model's first token, the normalised mean",
                    "both forward passes; the image processor is transformers' own",
                ),
                "encode-images-text": HubCode(
                    "AutoModel with trust_remote_code, set_processor(model), encode(images=PNG "
                    "path, text=text cut at 150 characters), the shorter cuts while the model "
                    "raises 'size of tensor'",
                    "the joint encoding itself, its processor and 77-token limit",
                ),
                "st-dicts": HubCode(
                    "SentenceTransformer with trust_remote_code, encode of strings, {'text', "
                    "'image'} and {'image'} dicts (a query with an image alone), normalised",
                    "the Qwen2-VL module: its chat template, image resizing and pooling; "
                    "sentence-transformers 6 refuses image dicts for a module that does not list "
                    "its modalities, which only the hub's module can tell",
                    needs=(("text", "sentence_transformers"),),
                ),
                "encode-instruction": HubCode(
                    "AutoModel with trust_remote_code in the checkpoint's dtype, encode(texts, "
                    "instruction=, batch_size=, max_length=32768), the cosine",
                    "the tokenisation, instruction template and pooling (its encode)",
                ),
                "sentence-embedding": HubCode(
                    "AutoModelForSequenceClassification with trust_remote_code, the tokenizer of "
                    "a second id (option tokenizer), padded batches cut at 32,768 tokens, the "
                    "output's sentence_embedding normalised",
                    "the Monarch-mixer forward pass and its sentence_embedding",
                ),
            },
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
            preset_options=_ZOO,
            instructions="instruction",
            page="presets",
            hub_code=HubCode(
                "gritlm.GritLM(mode='embedding') loading AutoModel with trust_remote_code, "
                "encode(texts, instruction=, batch_size=1, max_length=) as retrieval_grit calls "
                "it (tests/retrieval/backends/test_gritlm.py, a tiny transformers Mistral)",
                "the bidirectional attention (is_causal=False) of GritLM-7B's modeling code",
            ),
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


PRESET_BACKENDS = tuple(name for name, b in BACKENDS.items() if b.preset_options is not None)
"""The backends a catalogue preset may name. MTEB's implementation of a model is a preset's
``mteb`` instruction set, not a backend of its own."""
