"""The api retriever's client: texts embedded through an endpoint's embeddings API, in batches.

:class:`EmbeddingClient` adds the embeddings API to the client every endpoint user shares
(:class:`~mmbright_core.endpoints.client.EndpointClient`: the key, bounded retries, the
request budget, one-line errors): it decides what goes in one request (:func:`batches`) and
checks every answer before its vectors are handed on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from tqdm.auto import tqdm

from mmbright_core.endpoints.client import EndpointClient, Limits, quoted, whole_option
from mmbright_core.errors import EndpointError
from mmbright_core.retrieval.cache.verify import length_problem


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


class EmbeddingClient(EndpointClient):
    """Embeds texts through ``POST {endpoint}/embeddings`` of an OpenAI-compatible server.

    Takes what :class:`EndpointClient` takes (``limits`` also sets the batching), and:

    Args:
        dimensions: Ask for vectors of this size (models that support it, e.g.
            text-embedding-3-*); None: the model's own size.

    Every answer is checked before its vectors are handed on (and so before the embedding
    cache keeps any): its ``index`` fields number the batch's inputs, each once; every
    vector is a non-empty list of numbers, not all zero; and every vector has one size, the
    size of the first answer (or ``dimensions``) for the whole life of the client, query and
    passage vectors alike.

    Attributes:
        embedded: Inputs answered so far (beside ``requests`` and ``retried``).
        size: The vector size, fixed by ``dimensions`` or the first answer (None before).

    Raises:
        InputError: ``dimensions`` is not a whole number of at least 1.
    """

    def __init__(
        self, model: str, endpoint: str | None = None, dimensions: int | None = None, **common: Any
    ) -> None:
        if dimensions is not None:
            whole_option("dimensions", dimensions, 1)
        super().__init__(model, endpoint, **common)
        self.dimensions = dimensions
        self.size: int | None = dimensions
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
            return np.zeros((0, self.size or 0), dtype=np.float32)
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
        data = getattr(response, "data", None)
        items = data if isinstance(data, list) else []
        if len(items) != count:
            raise self._malformed(
                "",
                f"{count} vectors of one size",
                f"{len(items)} vectors",
                "Check that the endpoint serves the embeddings API (not chat only).",
            )
        indexes = [_field(item, "index") for item in items]
        if not all(type(i) is int for i in indexes) or sorted(indexes) != list(range(count)):
            raise self._malformed(
                ": its index fields do not number the inputs",
                f"each of 0 to {count - 1} once",
                ", ".join(repr(i) for i in indexes[:12]) + (", …" if count > 12 else ""),
            )
        rows: list[Any] = [None] * count
        for index, item in zip(indexes, items, strict=True):
            rows[index] = _field(item, "embedding")
        for number, row in enumerate(rows):
            self._check_row(number, row)
        sizes = sorted({len(row) for row in rows})
        if len(sizes) > 1:
            raise self._malformed(": its vectors differ in size", "one size", f"sizes {sizes}")
        self._check_size(sizes[0])
        vectors = np.asarray(rows, dtype=np.float32)
        found = length_problem(vectors)
        if found is not None:
            number, problem, _ = found
            raise self._malformed(
                f": vector {number} {problem}",
                "a vector with a direction (one of no length scores 0 against everything)",
                hint="Check the model and what was sent; nothing of this answer is kept.",
            )
        return vectors

    def _check_row(self, number: int, row: Any) -> None:
        if not isinstance(row, list):
            found = quoted(row)
            raise self._malformed(f": vector {number} is not a list", "a list of numbers", found)
        if not row:
            raise self._malformed(f": vector {number} is empty", "a list of numbers", "[]")
        wrong = next((x for x in row if type(x) not in (float, int)), _NONE)
        if wrong is not _NONE:
            raise self._malformed(f": vector {number} holds {quoted(wrong)}", "numbers")

    def _check_size(self, size: int) -> None:
        if self.size is None:
            self.size = size
            return
        if size != self.size and self.dimensions is not None:
            raise EndpointError(
                f"{self.endpoint} ignored the dimensions asked for model {self.model!r}",
                expected=f"vectors of {self.dimensions}",
                found=f"vectors of {size}",
                hint="Drop --option dimensions=N: this model has a fixed size.",
            )
        if size != self.size:
            raise EndpointError(
                f"{self.endpoint} (model {self.model!r}) answered vectors of {size} numbers",
                expected=f"{self.size}, the size of its first answer",
                hint="The model behind this name changed size during the run; nothing of "
                "this answer is kept. Rerun once the server answers one size.",
            )

    def _malformed(
        self, problem: str, expected: str, found: str | None = None, hint: str | None = None
    ) -> EndpointError:
        return EndpointError(
            f"{self.endpoint} answered a malformed embeddings response{problem}",
            expected=expected,
            found=found,
            hint=hint
            or "Nothing of this answer is kept; check that the server speaks "
            "OpenAI's embeddings API.",
        )


_NONE = object()


def _field(item: Any, name: str) -> Any:
    # The openai library builds its answer objects without validating them (a field may
    # hold anything the server sent); a server's item may even be something else.
    return item.get(name) if isinstance(item, dict) else getattr(item, name, None)
