"""The ``api`` backend: text embeddings from any OpenAI-compatible endpoint (tasks 1-2).

The embedder sends texts to the endpoint (:mod:`mmbright_core.retrieval.backends.api_client`); the
package does the rest as for every dual encoder (:mod:`mmbright_core.retrieval.dual.encoder`): the
content-keyed embedding cache, so that a rerun after a kill or a spent request budget asks
the server only for what it has not answered; exclusions before the top-k cut; the ranking.

The official harness (``retrieval_openai`` of ``src/retrievers/task1_text.py``) cuts every
text to 6,000 ``cl100k_base`` tokens with tiktoken; this backend cuts by characters
(``max_chars``, about four characters a token) so that it needs no tokenizer of the
provider's, and sends a single space for an empty text, which the API would refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from PIL import Image

from mmbright_core.endpoints.bounded_http import DEFAULT_MAX_ANSWER_BYTES
from mmbright_core.endpoints.client import DEFAULT_KEY_ENV, Limits, whole_option
from mmbright_core.errors import InputError
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.backends.api_client import EmbeddingClient
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever
from mmbright_core.retrieval.search.index import IndexKind

#: The official harness's OpenAI model (``retrieval_openai``: text-embedding-3-large).
DEFAULT_MODEL = "text-embedding-3-large"
#: 6,000 tokens (the official cut) at about four characters a token.
DEFAULT_MAX_CHARS = 24_000


class ApiEmbedder:
    """A text :class:`~mmbright_core.retrieval.dual.embedder.Embedder` behind an endpoint.

    Args:
        client: The endpoint's client (model, endpoint, key, limits).
        query_instruction: Text put before every query.
        document_instruction: Text put before every passage.
        max_chars: Each text (instruction included) is cut to this many characters.
    """

    modalities: frozenset[Modality] = frozenset({"text"})
    fusion = "text"

    def __init__(
        self,
        client: EmbeddingClient,
        *,
        query_instruction: str = "",
        document_instruction: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise InputError(
                "invalid max_chars", expected="a positive integer", found=repr(max_chars)
            )
        self.client = client
        self.name = client.model.rstrip("/").rsplit("/", 1)[-1]
        self.instructions: dict[Role, str] = {
            "query": query_instruction,
            "document": document_instruction,
        }
        self.max_chars = max_chars

    @property
    def cache_shard_size(self) -> int:
        """Vectors per cache write: one request's worth, so a kill loses one request at most.

        Answers are paid for; a local model's default (thousands per shard) would lose
        everything answered since the last shard to a SIGKILL.
        """
        return self.client.limits.batch_inputs

    def settings(self) -> dict[str, Any]:
        """Return what changes a vector: endpoint (never the key), model, size, instructions."""
        return {
            "encoder": "openai-embeddings",
            "endpoint": self.client.endpoint,
            "model": self.client.model,
            "dimensions": self.client.dimensions,
            "query_instruction": self.instructions["query"],
            "document_instruction": self.instructions["document"],
            "max_chars": self.max_chars,
        }

    def prepare(self, text: str, role: Role) -> str:
        """Return what is sent for ``text``: instruction + text, cut, never empty."""
        sent = (self.instructions[role] + text)[: self.max_chars]
        return sent if sent.strip() else " "

    def encode_texts(self, texts: Sequence[str], role: Role) -> npt.NDArray[np.float32]:
        """Return the endpoint's raw float32 vector of every text, for ``role``."""
        return self.client.embed([self.prepare(text, role) for text in texts])

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> npt.NDArray[np.float32]:
        """Refuse: the embeddings API takes texts only.

        Raises:
            InputError: Always.
        """
        raise InputError(
            "the api retriever embeds texts only",
            found=f"{len(images)} image(s)",
            hint="Run tasks 1-2 (a task 2 query is embedded by its text).",
        )


class ApiRetriever(DualEncoderRetriever):
    """The ``api`` retriever: an :class:`ApiEmbedder` run as a text dual encoder (tasks 1-2).

    Args:
        model: The model name the server knows.
        endpoint: The API's base URL (default: the ``openai`` library's, OpenAI's own).
        api_key_env: The environment variable holding the key.
        dimensions: Vector size to ask for (models that support it).
        query_instruction: Text put before every query.
        document_instruction: Text put before every passage.
        max_chars: Each text is cut to this many characters.
        batch_size: The most inputs in one request, and in one cache write: a run killed
            mid-way loses at most the request in flight.
        batch_chars: The most characters in one request.
        timeout: Seconds one request may take, from connecting to its answer's last byte.
        retries: Further attempts of a failed request (429, 5xx, timeouts, dropped).
        backoff: Seconds before the first retry (doubling, up to 8 s).
        max_requests: The most HTTP attempts the run sends (None: no limit).
        max_answer_bytes: The most bytes read of one answer (default 64 MiB).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        index: Vector index kind (``flat`` exact; ``hnsw`` or ``ivf`` approximate).
        cache_dtype: ``float32`` (default) or ``float16`` cached vectors.
    """

    name = "api"
    tasks = BACKENDS["api"].tasks

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        endpoint: str | None = None,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        dimensions: int | None = None,
        query_instruction: str = "",
        document_instruction: str = "",
        max_chars: int = DEFAULT_MAX_CHARS,
        batch_size: int = 64,
        batch_chars: int = 200_000,
        timeout: float = 60.0,
        retries: int = 5,
        backoff: float = 0.5,
        max_requests: int | None = None,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
        cache_dir: str | None = None,
        index: IndexKind = "flat",
        cache_dtype: str = "float32",
    ) -> None:
        limits = Limits(
            batch_inputs=whole_option("batch_size", batch_size, 1),
            batch_chars=batch_chars,
            timeout=timeout,
            retries=retries,
            backoff=backoff,
            max_requests=max_requests,
            max_answer_bytes=max_answer_bytes,
        )
        client = EmbeddingClient(
            model, endpoint, api_key_env=api_key_env, dimensions=dimensions, limits=limits
        )
        embedder = ApiEmbedder(
            client,
            query_instruction=query_instruction,
            document_instruction=document_instruction,
            max_chars=max_chars,
        )
        super().__init__(
            embedder,
            name=self.name,
            cache_dir=cache_dir,
            index=index,
            cache_dtype=cache_dtype,
            batch_size=batch_size,
        )
