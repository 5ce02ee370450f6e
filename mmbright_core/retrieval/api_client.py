"""A client for OpenAI-compatible endpoints: batching, bounded retries, a request budget.

One client serves every server that speaks OpenAI's HTTP API (OpenAI, Azure OpenAI, vLLM,
text-embeddings-inference, LiteLLM proxies, Ollama...): the real ``openai`` library sends
the requests; this module decides what goes in one request, when to try again and when to
stop, and turns every failure into one line that says what to do (:class:`EndpointError`,
worded in :mod:`~mmbright_core.retrieval.endpoint_errors`).
:class:`EndpointClient` holds what every endpoint client shares (the key, the retries, the
budget, the messages); :class:`EmbeddingClient` adds the embeddings API, and
:mod:`mmbright_core.llm.chat` the chat API.

The library's own retries are switched off (``max_retries=0``) so that every HTTP attempt
is counted here: the request budget bounds attempts, not batches, because attempts are what
a provider bills and rate-limits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from mmbright_core.errors import EndpointError, RequestBudgetError
from mmbright_core.retrieval.base import require
from mmbright_core.retrieval.endpoint_errors import failure, read_key, retry_after

#: The environment variable the key is read from unless ``api_key_env`` names another.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
#: Status codes worth another attempt: rate limits and server faults.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """How requests are made: their size, patience and number.

    Attributes:
        batch_inputs: The most inputs in one request.
        batch_chars: The most characters in one request (a token estimate: providers bound
            tokens per request; one input longer than this goes alone).
        timeout: Seconds one request may take before it counts as failed.
        retries: How many times a failed request is tried again (429, 5xx, timeouts,
            dropped connections); 0 means one attempt.
        backoff: Seconds before the first retry; each further retry waits twice as long,
            up to ``backoff_cap``. A server's ``Retry-After`` is honoured up to the cap.
        backoff_cap: The longest wait between two attempts.
        max_requests: The most HTTP attempts this client sends (None: no limit).
        concurrency: The most requests in flight at once (the chat client; the embeddings
            client sends one batch at a time).
        token_budget: The most tokens (prompt and completion, as the server counts them) the
            chat client spends before it stops (None: no limit).
    """

    batch_inputs: int = 64
    batch_chars: int = 200_000
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 0.5
    backoff_cap: float = 8.0
    max_requests: int | None = None
    concurrency: int = 8
    token_budget: int | None = None

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Return the wait before retry number ``attempt`` (0-based)."""
        wait = self.backoff * 2**attempt if retry_after is None else retry_after
        return max(0.0, min(self.backoff_cap, wait))


def public_endpoint(url: str) -> str:
    """Return ``url`` without user info, query or fragment: what may be recorded and shown."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def batches(texts: Sequence[str], limits: Limits) -> Iterator[tuple[int, int]]:
    """Yield ``(start, end)`` slices of ``texts``, each one request's worth."""
    start = 0
    while start < len(texts):
        end, chars = start, 0
        while end < len(texts) and end - start < limits.batch_inputs:
            size = len(texts[end])
            if end > start and chars + size > limits.batch_chars:
                break
            chars += size
            end += 1
        yield start, end
        start = end


