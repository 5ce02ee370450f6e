"""Chat completions from an OpenAI-compatible endpoint, done properly.

:class:`ChatClient` sends ``POST {endpoint}/chat/completions`` through the real ``openai``
client (vLLM, Ollama, llama.cpp's server, LiteLLM, OpenAI all speak it) with what
:class:`~mmbright_core.endpoints.client.EndpointClient` gives every endpoint client:
a timeout per call, retries with exponential backoff on 429/5xx, timeouts and dropped
connections, a request budget, and one-line messages for an unreachable endpoint, a refused
key or an unknown model. On top of that it keeps at most ``concurrency`` requests in flight,
stops cleanly once a token budget is spent (the answers in flight are kept), shows progress
with counts and tokens, and answers from the content-keyed cache
(:mod:`mmbright_core.llm.cache`) whatever it was asked before.

An answer that is not what the API promises (no choice, no text), an empty one (nothing but
white space), or one its caller cannot use (``check``: a reranker's answer that names no
usable ranking), is not an error of the whole job: it comes back with its ``problem`` said,
is not cached (a rerun asks again), and the caller records it (a rewrite keeps the original
query; a reranker keeps the first-stage order). Its tokens count all the same: the server
was asked. Token counts (``usage``) are read as the API promises them, whole numbers of at
least 0, or left out (then 0): any other (a string, null, a negative number) is one
:class:`~mmbright_core.errors.EndpointError` line, so that no answer can lower the count the
token budget is kept against.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from tqdm.auto import tqdm

from mmbright_core.endpoints.client import DEFAULT_KEY_ENV, EndpointClient, Limits
from mmbright_core.errors import EndpointError, RequestBudgetError
from mmbright_core.io.json_shapes import json_kind
from mmbright_core.io.rewrites import MOST_TOKENS
from mmbright_core.llm.cache import ChatAnswer, ChatCache, request_key

Message = Mapping[str, Any]
"""One chat message as the API takes it: ``{"role": ..., "content": str | [parts]}``."""

Check = Callable[[str], str | None]
"""What a caller finds wrong with an answer's text (a one-line problem), or None."""

#: Sampling parameters sent unless others are given: greedy decoding, so reruns agree.
DEFAULT_PARAMETERS: Mapping[str, Any] = {"temperature": 0}
#: The sampling parameters the client passes on (anything else is refused by the caller).
SAMPLING = ("temperature", "top_p", "max_tokens", "seed", "stop")
#: The token counts of an answer's ``usage`` the client reads.
USAGE_FIELDS = ("prompt_tokens", "completion_tokens")


@dataclass(frozen=True)
class Reply:
    """One answer of :meth:`ChatClient.complete_all`.

    Attributes:
        answer: The answer (None when the server's answer was unusable).
        problem: Why the answer was unusable (no choice, no text), else None.
    """

    answer: ChatAnswer | None
    problem: str | None = None

    @property
    def text(self) -> str | None:
        """The answer's text, or None when there is none."""
        return None if self.answer is None else self.answer.text


