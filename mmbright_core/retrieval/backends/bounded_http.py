"""HTTP answers bounded in size and in time: what a broken or hostile endpoint cannot exceed.

Every client of an OpenAI-compatible endpoint (embeddings, chat, the LLM rerankers) sends
through the ``httpx`` client :func:`bounded_client` makes, which holds each answer to:

- a size: at most ``max_answer_bytes`` of body are read (error answers too); the next byte
  ends the request with one line, before a larger answer is held in memory. Answers are
  asked for uncompressed (``Accept-Encoding: identity``) and a compressed one is refused,
  so the bytes counted are the bytes kept (a small gzip body may expand a thousandfold).
- a time: ``timeout`` is the whole request's, from connecting to the answer's last byte,
  not httpx's per-read timeout (a server sending one byte a second never times out a read).
  Each step (connecting, sending, the wait for the headers, each read) is given what is
  left of it, and the body is read against the same deadline: an answer still arriving
  then is dropped at its next byte and counts as a timeout (retried as one).

Redirects are not followed: a redirect is answered as the HTTP status it is, and the key
and inputs go to no other address than the endpoint given.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from mmbright_core.errors import EndpointError
from mmbright_core.io.limits import size_text
from mmbright_core.retrieval.backends.endpoint_errors import public_endpoint
from mmbright_core.retrieval.base import require

#: The most bytes read of one answer unless ``max_answer_bytes`` says otherwise: 64 MiB,
#: ten times a full batch of 64 vectors of 3,072 numbers written as JSON.
DEFAULT_MAX_ANSWER_BYTES = 64 << 20
_DEADLINE = "mmbright.deadline"
# The shortest wait handed to a socket: 0 would make it non-blocking, not a timeout.
_LEAST_WAIT = 0.001


def bounded_client(timeout: float, max_bytes: int, what: str) -> Any:
    """Return an ``httpx.Client`` whose requests take at most ``timeout`` s and ``max_bytes``.

    Args:
        timeout: Seconds one request may take, from connecting to its last byte.
        max_bytes: The most bytes read of one answer's body.
        what: What needs the client, for the missing-dependency message.

    Raises:
        MissingDependencyError: ``httpx`` is not installed.
    """
    httpx = require("httpx", what, "api")

    class Bounded(httpx.SyncByteStream):  # type: ignore[name-defined]
        """An answer's body, read against the request's deadline and the byte cap."""

        def __init__(self, inner: Any, response: Any) -> None:
            self.inner, self.response = inner, response

        def __iter__(self) -> Iterator[bytes]:
            request = self.response.request
            deadline, read = request.extensions[_DEADLINE], 0
            for chunk in self.inner:
                read += len(chunk)
                if read > max_bytes:
                    raise too_large(request.url, max_bytes)
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the answer was still coming", request=request)
                yield chunk

        def close(self) -> None:
            self.inner.close()

    def on_request(request: Any) -> None:
        deadline = time.monotonic() + timeout
        request.extensions[_DEADLINE] = deadline
        request.extensions["timeout"] = Remaining(request.extensions.get("timeout", {}), deadline)
        request.headers["Accept-Encoding"] = "identity"

    def on_response(response: Any) -> None:
        encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise EndpointError(
                f"{_shown_url(response.request.url)} answered a compressed body "
                "though none was asked for",
                found=f"Content-Encoding: {encoding}",
                hint="A compressed answer cannot be bounded before it is expanded; "
                "serve the API without compression.",
            )
        response.stream = Bounded(response.stream, response)

    return httpx.Client(
        timeout=timeout,
        follow_redirects=False,
        event_hooks={"request": [on_request], "response": [on_response]},
    )


class Remaining(dict[str, Any]):
    """httpcore's per-step timeouts, each cut to what is left before the deadline.

    httpcore reads the ``timeout`` extension when a step starts (connecting, writing, the
    wait for the headers, the body): each then waits at most what is left of the request.
    """

    def __init__(self, given: Mapping[str, Any], deadline: float) -> None:
        super().__init__(given)
        self.deadline = deadline

    def get(self, key: str, default: Any = None) -> Any:
        """Return the step's timeout, at most the time left (at least a millisecond)."""
        left = max(_LEAST_WAIT, self.deadline - time.monotonic())
        value = super().get(key, default)
        return left if value is None else min(float(value), left)


def too_large(url: object, max_bytes: int) -> EndpointError:
    """The one-line error of an answer longer than ``max_bytes``."""
    return EndpointError(
        f"{_shown_url(url)} answered more than {size_text(max_bytes)}; the rest was not read",
        expected=f"at most {max_bytes:,} bytes (--option max_answer_bytes)",
        hint="Ask for fewer inputs per request (--option batch_size=N), or raise "
        "--option max_answer_bytes=BYTES if the server is trusted to send that much.",
    )


def _shown_url(url: object) -> str:
    return public_endpoint(str(url))