class EndpointClient:
    """What every client of an OpenAI-compatible endpoint shares: key, retries, budget.

    :meth:`call` sends one request through the real ``openai`` client, tries again after a
    408/409/429/5xx answer, a timeout or a dropped connection (exponential backoff, a
    server's ``Retry-After`` honoured up to the cap), counts every HTTP attempt against the
    request budget, and turns a final failure into one :class:`EndpointError` line. The
    counters are kept under a lock: a client may be called from several threads at once.

    Args:
        model: The model name the server knows.
        endpoint: The API's base URL; None: the ``openai`` library's default
            (``$OPENAI_BASE_URL``, else OpenAI's own).
        api_key_env: The environment variable holding the key.
        limits: Timeout, retries and the request budget.
        sleep: How to wait between attempts (a parameter so a caller can observe waits).
        what: What needs the ``openai`` package, for the missing-dependency message.

    Attributes:
        requests: HTTP attempts sent so far.
        retried: Attempts that failed and were tried again.

    Raises:
        MissingDependencyError: ``openai`` is not installed.
        EndpointError: No key in ``api_key_env``.
    """

    def __init__(
        self,
        model: str,
        endpoint: str | None = None,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        limits: Limits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        what: str = "the api retriever",
    ) -> None:
        self.openai = require("openai", what, "api")
        self.model = model
        self.limits = limits or Limits()
        self.api_key_env = api_key_env
        self._client = self.openai.OpenAI(
            base_url=endpoint,
            api_key=read_key(api_key_env),
            timeout=self.limits.timeout,
            max_retries=0,
        )
        self.endpoint = public_endpoint(str(self._client.base_url))
        self.sleep = sleep
        self.requests = self.retried = 0
        self._lock = threading.Lock()

    def call(self, send: Callable[[], T]) -> T:
        """Return ``send()``, tried again as the limits allow.

        Raises:
            EndpointError: The server refused the key or the model, stayed unreachable or
                kept failing after the retries (or ``send`` found the answer malformed).
            RequestBudgetError: The request budget was spent before an answer came.
        """
        errors = self.openai
        for attempt in range(self.limits.retries + 1):
            self._spend()
            try:
                return send()
            except (errors.APIConnectionError, errors.APIStatusError) as err:
                if not self._retryable(err) or attempt == self.limits.retries:
                    raise failure(self, err, attempt + 1) from err
                with self._lock:
                    self.retried += 1
                self.sleep(self.limits.delay(attempt, retry_after(err)))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def done_text(self) -> str:
        """What was answered so far, for the budget's message."""
        return f"{self.requests:,} requests answered or tried"

    def _spend(self) -> None:
        budget = self.limits.max_requests
        with self._lock:
            if budget is None or self.requests < budget:
                self.requests += 1
                return
        raise RequestBudgetError(
            f"request budget spent: {budget} requests sent to {self.endpoint}, {self.done_text()}",
            requests=self.requests,
            hint="What was answered is in the cache and is not asked again; "
            "rerun with a larger --option max_requests=N to go on.",
        )

    def _retryable(self, err: Exception) -> bool:
        if isinstance(err, self.openai.APIStatusError):
            return err.status_code in RETRY_STATUSES
        return True  # connection refused or dropped, timeouts


class EmbeddingClient(EndpointClient):
    """Embeds texts through ``POST {endpoint}/embeddings`` of an OpenAI-compatible server.

    Takes what :class:`EndpointClient` takes (``limits`` also sets the batching), and:

    Args:
        dimensions: Ask for vectors of this size (models that support it, e.g.
            text-embedding-3-*); None: the model's own size.

    Attributes:
        embedded: Inputs answered so far (beside ``requests`` and ``retried``).
    """

    def __init__(
        self, model: str, endpoint: str | None = None, dimensions: int | None = None, **common: Any
    ) -> None:
        super().__init__(model, endpoint, **common)
        self.dimensions = dimensions
        self.embedded = 0

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Return one float32 vector per text, in order, as the server computed it.

        Raises:
            EndpointError: The server refused the key or the model, stayed unreachable or
                kept failing after the retries, or answered something malformed.
            RequestBudgetError: ``max_requests`` attempts were sent before all texts
                were answered.
        """
        out: list[npt.NDArray[np.float32]] = []
        bar = tqdm(total=len(texts), desc="api", unit="input", leave=False, disable=None)
        try:
            for start, end in batches(texts, self.limits):
                out.append(self._request(list(texts[start:end])))
                self.embedded += end - start
                bar.update(end - start)
                bar.set_postfix(requests=self.requests, retried=self.retried)
        finally:
            bar.close()
        if not out:
            return np.zeros((0, self.dimensions or 0), dtype=np.float32)
        return np.concatenate(out)

    def done_text(self) -> str:
        """What was answered so far, for the budget's message."""
        return f"{self.embedded:,} inputs embedded"

    def _request(self, batch: list[str]) -> npt.NDArray[np.float32]:
        return self.call(lambda: self._vectors(self._create(batch), len(batch)))

    def _create(self, batch: list[str]) -> Any:
        extra = {} if self.dimensions is None else {"dimensions": self.dimensions}
        return self._client.embeddings.create(
            model=self.model, input=batch, encoding_format="float", **extra
        )

    def _vectors(self, response: Any, count: int) -> npt.NDArray[np.float32]:
        data = sorted(getattr(response, "data", None) or [], key=lambda item: item.index)
        rows = [item.embedding for item in data]
        sizes = {len(row) for row in rows if isinstance(row, list)}
        if len(rows) != count or len(sizes) != 1 or not all(isinstance(r, list) for r in rows):
            raise EndpointError(
                f"{self.endpoint} answered a malformed embeddings response",
                expected=f"{count} vectors of one size",
                found=f"{len(rows)} vectors of sizes {sorted(sizes)}",
                hint="Check that the endpoint serves the embeddings API (not chat only).",
            )
        vectors = np.asarray(rows, dtype=np.float32)
        if self.dimensions is not None and vectors.shape[1] != self.dimensions:
            raise EndpointError(
                f"{self.endpoint} ignored the dimensions asked for model {self.model!r}",
                expected=f"vectors of {self.dimensions}",
                found=f"vectors of {vectors.shape[1]}",
                hint="Drop --option dimensions=N: this model has a fixed size.",
            )
        return vectors
