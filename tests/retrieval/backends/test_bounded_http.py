"""Answers are bounded in bytes and requests in time, for every endpoint client alike."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from openai_server import CHAT_MODEL, KEY, MODEL, OpenAIServer, serving

from mmbright_core.errors import EndpointError
from mmbright_core.llm.chat import ChatClient
from mmbright_core.retrieval.backends.api_client import EmbeddingClient, Limits


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serving() as running:
        yield running  # type: ignore[misc]


def embeddings(url: str, limits: Limits) -> Callable[[], object]:
    return lambda: EmbeddingClient(MODEL, url, limits=limits).embed(["a", "b"])


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