class ChatClient(EndpointClient):
    """Chat completions with a cache, bounded concurrency and budgets.

    Args:
        model: The model name the server knows.
        endpoint: The API's base URL (``http://localhost:8000/v1``); None: the ``openai``
            library's default.
        api_key_env: The environment variable holding the key.
        parameters: Sampling parameters sent with every request (default: temperature 0);
            they key the cache.
        limits: Timeout, retries, concurrency, the request and the token budget.
        cache: Where answers are kept (default: nowhere).
        sleep: How to wait between attempts.

    Attributes:
        answered: Requests answered by the server so far.
        empty: Answers of the server so far whose text was empty (or white space only).
        from_cache: Requests answered from the cache so far.
        tokens: Tokens the server counted for the answers received (prompt + completion).
    """

    def __init__(
        self,
        model: str,
        endpoint: str | None = None,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        parameters: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        cache: ChatCache | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(
            model, endpoint, api_key_env=api_key_env, limits=limits, sleep=sleep, what="LLM calls"
        )
        self.parameters = dict(DEFAULT_PARAMETERS if parameters is None else parameters)
        self.cache = cache or ChatCache(None)
        self.answered = self.empty = self.from_cache = self.tokens = 0

    def key(self, messages: Sequence[Message]) -> str:
        """Return the cache key of a request of these messages."""
        return request_key(self.endpoint, self.model, self.parameters, messages)

    def complete(self, messages: Sequence[Message], check: Check | None = None) -> Reply:
        """Answer one request, from the cache when it was asked before.

        Args:
            messages: The request's messages.
            check: What the caller finds wrong with an answer's text (None: nothing); an
                answer it finds wrong, or an empty one, comes back with that problem and is
                not cached.

        Raises:
            EndpointError: The endpoint cannot be used (unreachable, refused key, unknown
                model, failing after the retries).
            RequestBudgetError: The request or token budget is spent.
        """
        key = self.key(messages)
        found = self.cache.get(key, self.model)
        if found is not None and self._problem(found.text, check) is None:
            with self._lock:
                self.from_cache += 1
            return Reply(found)
        reply = self.call(lambda: self._reply(self._create(messages)))
        blank = reply.answer is not None and not reply.answer.text.strip()
        with self._lock:
            self.answered += 1
            self.empty += blank
            self.tokens += 0 if reply.answer is None else reply.answer.tokens
        if reply.answer is None:
            return reply
        problem = self._problem(reply.answer.text, check)
        if problem is not None:
            return Reply(None, problem)
        self.cache.put(key, self.model, reply.answer)
        return reply

    def _problem(self, text: str, check: Check | None) -> str | None:
        """What is wrong with an answer's text: empty, or what ``check`` finds; else None."""
        if not text.strip():
            return f"{self.endpoint} answered an empty text"
        return None if check is None else check(text)

    def complete_all(
        self, requests: Sequence[Sequence[Message]], desc: str = "llm", check: Check | None = None
    ) -> list[Reply]:
        """Answer every request, ``concurrency`` at a time, in the order given.

        ``check`` is :meth:`complete`'s. When one request fails for good (or a budget is
        spent), no further request is sent; those in flight finish and their answers are
        cached, then the error is raised.
        """
        replies: list[Reply | None] = [None] * len(requests)
        bar = tqdm(total=len(requests), desc=desc, unit="call", leave=False, disable=None)
        workers = max(1, int(self.limits.concurrency))
        try:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = {pool.submit(self.complete, r, check): i for i, r in enumerate(requests)}
                self._collect(futures, replies, bar)
        finally:
            bar.close()
        return [reply for reply in replies if reply is not None]

    def _collect(
        self, futures: dict[Future[Reply], int], replies: list[Reply | None], bar: Any
    ) -> None:
        waiting = set(futures)
        while waiting:
            done, waiting = wait(waiting, return_when=FIRST_EXCEPTION)
            for future in done:
                if future.exception() is None:
                    replies[futures[future]] = future.result()
                    bar.update(1)
            bar.set_postfix(self.progress())
            failed = [f for f in done if f.exception() is not None]
            if failed:
                for future in waiting:
                    future.cancel()  # queued ones never start; running ones finish
                wait(waiting)
                raise failed[0].exception()  # type: ignore[misc]

    def progress(self) -> dict[str, int]:
        """The counts a progress bar shows."""
        return {
            "requests": self.requests,
            "retried": self.retried,
            "cached": self.from_cache,
            "tokens": self.tokens,
        }

    def done_text(self) -> str:
        """What was answered so far, for a budget's message."""
        return f"{self.answered:,} answered ({self.tokens:,} tokens), {self.from_cache:,} cached"

    def _spend(self) -> None:
        budget = self.limits.token_budget
        if budget is not None and self.tokens >= budget:
            raise RequestBudgetError(
                f"token budget spent: {self.tokens:,} of {budget:,} tokens used at "
                f"{self.endpoint}, {self.done_text()}",
                requests=self.requests,
                hint="What was answered is in the cache and is not asked again; rerun with "
                "a larger --option token_budget=N to go on.",
            )
        super()._spend()

    def _create(self, messages: Sequence[Message]) -> Any:
        return self._client.chat.completions.create(
            model=self.model, messages=list(messages), **self.parameters
        )

    def _reply(self, response: Any) -> Reply:
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            found = "no choice" if not choices else "a choice without text"
            return Reply(None, f"{self.endpoint} answered a malformed chat response ({found})")
        return Reply(ChatAnswer(text, *self._counts(getattr(response, "usage", None))))

    def _counts(self, usage: Any) -> tuple[int, int]:
        """The prompt and completion tokens the server counted (0 where it counted none).

        Raises:
            EndpointError: A count given that is not a whole number from 0 to 2^63 - 1
                (a string, null, an object, a boolean, a fraction, a negative number):
                the token budget and the records take only counts.
        """
        if usage is None:
            return 0, 0
        given = getattr(usage, "model_fields_set", None)
        wrong = [] if given is not None else [f"usage is {json_kind(usage)}"]
        counts: list[int] = []
        for field in USAGE_FIELDS:
            value = getattr(usage, field, None) if given and field in given else 0
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                wrong.append(f"{field} is {json_kind(value)}")
            elif value > MOST_TOKENS:
                wrong.append(f"{field} is the number {value}")
            else:
                counts.append(value)
        if wrong:
            raise EndpointError(
                f"{self.endpoint} answered token counts that are not counts",
                expected=f"usage with {' and '.join(USAGE_FIELDS)} whole numbers of at least 0 "
                "(or left out)",
                found=", ".join(wrong),
                hint="Fix the server's usage counts, or use a server that counts as the API "
                "does: the token budget and the query set's records need them.",
            )
        return counts[0], counts[1]
