"""The OpenAI-compatible client against a real HTTP server on loopback, driven by ``openai``."""

from __future__ import annotations

import numpy as np
import pytest
from openai_server import KEY, MODEL, serving, vector_of

from mmbright_core.endpoints.client import Limits
from mmbright_core.endpoints.failures import public_endpoint
from mmbright_core.errors import EndpointError, MissingDependencyError, RequestBudgetError
from mmbright_core.retrieval.backends.api_client import EmbeddingClient, batches

FAST = Limits(batch_inputs=2, timeout=0.5, retries=2, backoff=0.0)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def client(url: str, limits: Limits = FAST, **options: object) -> EmbeddingClient:
    waits: list[float] = []
    made = EmbeddingClient(MODEL, url, limits=limits, sleep=waits.append, **options)  # type: ignore[arg-type]
    made.waits = waits  # type: ignore[attr-defined]
    return made


def test_vectors_are_the_servers_in_input_order_over_batches() -> None:
    texts = ["alpha", "beta", "gamma", "delta", "epsilon"]
    with serving() as server:
        made = client(server.url)
        vectors = made.embed(texts)
    np.testing.assert_array_equal(vectors, np.stack([vector_of(t) for t in texts]))
    assert vectors.dtype == np.float32
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]  # batch_inputs=2
    assert (made.requests, made.embedded, made.retried) == (3, 5, 0)


def test_batches_are_bounded_by_characters_and_a_long_input_goes_alone() -> None:
    limits = Limits(batch_inputs=10, batch_chars=10)
    texts = ["aaaa", "bbbb", "cccc", "x" * 50, "d"]
    assert list(batches(texts, limits)) == [(0, 2), (2, 3), (3, 4), (4, 5)]


def test_dimensions_are_asked_for_and_checked() -> None:
    with serving() as server:
        vectors = client(server.url, dimensions=5).embed(["a"])
    assert server.requests[0]["dimensions"] == 5
    np.testing.assert_array_equal(vectors[0], vector_of("a", 5))


def test_a_size_other_than_asked_is_refused() -> None:
    with serving() as server:
        server.fixed_size = True
        with pytest.raises(EndpointError, match=r"ignored the dimensions .* found vectors of 8"):
            client(server.url, dimensions=5).embed(["a"])


def test_fewer_vectors_than_inputs_is_a_malformed_answer() -> None:
    with serving() as server:
        server.faults = ["short"]
        with pytest.raises(EndpointError, match=r"malformed .* expected 2 vectors .* found 1"):
            client(server.url).embed(["a", "b"])


def test_429_then_success_is_retried_after_the_servers_retry_after() -> None:
    with serving() as server:
        server.faults = ["429", "500"]
        made = client(server.url, Limits(retries=2, backoff=0.25))
        vectors = made.embed(["one"])
    np.testing.assert_array_equal(vectors[0], vector_of("one"))
    assert made.requests == 3 and made.retried == 2
    # 429 carried Retry-After: 0; the 500 waited the exponential backoff (0.25 x 2**1).
    assert made.waits == [0.0, 0.5]  # type: ignore[attr-defined]


def test_backoff_doubles_up_to_the_cap() -> None:
    limits = Limits(backoff=1.0, backoff_cap=3.0)
    assert [limits.delay(n, None) for n in range(4)] == [1.0, 2.0, 3.0, 3.0]
    assert limits.delay(0, 60.0) == 3.0  # a server's Retry-After is capped too


def test_a_server_that_keeps_failing_gives_one_line_after_the_retries() -> None:
    with serving() as server:
        server.faults = ["500"] * 5
        with pytest.raises(EndpointError, match=r"answered HTTP 500 after 3 attempts") as err:
            client(server.url).embed(["x"])
    assert len(server.requests) == 3
    assert "\n" not in str(err.value)


def test_a_slow_answer_times_out_and_is_retried() -> None:
    with serving() as server:
        server.faults, server.slow_seconds = ["slow"], 2.0
        made = client(server.url, Limits(timeout=0.3, retries=1, backoff=0.0))
        vectors = made.embed(["late"])
    np.testing.assert_array_equal(vectors[0], vector_of("late"))
    assert made.retried == 1


def test_slow_every_time_says_timed_out() -> None:
    with serving() as server:
        server.faults, server.slow_seconds = ["slow", "slow"], 1.0
        limits = Limits(timeout=0.2, retries=1, backoff=0.0)
        with pytest.raises(EndpointError, match=r"timed out \(2 attempts, 0.2 s each\)"):
            client(server.url, limits).embed(["late"])


def test_a_dropped_connection_is_retried() -> None:
    with serving() as server:
        server.faults = ["drop"]
        made = client(server.url)
        vectors = made.embed(["again"])
    np.testing.assert_array_equal(vectors[0], vector_of("again"))
    assert made.retried == 1 and len(server.requests) == 2


def test_a_refused_key_is_one_line_and_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    refused = r"refused the key in OPENAI_API_KEY \(401\)"
    with serving() as server, pytest.raises(EndpointError, match=refused) as err:
        client(server.url).embed(["x"])
    assert len(server.requests) == 1
    assert "sk-wrong" not in str(err.value)  # the key itself is never shown


def test_no_key_fails_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_KEY", raising=False)
    unset = r"environment variable MY_KEY is not set"
    with serving() as server, pytest.raises(EndpointError, match=unset):
        client(server.url, api_key_env="MY_KEY")
    assert server.requests == []


def test_the_key_is_read_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("MY_KEY", KEY)
    with serving() as server:
        assert client(server.url, api_key_env="MY_KEY").embed(["k"]).shape == (1, 8)


def test_an_unknown_model_names_the_model() -> None:
    with serving() as server:
        made = EmbeddingClient("no-such-model", server.url, limits=FAST)
        with pytest.raises(EndpointError, match=r"'no-such-model'\): the server does not know"):
            made.embed(["x"])
    assert len(server.requests) == 1


def test_an_unreachable_endpoint_is_one_line() -> None:
    with serving() as server:
        url = server.url
    # The server is closed: its port refuses connections.
    with pytest.raises(EndpointError, match=r"cannot be reached \(3 attempts"):
        client(url).embed(["x"])


def test_the_budget_stops_cleanly_after_the_last_allowed_request() -> None:
    with serving() as server:
        made = client(server.url, Limits(batch_inputs=1, max_requests=2))
        with pytest.raises(RequestBudgetError, match=r"2 requests sent .* 2 inputs embedded"):
            made.embed(["a", "b", "c"])
    assert len(server.requests) == 2 and made.requests == 2


def test_retries_count_against_the_budget() -> None:
    with serving() as server:
        server.faults = ["429"]
        made = client(server.url, Limits(max_requests=1, backoff=0.0))
        with pytest.raises(RequestBudgetError):
            made.embed(["a"])
    assert len(server.requests) == 1


def test_the_recorded_endpoint_drops_credentials_and_query() -> None:
    assert public_endpoint("https://user:pw@host.example:8443/v1/?key=s#x") == (
        "https://host.example:8443/v1"
    )


def test_missing_openai_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"pip install 'mmbright\[api\]'"):
        EmbeddingClient(MODEL, "http://127.0.0.1:9/v1")
