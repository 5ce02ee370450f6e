"""``llm:MODEL``: an LLM behind an OpenAI-compatible chat endpoint as a reranker.

Two modes (docs/commands.md, "Rerankers"):

- ``pointwise``: one request per candidate asks for a relevance grade 0-3; the grades are
  the scores (ties keep the first-stage order). Candidates are asked ``concurrency`` at a
  time.
- ``listwise``: RankGPT's sliding window. The last ``window`` candidates are ranked in one
  request (``[2] > [1] > [3]``), then the window moves ``step`` places towards the top,
  and again, until it covers the first candidate; each window's winners travel upwards.

On tasks 2-4 the query's images go with every request, and on tasks 3-4 each candidate's
image goes beside its number, as PNG data URLs (:mod:`mmbright_core.llm.images`). Every
answer is cached by its whole request (:mod:`mmbright_core.llm.cache`). An answer that is
unusable (no text, a grade that is not 0-3, a window answer that is not a permutation of
its numbers) makes the query keep its first-stage order, with the problem recorded:
never a silent reordering.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.errors import InputError, show
from mmbright_core.llm.chat import ChatClient, Message
from mmbright_core.llm.images import DEFAULT_SIDE, data_url
from mmbright_core.llm.options import chat_client, option_number
from mmbright_core.rerank.base import Candidate, ImageStore, Reranked, RerankQuery
from mmbright_core.task_table import task_info

MODES = ("pointwise", "listwise")

POINTWISE = """Here is a question posted on the {domain} StackExchange site{images}.

Question: {query}

Here is a document{doc_images}.

Document: {document}

How much does the document help answer the question? Answer with one number only: 0 (not \
at all), 1 (on the topic), 2 (relevant: it holds part of an answer) or 3 (it answers the \
question)."""

LISTWISE = """Here is a question posted on the {domain} StackExchange site{images}, and {n} \
documents, each marked by a number in brackets.

Question: {query}
"""

LISTWISE_END = """
Question: {query}

Rank the {n} documents by how much they help answer the question, most helpful first. \
Answer only with the ranking of all {n} numbers, like [2] > [1] > [3], and no other text."""

_GRADE = re.compile(r"\b([0-3])\b")
_NUMBER = re.compile(r"\[(\d+)\]")


class LlmReranker:
    """Reranks with a chat model, pointwise or by sliding windows.

    Args:
        client: The chat client (model, endpoint, parameters, limits, cache).
        mode: ``pointwise`` or ``listwise``.
        window: Candidates ranked in one listwise request.
        step: Places a listwise window moves towards the top each time.
        max_chars: Each document's text is cut to this many characters.
        query_images: ``all`` or ``first`` of the query's images that decode (tasks 2-4).
        side: Images' longest side in pixels.
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        mode: str = "listwise",
        window: int = 20,
        step: int = 10,
        max_chars: int = 2000,
        query_images: str = "all",
        side: int = DEFAULT_SIDE,
    ) -> None:
        _check(mode in MODES, "mode", " or ".join(MODES), mode)
        _check(query_images in ("all", "first"), "query_images", "all or first", query_images)
        _check(window >= 2, "window", "an integer of at least 2", window)
        _check(1 <= step < window, "step", f"an integer from 1 to {window - 1}", step)
        _check(max_chars >= 1, "max_chars", "a positive integer", max_chars)
        self.client, self.mode, self.window, self.step = client, mode, window, step
        self.max_chars, self.query_images, self.side = max_chars, query_images, side
        self.name = f"llm:{client.model}"

    def label(self) -> str:
        """Return ``llm-<model>-<mode>``."""
        return f"llm-{self.client.model}-{self.mode}".replace("/", "-")

    def settings(self) -> dict[str, Any]:
        """Return the model, endpoint, mode and everything that shapes a request."""
        prompts = (POINTWISE if self.mode == "pointwise" else LISTWISE + LISTWISE_END).encode()
        windows = {"window": self.window, "step": self.step} if self.mode == "listwise" else {}
        return {
            "model": self.client.model,
            "endpoint": self.client.endpoint,
            "mode": self.mode,
            **windows,
            "max_chars": self.max_chars,
            "query_images": self.query_images,
            "image_side": self.side,
            "parameters": dict(self.client.parameters),
            "prompt_sha256": hashlib.sha256(prompts).hexdigest(),
        }

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Order ``candidates`` for ``query`` (see the module)."""
        if len(candidates) < 2:
            return Reranked.from_order(range(len(candidates)))
        if self.mode == "pointwise":
            return self._pointwise(query, candidates, images)
        return self._listwise(query, candidates, images)

    def _pointwise(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        shown = self._query_urls(query, images)
        requests = [self._grade_request(query, shown, c, images) for c in candidates]
        grades: list[float] = []
        for candidate, reply in zip(candidates, self.client.complete_all(requests), strict=True):
            if reply.text is None:
                return Reranked.failed(f"{candidate.doc_id}: {reply.problem}")
            found = _GRADE.search(reply.text)
            if found is None:
                return Reranked.failed(
                    f"{candidate.doc_id}: the answer {show(reply.text)} is no grade 0-3"
                )
            grades.append(float(found.group(1)))
        return Reranked.from_scores(grades)

    def _listwise(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        shown = self._query_urls(query, images)
        order = list(range(len(candidates)))
        for start, end in windows(len(candidates), self.window, self.step):
            placed = order[start:end]
            request = self._window_request(query, shown, [candidates[i] for i in placed], images)
            reply = self.client.complete(request)
            if reply.text is None:
                return Reranked.failed(f"window {start + 1}-{end}: {reply.problem}")
            permutation = parse_permutation(reply.text, len(placed))
            if isinstance(permutation, str):
                return Reranked.failed(f"window {start + 1}-{end}: {permutation}")
            order[start:end] = [placed[i] for i in permutation]
        return Reranked.from_order(order)

    def _grade_request(
        self,
        query: RerankQuery,
        shown: list[str],
        candidate: Candidate,
        images: ImageStore | None,
    ) -> list[Message]:
        doc_urls = self._doc_urls(query.domain, candidate, images)
        text = POINTWISE.format(
            domain=query.domain,
            images=_with_images(shown),
            query=query.text,
            doc_images=" and its image" if doc_urls else "",
            document=self._text(candidate),
        )
        parts = [_text_part(text), *(_image_part(u) for u in [*shown, *doc_urls])]
        return [{"role": "user", "content": parts if len(parts) > 1 else text}]

    def _window_request(
        self,
        query: RerankQuery,
        shown: list[str],
        placed: Sequence[Candidate],
        images: ImageStore | None,
    ) -> list[Message]:
        n = len(placed)
        head = LISTWISE.format(
            domain=query.domain, images=_with_images(shown), n=n, query=query.text
        )
        parts: list[dict[str, Any]] = [_text_part(head), *(_image_part(u) for u in shown)]
        for number, candidate in enumerate(placed, start=1):
            parts.append(_text_part(f"\n[{number}] {self._text(candidate)}"))
            parts += [_image_part(u) for u in self._doc_urls(query.domain, candidate, images)]
        parts.append(_text_part(LISTWISE_END.format(query=query.text, n=n)))
        return [{"role": "user", "content": parts}]

    def _text(self, candidate: Candidate) -> str:
        if candidate.text is None:
            return "(an image, shown after this line)" if candidate.image_paths else "(empty)"
        return candidate.text[: self.max_chars]

    def _query_urls(self, query: RerankQuery, images: ImageStore | None) -> list[str]:
        if task_info(query.task).text_only or images is None:
            return []
        urls = []
        for path in query.image_paths:
            url = _url(images.query_image_bytes(query.domain, path), path, self.side)
            if url is not None:
                urls.append(url)
                if self.query_images == "first":
                    break
        return urls

    def _doc_urls(self, domain: str, candidate: Candidate, images: ImageStore | None) -> list[str]:
        if images is None:
            return []
        found = (
            _url(images.document_image_bytes(domain, p), p, self.side)
            for p in candidate.image_paths
        )
        return [url for url in found if url is not None]


def windows(size: int, window: int, step: int) -> list[tuple[int, int]]:
    """RankGPT's windows over ``size`` candidates, bottom first: ``(start, end)`` slices."""
    out = []
    end = size
    while True:
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            return out
        end -= step


