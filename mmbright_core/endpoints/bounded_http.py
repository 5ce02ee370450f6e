"""HTTP answers bounded in size and in time: what a broken or hostile endpoint cannot exceed.

Every client of an OpenAI-compatible endpoint (embeddings, chat, the LLM rerankers) sends
through the ``httpx`` client :func:`bounded_client` makes, which holds each answer to:

- a size: at most ``max_answer_bytes`` of body are read (error answers too); the next byte
  ends the request with one line, before a larger answer is held in memory. Answers are
  asked for uncompressed (``Accept-Encoding: identity``) and a compressed one is refused,
  so the bytes counted are the bytes kept (a small gzip body may expand a thousandfold).
- a time: ``timeout`` is the whole request's, from connecting to the answer's last byte,
  not httpx's per-read timeout (a server sending one byte a second never times out a read).
  Every read and write of the connection's socket is given what is left of the request's
  time, and none starts once it is spent: a status line or headers trickled a byte at a
  time, or ``102 Processing`` interim answers sent without end (httpcore reads past each),
  end at the deadline like a slow body. An answer still arriving then is dropped at its
  next byte and counts as a timeout (retried as one).

Redirects are not followed: a redirect is answered as the HTTP status it is, and the key
and inputs go to no other address than the endpoint given.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from mmbright_core.endpoints.failures import public_endpoint
from mmbright_core.errors import EndpointError, require
from mmbright_core.io.reading import size_text

#: The most bytes read of one answer unless ``max_answer_bytes`` says otherwise: 64 MiB,
#: ten times a full batch of 64 vectors of 3,072 numbers written as JSON.
DEFAULT_MAX_ANSWER_BYTES = 64 << 20
_DEADLINE = "mmbright.deadline"
# The deadline of the request each thread is sending (a request is sent and read in the
# thread that asked for it); the connections' sockets read it before each read or write.
_SENDING = threading.local()


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
    httpcore = require("httpcore", what, "api")

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
        _SENDING.deadline = deadline
        request.extensions[_DEADLINE] = deadline
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

    transport = httpx.HTTPTransport()
    # httpx takes no network backend of its own; its pool (httpcore's) does.
    pool = transport._pool
    pool._network_backend = _deadline_backend(httpcore, pool._network_backend)
    return httpx.Client(
        timeout=timeout,
        follow_redirects=False,
        transport=transport,
        event_hooks={"request": [on_request], "response": [on_response]},
    )


def _deadline_backend(httpcore: Any, inner: Any) -> Any:
    """``inner`` (httpcore's network backend), its sockets bound by the request's deadline."""

    def left(timeout: float | None, late: type[Exception]) -> float | None:
        # What is left of the request's time (at most ``timeout``); ``late`` once it is spent.
        deadline = getattr(_SENDING, "deadline", None)
        if deadline is None:
            return timeout
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise late("the request's time was spent before its answer was read")
        return remaining if timeout is None else min(timeout, remaining)

    class Stream(httpcore.NetworkStream):
        """A connection whose every read and write ends by the request's deadline."""

        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self.stream.read(max_bytes, left(timeout, httpcore.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self.stream.write(buffer, left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self.stream.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> Any:
            wait = left(timeout, httpcore.ConnectTimeout)
            return Stream(self.stream.start_tls(ssl_context, server_hostname, wait))

        def get_extra_info(self, info: str) -> Any:
            return self.stream.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):
        """``inner``, handing out connections bound by the request's deadline."""

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            wait = left(timeout, httpcore.ConnectTimeout)
            return Stream(inner.connect_tcp(host, port, wait, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Any = None
        ) -> Any:
            wait = left(timeout, httpcore.ConnectTimeout)
            return Stream(inner.connect_unix_socket(path, wait, socket_options))

        def sleep(self, seconds: float) -> None:
            inner.sleep(seconds)

    return Backend()


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
