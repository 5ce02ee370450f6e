"""GritLM through the ``gritlm`` package, called as the official harness calls it.

The official ``retrieval_grit`` (``src/retrievers/task1_text.py``) loads
``GritLM(checkpoint, torch_dtype="auto", mode="embedding")`` and encodes one text at a time::

    model.encode(documents, instruction=doc_instruction, batch_size=1, max_length=2048)
    model.encode(queries, instruction=query_instruction, batch_size=1, max_length=256)

with ``query_instruction = instructions['query'].format(task=domain)`` and the document
instruction as written. ``gritlm``'s ``encode`` glues the instruction before the text, runs
the model with ``is_causal=False`` (its ``bbcc`` attention), leaves the instruction's tokens
out of the mean pooling and L2-normalises: this module hands it exactly those arguments and
keeps the rest (the protocol's fusion, cache and ranking) the package's. The instruction
texts carry GritLM's own ``<|user|>`` / ``<|embed|>`` markers where the instruction set
writes them (BRIGHT's ``configs/grit/<domain>.json``); ``gritlm`` adds none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmbright_core.errors import InputError, require
from mmbright_core.retrieval.backends.code_gate import FLAG, gate
from mmbright_core.retrieval.backends.hf_model import checkpoint_of, device_of, model_label
from mmbright_core.retrieval.backends.instructions import DOMAIN_FIELD, fill_domain
from mmbright_core.retrieval.backends.model_files import FOLDER_HINT, model_files
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.encoder import DualOptions
from mmbright_core.retrieval.dual.textcap import cap_text
from mmbright_core.retrieval.search.index import IndexKind

WHAT = "the gritlm retriever"
DTYPES = ("auto", "float32", "bfloat16", "float16")


class GritLMEmbedder:
    """GritLM's ``encode`` in embedding mode, one text per call as the official code runs it.

    Args:
        model: A hub id or a local folder (weights and tokenizer).
        revision: The hub revision, if pinned.
        query_instruction: ``encode``'s ``instruction=`` for queries; ``{domain}`` is filled.
        document_instruction: ``encode``'s ``instruction=`` for passages; ``{domain}`` is filled.
        query_max_length: ``encode``'s ``max_length`` for queries (official: 256).
        max_length: ``encode``'s ``max_length`` for passages (official: 2048).
        dtype: ``torch_dtype`` of the weights (``auto``: the checkpoint's, as officially).
        batch_size: ``encode``'s ``batch_size`` (official: 1, so no text is padded).
        device: Torch device (default: cuda where there is one).
    """

    modalities: frozenset[Modality] = frozenset({"text"})
    fusion = "text"

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        query_instruction: str = "",
        document_instruction: str = "",
        query_max_length: int = 256,
        max_length: int = 2048,
        dtype: str = "auto",
        batch_size: int = 1,
        device: str | None = None,
    ) -> None:
        if dtype not in DTYPES:
            raise InputError("unknown dtype", expected=f"one of {', '.join(DTYPES)}", found=dtype)
        self.model, self.revision, self.dtype = str(model), revision, dtype
        self.name = model_label(self.model)
        self.instructions = {"query": query_instruction, "document": document_instruction}
        self.max_lengths: dict[Role, int] = {"query": query_max_length, "document": max_length}
        self.batch_size, self.device = batch_size, device
        self.domain: str | None = None
        self._model: Any = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Set the domain that fills the instructions' ``{domain}``."""
        self.domain = domain

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, its instructions, truncations, dtype and batch size."""
        out: dict[str, Any] = {
            "model": self.model,
            "revision": self.revision,
            "checkpoint_sha256": checkpoint_of(self.model),
            "encoder": "gritlm",
            "gritlm_version": require("gritlm", WHAT, "gritlm").__version__,
            "query_instruction": self.instructions["query"],
            "document_instruction": self.instructions["document"],
            "query_truncation": self.max_lengths["query"],
            "truncation": self.max_lengths["document"],
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "trust_remote_code": True,
        }
        if any(DOMAIN_FIELD in text for text in self.instructions.values()):
            out["instruction_domain"] = self.domain  # the filled text differs per domain
        return out

    def load(self) -> Any:
        """Return ``gritlm.GritLM`` in embedding mode, loaded once.

        Raises:
            InputError: The model's files cannot be loaded (a hub id not in the local cache
                included).
            MissingDependencyError: gritlm is not installed.
        """
        if self._model is None:
            gritlm = require("gritlm", WHAT, "gritlm")
            options: dict[str, Any] = {"torch_dtype": self.dtype, "mode": "embedding"}
            options |= {"device": device_of(self.device)}
            if self.revision is not None:
                options["revision"] = self.revision
            gate(self.model, self.revision, True)  # gritlm passes trust_remote_code=True
            with model_files("the GritLM model", self.model, FOLDER_HINT):
                self._model = gritlm.GritLM(self.model, **options)
        return self._model

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return GritLM's normalised vector of each text with its role's instruction."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        limit = self.max_lengths[role]
        vectors = self.load().encode(
            [cap_text(text, limit) for text in texts],
            instruction=fill_domain(self.instructions[role], self.domain),
            batch_size=self.batch_size,
            max_length=limit,
        )
        return np.asarray(vectors, dtype=np.float32)

    def encode_images(self, images: Sequence[Any], role: Role) -> np.ndarray:
        """Refuse: GritLM encodes no images."""
        raise InputError("the gritlm model encodes no images", found=self.model)


def gritlm_retriever(
    model: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
    query_instruction: str = "",
    document_instruction: str = "",
    query_max_length: int = 256,
    max_length: int = 2048,
    dtype: str = "auto",
    batch_size: int = 1,
    device: str | None = None,
    cache_dir: str | None = None,
    index: IndexKind = "flat",
    cache_dtype: str = "float32",
) -> Any:
    """Build the ``gritlm`` retriever: ``gritlm.GritLM`` under the package's protocol.

    ``gritlm`` loads every model with ``trust_remote_code=True`` (GritLM-7B's bidirectional
    attention is its hub code), so the run needs ``trust_remote_code`` as ``remote`` does.

    Raises:
        InputError: No model, no ``trust_remote_code``, or a bad option.
        MissingDependencyError: gritlm is not installed.
    """
    if model is None:
        raise InputError("the gritlm retriever needs a model", expected="--model GritLM/GritLM-7B")
    if not trust_remote_code:
        raise InputError(
            "the gritlm backend loads its model with the model's own code from the hub",
            found=f"--retriever gritlm --model {model} without {FLAG}",
            hint=f"Add {FLAG} to run it.",
        )
    gate(str(model), revision, True)
    embedder = GritLMEmbedder(
        model,
        revision,
        query_instruction,
        document_instruction,
        query_max_length,
        max_length,
        dtype,
        batch_size,
        device,
    )
    return DualOptions("first", cache_dir, index, cache_dtype, batch_size).build(embedder, "gritlm")
