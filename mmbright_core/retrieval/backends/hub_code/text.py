"""Text models whose own hub code encodes: ReasonIR's ``encode`` and M2-BERT's output.

``src/retrievers/task1_text.py`` of the released harness:

- ``retrieval_reasonir`` loads ``AutoModel.from_pretrained(model, torch_dtype="auto",
  trust_remote_code=True)`` and calls the model's own ``encode(texts, instruction=...,
  batch_size=..., max_length=...)``: passages with the document instruction, queries with the
  query instruction (its ``{task}`` filled with the domain), both at 32,768 tokens, the whole
  corpus in one call (and the queries in another) with the runner's ``batch_size=8``, so the
  model's code forms its batches over them all. Scores are the cosine of the vectors
  (``encode-instruction``).
- ``retrieval_m2`` loads ``AutoModelForSequenceClassification`` with its hub code and the
  tokenizer of a second hub id (``bert-base-uncased``, ``model_max_length=32768``), puts the
  query instruction before every query (passages get none), tokenises each batch padded and
  cut at 32,768 tokens and takes the output's ``sentence_embedding``; scores are 100 x the
  dot product of the normalised vectors (``sentence-embedding``).

:class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever` normalises both and scores 100 x
their dot product, so ReasonIR's scores are 100 x the official cosine: the same ranking
(docs/models.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.hf_model import (
    checkpoint_of,
    device_of,
    in_batches,
    load_pretrained,
    load_transformers,
    tokenize,
    torch_dtype,
)
from mmbright_core.retrieval.backends.hub_code.shared import HubModel, inference
from mmbright_core.retrieval.backends.instructions import DOMAIN_FIELD, fill_domain
from mmbright_core.retrieval.dual.embedder import Modality, Role

OFFICIAL_MAX_LENGTH = 32768
"""The token cut of both recipes (``query_max_length``, ``doc_max_length``, ``max_length``)."""


class HubTextModel(HubModel):
    """A text-only hub-code model with the official instructions and token cut.

    Args:
        model: A hub id or a local folder holding the model and its code.
        max_length: Token truncation (the official 32,768).
        query_instruction: Put before (ReasonIR: handed with) every query; ``{domain}``
            becomes the domain, as the official ``{task}`` does.
        document_instruction: The passages' instruction (ReasonIR only: the
            ``sentence-embedding`` interface takes none, as ``retrieval_m2`` gives none).
        **common: :class:`~mmbright_core.retrieval.backends.hub_code.interfaces.HubModel`'s
        options; ``dtype``
            may also be ``auto``, the checkpoint's own, as ``torch_dtype="auto"`` loads it.
    """

    modalities: frozenset[Modality] = frozenset({"text"})
    fusion = "text"
    factory = "AutoModel"
    """The transformers class whose ``from_pretrained`` loads the model with its code."""

    def __init__(
        self,
        model: str,
        max_length: int | None = None,
        query_instruction: str = "",
        document_instruction: str = "",
        **common: Any,
    ) -> None:
        super().__init__(model, **common)
        if self.dtype != "auto":
            torch_dtype(self.dtype)  # an unknown dtype fails before any loading
        self.max_length = int(max_length or OFFICIAL_MAX_LENGTH)
        self.instructions = {"query": query_instruction, "document": document_instruction}
        self.domain: str | None = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Set the domain that fills the instructions' ``{domain}``."""
        self.domain = domain

    def instruction(self, role: Role) -> str:
        """Return ``role``'s instruction with its domain filled in."""
        return fill_domain(self.instructions[role], self.domain)

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, its truncation and instructions."""
        out = {**super().settings(), "truncation": self.max_length}
        out |= {f"{role}_instruction": text for role, text in self.instructions.items()}
        if any(DOMAIN_FIELD in text for text in self.instructions.values()):
            out["instruction_domain"] = self.domain  # the filled text differs per domain
        return out

    def _load(self) -> Any:
        """Return the model with its hub code, in its dtype on its device, loaded on first use."""
        if self._model is None:
            transformers = load_transformers()
            dtype = "auto" if self.dtype == "auto" else torch_dtype(self.dtype)
            model = load_pretrained(
                getattr(transformers, self.factory),
                self.model_id,
                self.revision,
                dtype=dtype,
                **self.trust,
            )
            self._model = model.to(device_of(self.device)).eval()
        return self._model

    def encode_images(self, images: Sequence[Any], role: Role) -> np.ndarray:
        """Refuse: a text model has no image tower."""
        raise InputError(f"the {self.interface} text model encodes no images", found=self.model_id)


class EncodeInstruction(HubTextModel):
    """ReasonIR's interface: ``encode(texts, instruction=, batch_size=, max_length=)``.

    Args:
        model: A hub id or a local folder holding the model and its code.
        one_call: Whether the retriever hands every text its cache lacks to one ``encode``
            call (``hub_code_retriever``'s ``one_call``), so that the model's code forms its
            own batches of ``batch_size`` over them all, as the official call over the whole
            corpus does. The model then pads each batch, which moves a vector's last bits, so
            the batches' size and origin are recorded and key the cache.
        **options: :class:`HubTextModel`'s options.
    """

    def __init__(self, model: str, one_call: bool = False, **options: Any) -> None:
        super().__init__(model, **options)
        self.one_call = one_call

    def settings(self) -> dict[str, Any]:
        """Return :class:`HubTextModel`'s settings, and the batches of one call where so."""
        out = super().settings()
        return {**out, "batch_size": self.batch_size, "one_call": True} if self.one_call else out

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the model's own vectors of the texts, with ``role``'s instruction."""
        instruction = self.instruction(role)
        return inference(
            lambda: self._load().encode(
                list(texts),
                instruction=instruction,
                batch_size=self.batch_size,
                max_length=self.max_length,
            )
        )


class SentenceEmbedding(HubTextModel):
    """M2-BERT's interface: a sequence-classification model's ``sentence_embedding`` output.

    Args:
        model: A hub id or a local folder holding the model and its code.
        tokenizer: The tokenizer's hub id or folder (the official ``bert-base-uncased``).
        **options: :class:`HubTextModel`'s options.
    """

    factory = "AutoModelForSequenceClassification"

    def __init__(self, model: str, tokenizer: str | None = None, **options: Any) -> None:
        super().__init__(model, **options)
        self.tokenizer_id = str(tokenizer or model)
        transformers = load_transformers()
        # The tokenizer ships with transformers (BERT's): the opt-in, passed on, runs nothing
        # more (the gate still reads its files, which may be the model's own folder).
        self.tokenizer = load_pretrained(
            transformers.AutoTokenizer,
            self.tokenizer_id,
            None,
            model_max_length=self.max_length,
            **self.trust,
        )

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, its tokenizer, truncation, instruction and batch size.

        The batch size is recorded because padding enters M2's convolutions: a text padded in
        a batch of 8 may not get the vector it gets alone.
        """
        tokenizer = {"tokenizer": self.tokenizer_id, "batch_size": self.batch_size}
        sha = checkpoint_of(self.tokenizer_id)
        return {**super().settings(), **tokenizer, "tokenizer_sha256": sha}

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the ``sentence_embedding`` of each text, queries after their instruction."""
        prefix = self.instruction(role) if role == "query" else ""
        inputs = [prefix + text for text in texts]
        return in_batches(inputs, self.batch_size, self._encode_batch)

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        batch = tokenize(self.tokenizer, texts, self.max_length, model.device)
        return inference(lambda: model(**batch)["sentence_embedding"])
