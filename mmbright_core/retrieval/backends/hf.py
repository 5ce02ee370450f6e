"""Text embedders on transformers' ``AutoModel``, pooled as the official harness pools them.

The official Task 1 retrievers (``src/retrievers/task1_text.py``, which follows xlang-ai/BRIGHT's
``retrievers.py``) run three recipes on a plain ``AutoModel``:

- ``last-token`` (``retrieval_sf_qwen_e5``: e5-mistral, SFR-Embedding-Mistral, gte-Qwen1.5/2):
  the hidden state of each text's last real token (``last_token_pool``: the final position when
  the batch is left-padded, else position ``attention_mask.sum() - 1``), the query prefixed by its
  instruction (``add_instruct_concatenate``: ``instruction.format(task=domain) + query``, e.g.
  ``Instruct: Given a {task} post, retrieve relevant passages that help answer the post``, a
  newline and ``Query:`` in BRIGHT's ``configs/e5/<domain>.json``), passages without one,
  ``max_length`` 4,096 (Mistral) or 8,192 (Qwen), bfloat16 weights;
- ``mean`` (``retrieval_contriever``: contriever-msmarco): the mean of the hidden states over the
  attention mask, the tokenizer's own truncation (512);
- ``cls`` (BGE's recipe): the first token's hidden state.

Every recipe then scores the cosine of the two vectors (L2-normalised, as fusion ``text`` does);
the vectors returned here are raw (docs/protocol.md, "Dual-encoder fusion"). An instruction's
``{domain}`` (BRIGHT's ``{task}``, :mod:`.instructions`) is the domain's name, bound per domain
with :meth:`HFTextEmbedder.bind` (a
:class:`~mmbright_core.retrieval.dual.embedder.BoundEmbedder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backends.code_gate import gate
from mmbright_core.retrieval.backends.hf_model import (
    DEFAULT_BATCH,
    HFModel,
    as_float32,
    in_batches,
    load_pretrained,
    load_torch,
    load_transformers,
    tokenize,
    torch_dtype,
)
from mmbright_core.retrieval.backends.instructions import DOMAIN_FIELD, fill_domain
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.encoder import DualOptions
from mmbright_core.retrieval.dual.textcap import DEFAULT_TOKEN_BOUND, cap_text
from mmbright_core.retrieval.search.index import IndexKind

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RebuildContext, RunConfig

POOLINGS = ("last-token", "mean", "cls")
#: Decoder-only families whose official recipe pools the last token (``retrieval_sf_qwen_e5``).
LAST_TOKEN_FAMILIES = frozenset({"mistral", "qwen2", "qwen3", "llama", "gemma", "gemma2"})


def pool(hidden: Any, mask: Any, pooling: str) -> Any:
    """Pool token states ``hidden`` (batch x tokens x dim) under ``mask`` into one per text.

    ``last-token`` and ``mean`` are the official ``last_token_pool`` and ``mean_pooling`` of
    ``src/retrievers/task1_text.py``; ``cls`` takes position 0.
    """
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        summed = hidden.masked_fill(~mask[..., None].bool(), 0.0).sum(dim=1)
        return summed / mask.sum(dim=1)[..., None]
    if bool((mask[:, -1].sum() == mask.shape[0]).item()):  # left padding: all end on a token
        return hidden[:, -1]
    last = mask.sum(dim=1) - 1
    return hidden[load_torch().arange(hidden.shape[0], device=hidden.device), last]


def default_pooling(model_type: str) -> str:
    """Return the official pooling for a model family: last token for decoders, else mean."""
    return "last-token" if model_type in LAST_TOKEN_FAMILIES else "mean"


class HFTextEmbedder(HFModel):
    """A transformers ``AutoModel`` text encoder with the official pooling and instructions.

    Args:
        model: A hub id or a local folder holding the model and its tokenizer.
        pooling: ``last-token``, ``mean`` or ``cls`` (default: by family, see
            :func:`default_pooling`).
        max_length: Token truncation (default: the tokenizer's ``model_max_length``).
        query_instruction: Put before every query; ``{domain}`` becomes the domain.
        document_instruction: Put before every passage; ``{domain}`` becomes the domain.
        append_eos: Put the tokenizer's end-of-sequence token after every text (RaDeR's
            recipe, ``retrieval_rader``: its last token, which is pooled, is then EOS).
        document_char_limit: Cut every passage to this many characters before tokenising
            (RaDeR's 8,192); queries are not cut.
        whole_queries: Tokenise queries whole, untruncated, as ``retrieval_rader`` does
            (passages are still cut at ``max_length``).
        layer_norm: Layer-normalise the pooled vector (Nomic's recipe,
            ``retrieval_nomic_vision``: ``F.layer_norm`` before the L2 norm).
        trust_remote_code: Run the model's own code from the hub (gte-Qwen, Nomic).
        **common: :class:`~mmbright_core.retrieval.backends.hf_model.HFModel`'s options (revision,
            dtype, batch size, device).
    """

    modalities: frozenset[Modality] = frozenset({"text"})
    fusion = "text"

    def __init__(
        self,
        model: str,
        pooling: str | None = None,
        max_length: int | None = None,
        query_instruction: str = "",
        document_instruction: str = "",
        append_eos: bool = False,
        document_char_limit: int | None = None,
        whole_queries: bool = False,
        layer_norm: bool = False,
        trust_remote_code: bool = False,
        **common: Any,
    ) -> None:
        super().__init__(model, **common)
        load_transformers()  # a missing extra is said first
        if pooling is not None and pooling not in POOLINGS:
            raise UnknownNameError("pooling", pooling, POOLINGS)
        torch_dtype(self.dtype)
        self.trust = gate(self.model_id, self.revision, trust_remote_code)
        self.layer_norm = layer_norm
        self.pooling = pooling or default_pooling(str(self.pretrained("AutoConfig").model_type))
        self.instructions = {"query": query_instruction, "document": document_instruction}
        self.domain: str | None = None
        self.tokenizer = self.pretrained("AutoTokenizer")
        self.suffix = str(self.tokenizer.eos_token or "") if append_eos else ""
        self.document_char_limit = document_char_limit
        self.whole_queries = whole_queries
        self.max_length = int(max_length or min(self.tokenizer.model_max_length, 10**6))

    def bind(self, task: int | None, domain: str | None) -> None:
        """Set the domain that fills the instructions' ``{domain}`` (BRIGHT's configs)."""
        self.domain = domain

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, pooling, truncation, dtype and instructions."""
        out: dict[str, Any] = {
            **self.identity(),
            "pooling": self.pooling,
            "truncation": self.max_length,
            "dtype": self.dtype,
            "query_instruction": self.instructions["query"],
            "document_instruction": self.instructions["document"],
        }
        if self.suffix:  # recorded only when set: other runs keep their cache keys
            out["append_eos"] = True
        if self.document_char_limit is not None:
            out["document_char_limit"] = self.document_char_limit
        if self.whole_queries:
            out["whole_queries"] = True
        if self.layer_norm:
            out["layer_norm"] = True
        if self.batch_size != DEFAULT_BATCH:
            # Padding a batch moves a bfloat16 text's vector in its last bits, so a run in
            # other batches (the e5/sf/qwen presets' one text per call) records its batch
            # size and keeps its own cache entries; runs of the default keep their keys.
            out["batch_size"] = self.batch_size
        out.update(self.trust)
        if any(DOMAIN_FIELD in text for text in self.instructions.values()):
            out["instruction_domain"] = self.domain  # the filled text differs per domain
        return out

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return one raw float32 pooled vector per text, its role's instruction in front.

        Texts are capped first (:func:`cap_text`: no token the truncation keeps is lost).
        """
        prefix = fill_domain(self.instructions[role], self.domain)
        limit = self.document_char_limit if role == "document" else None
        if role == "query" and self.whole_queries:
            inputs = [prefix + text + self.suffix for text in texts]
            return in_batches(inputs, self.batch_size, self._encode_whole)
        bound = min(self.max_length, DEFAULT_TOKEN_BOUND * 4)
        inputs = [prefix + cap_text(text[:limit], bound) + self.suffix for text in texts]
        return in_batches(inputs, self.batch_size, self._encode_batch)

    def encode_images(self, images: Sequence[Any], role: Role) -> np.ndarray:
        """Refuse: a text model has no image tower."""
        raise InputError("the hf text model encodes no images", found=self.model_id)

    def _encode_whole(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode_batch(texts, truncate=False)

    def _encode_batch(self, texts: Sequence[str], truncate: bool = True) -> np.ndarray:
        torch = load_torch()
        model = self._load()
        if truncate:
            batch = tokenize(self.tokenizer, texts, self.max_length, model.device)
        else:
            batch = self.tokenizer(list(texts), padding=True, return_tensors="pt")
            batch = batch.to(model.device)
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state
            vectors = pool(hidden, batch["attention_mask"], self.pooling)
            if self.layer_norm:
                vectors = torch.nn.functional.layer_norm(vectors, (vectors.shape[1],))
        return as_float32(vectors)


def refuse_text_options(family: str, model: str, text_options: dict[str, Any]) -> None:
    """Refuse the text-model options a CLIP-style model was given: it encodes text as it is.

    An option counts as given when set to anything but its default (None, empty, False).

    Raises:
        InputError: One or more of ``text_options`` were given.
    """
    given = sorted(
        key
        for key, value in text_options.items()
        if value is not None and value is not False and value != ""
    )
    if given:
        raise InputError(
            f"a {family} model takes no {', '.join(given)}",
            found=model,
            hint="Drop those options: CLIP-style models encode the query text as it is.",
        )


def hf_retriever(
    model: str,
    revision: str | None = None,
    pooling: str | None = None,
    max_length: int | None = None,
    query_instruction: str = "",
    document_instruction: str = "",
    dtype: str = "float32",
    batch_size: int = DEFAULT_BATCH,
    device: str | None = None,
    append_eos: bool = False,
    document_char_limit: int | None = None,
    whole_queries: bool = False,
    layer_norm: bool = False,
    trust_remote_code: bool = False,
    image_policy: str = "first",
    cache_dir: str | None = None,
    index: IndexKind = "flat",
    cache_dtype: str = "float32",
) -> Any:
    """Build the ``hf`` retriever: a transformers model under the package's protocol.

    A CLIP or SigLIP checkpoint (its config's ``model_type``) becomes an
    :class:`~mmbright_core.retrieval.backends.hf_clip.HFClipEmbedder` (tasks 1-4, fusion
    ``raw-mean``); any other model an :class:`HFTextEmbedder` (tasks 1-2 on the query text).
    Options as the two embedders and
    :class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever` take them.

    Raises:
        InputError: A text-model option given to a CLIP-style model, or a bad model.
        MissingDependencyError: transformers or torch is not installed.
    """
    from mmbright_core.retrieval.backends.hf_clip import FAMILIES, HFClipEmbedder

    transformers = load_transformers()
    trust = gate(str(model), revision, trust_remote_code)
    family = str(load_pretrained(transformers.AutoConfig, str(model), revision, **trust).model_type)
    common: dict[str, Any] = {"revision": revision, "max_length": max_length, "dtype": dtype}
    common |= {"batch_size": batch_size, "device": device}
    text: dict[str, Any] = {"pooling": pooling, "query_instruction": query_instruction}
    text |= {"document_instruction": document_instruction, "append_eos": append_eos}
    text |= {"document_char_limit": document_char_limit, "layer_norm": layer_norm}
    text |= {"whole_queries": whole_queries}
    text |= {"trust_remote_code": trust_remote_code}
    embedder: Any
    if family in FAMILIES:
        refuse_text_options(family, str(model), text)
        embedder = HFClipEmbedder(str(model), **common)
    else:
        embedder = HFTextEmbedder(str(model), **text, **common)
    return DualOptions(image_policy, cache_dir, index, cache_dtype, batch_size).build(
        embedder, "hf"
    )


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``hf`` from its configuration."""
    rebuilt = {
        "model": config.model,
        "revision": config.revision,
        "max_length": config.truncation,
        "dtype": options["dtype"],
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
        "cache_dir": context.cache_dir,
        "device": context.device,
    }
    if "pooling" not in options:  # CLIP or SigLIP: the query image counts
        return {**rebuilt, "image_policy": config.image_policy}
    return {
        **rebuilt,
        "pooling": options["pooling"],
        "query_instruction": options["query_instruction"],
        "document_instruction": options["document_instruction"],
        "append_eos": options.get("append_eos", False),
        "document_char_limit": options.get("document_char_limit"),
        "whole_queries": options.get("whole_queries", False),
    }