def parse_permutation(text: str, size: int) -> tuple[int, ...] | str:
    """Return the 0-based order a ``[2] > [1] > [3]`` answer gives, or what is wrong with it."""
    numbers = [int(n) for n in _NUMBER.findall(text)]
    if sorted(numbers) != list(range(1, size + 1)):
        return (
            f"the answer {show(text)} is not a permutation of [1]..[{size}]"
            f" (found {len(numbers)} numbers, {len(set(numbers))} distinct)"
        )
    return tuple(n - 1 for n in numbers)


def _url(data: bytes | None, path: str, side: int) -> str | None:
    try:
        return data_url(decode_image(data, path), side)
    except ImageDecodeError:
        return None  # as the official loader drops it


def _with_images(urls: Sequence[str]) -> str:
    return "" if not urls else f", with its image{'s' if len(urls) > 1 else ''} (shown below)"


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _check(ok: bool, name: str, expected: str, found: object) -> None:
    if not ok:
        raise InputError(f"bad llm reranker option {name}", expected=expected, found=repr(found))


#: The reranker's own numeric options, with their types; ``mode`` and ``query_images`` are
#: taken as given, and every other option configures the chat client.
_NUMBERS = {"window": int, "step": int, "max_chars": int, "image_side": int}


def llm_reranker(
    model: str, endpoint: str | None = None, cache_dir: str | None = None, **options: Any
) -> LlmReranker:
    """Build ``llm:MODEL`` (the registry's factory).

    ``options``: the reranker's own (``mode``, ``window``, ``step``, ``max_chars``,
    ``query_images``, ``image_side``, as :class:`LlmReranker` takes them), sampling
    parameters (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop``), limits
    (``concurrency``, ``timeout``, ``retries``, ``backoff``, ``max_requests``,
    ``token_budget``) and ``api_key_env``, as ``mmbright rewrite`` takes.

    Raises:
        InputError: An option no part takes, or a number that is not one.
    """
    own: dict[str, Any] = {n: options.pop(n) for n in ("mode", "query_images") if n in options}
    for name, kind in _NUMBERS.items():
        if name in options:
            own[name] = option_number(name, options.pop(name), kind)
    side = own.pop("image_side", DEFAULT_SIDE)
    return LlmReranker(chat_client(model, endpoint, options, cache_dir), side=side, **own)
