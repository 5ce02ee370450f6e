"""Answers are bounded in bytes and requests in time, for every endpoint client alike."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from openai_server import CHAT_MODEL, KEY, MODEL, OpenAIServer, serving

from mmbright_core.endpoints.client import Limits
from mmbright_core.errors import EndpointError
from mmbright_core.llm.chat import ChatClient
from mmbright_core.retrieval.backends.api_client import EmbeddingClient


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serving() as running:
        yield running  # type: ignore[misc]


def embeddings(url: str, limits: Limits) -> Callable[[], object]:
    made = EmbeddingClient(MODEL, url, limits=limits)  # made before the request is timed
    return lambda: made.embed(["a", "b"])


def chat(url: str, limits: Limits) -> Callable[[], object]:
    made = ChatClient(CHAT_MODEL, url, limits=limits, sleep=lambda _: None)
    return lambda: made.complete([{"role": "user", "content": "hello"}])


CLIENTS = [embeddings, chat]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_trickled_answer_times_out_at_the_requests_timeout(
    server: OpenAIServer, client: Callable[[str, Limits], Callable[[], object]]
) -> None:
    # One byte every 0.1 s: each read is quick, the whole answer would take 20 s or more.
    server.faults = ["trickle"]
    ask = client(server.url, Limits(timeout=1.0, retries=0))
    started = time.monotonic()
    with pytest.raises(EndpointError, match=r"timed out \(1 attempts, 1 s each\)"):
        ask()
    assert time.monotonic() - started < 2.5


@pytest.mark.parametrize("client", CLIENTS)
def test_a_huge_answer_is_refused_once_the_cap_is_read(
    server: OpenAIServer, client: Callable[[str, Limits], Callable[[], object]]
) -> None:
    server.faults = ["huge"]
    ask = client(server.url, Limits(timeout=30.0, retries=0, max_answer_bytes=1 << 20))
    with pytest.raises(EndpointError, match=r"answered more than 1 MiB; the rest was not read"):
        ask()
    assert server.sent < 32 << 20  # of 256 MiB offered


# What a server that never finishes its status line and headers sends, a piece at a time:
# the headers one byte at a time, or "102 Processing" interim answers without end.
STALLING = {
    "trickled_headers": [bytes([b]) for b in b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * 10_000],
    "endless_102": [b"HTTP/1.1 102 Processing\r\n\r\n"] * 10_000,
}


@contextmanager
def stalling_server(
    pieces: list[bytes], every: float = 0.05, lifetime: float = 15.0
) -> Iterator[str]:
    """A loopback server that sends ``pieces`` to each connection, one every ``every`` s.

    It stops by itself after ``lifetime`` seconds, whatever the client does.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = time.monotonic() + lifetime

    def serve() -> None:
        with listener:
            while time.monotonic() < stop:
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                with conn:
                    conn.recv(65536)  # the request (its start is enough)
                    for piece in pieces:
                        if time.monotonic() > stop:
                            break
                        try:
                            conn.sendall(piece)
                        except OSError:  # the client gave up
                            break
                        time.sleep(every)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
    finally:
        stop = time.monotonic()
        thread.join(timeout=5)


@pytest.mark.parametrize("stall", sorted(STALLING))
@pytest.mark.parametrize("client", CLIENTS)
def test_a_stalled_status_line_or_header_times_out_at_the_requests_timeout(
    monkeypatch: pytest.MonkeyPatch,
    stall: str,
    client: Callable[[str, Limits], Callable[[], object]],
) -> None:
    # Each read gets a byte at once: only a deadline across reads ends the wait.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with stalling_server(STALLING[stall]) as url:
        ask = client(url, Limits(timeout=1.0, retries=0))
        started = time.monotonic()
        with pytest.raises(EndpointError) as raised:
            ask()
        took = time.monotonic() - started
    assert re.match(
        rf"{re.escape(url)} \(model '[\w-]+'\) timed out \(1 attempts, 1 s each\)",
        str(raised.value),
    )
    assert "\n" not in str(raised.value)
    assert took < 2.5
