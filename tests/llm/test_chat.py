"""The chat client against a real HTTP server on loopback, driven by the real ``openai``."""

from __future__ import annotations

from pathlib import Path

import pytest
from openai_server import CHAT_MODEL, KEY, message_text, reply_of, serving

from mmbright_core.endpoints.client import Limits
from mmbright_core.errors import EndpointError, RequestBudgetError
from mmbright_core.llm.cache import ChatAnswer, ChatCache
from mmbright_core.llm.chat import ChatClient

FAST = Limits(timeout=0.5, retries=2, backoff=0.0, concurrency=4)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def asking(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def client(url: str, tmp_path: Path | None = None, **options: object) -> ChatClient:
    options.setdefault("limits", FAST)
    cache = ChatCache(None if tmp_path is None else tmp_path / "cache")
    return ChatClient(CHAT_MODEL, url, cache=cache, sleep=lambda _: None, **options)  # type: ignore[arg-type]


def test_answers_come_back_in_the_order_asked_with_their_tokens() -> None:
    requests = [asking(f"question number {n}") for n in range(6)]
    with serving() as server:
        made = client(server.url)
        replies = made.complete_all(requests)
    assert [r.text for r in replies] == [reply_of({"messages": r}) for r in requests]
    assert [r.answer.prompt_tokens for r in replies if r.answer] == [3] * 6
    assert [r.answer.completion_tokens for r in replies if r.answer] == [3] * 6
    assert made.tokens == 36 and made.answered == 6 and made.requests == 6
    assert server.requests[0]["temperature"] == 0  # greedy by default


def test_at_most_concurrency_requests_are_in_flight() -> None:
    with serving() as server:
        server.faults, server.slow_seconds = ["slow"] * 12, 0.2
        limits = Limits(timeout=5, concurrency=3)
        client(server.url, limits=limits).complete_all([asking(str(n)) for n in range(12)])
    assert 2 <= server.most_in_flight <= 3


def test_an_answer_is_asked_once_then_comes_from_the_cache(tmp_path: Path) -> None:
    requests = [asking("a"), asking("b")]
    with serving() as server:
        first = client(server.url, tmp_path).complete_all(requests)
        again = client(server.url, tmp_path)
        second = again.complete_all(requests)
        assert len(server.requests) == 2
        assert [r.text for r in second] == [r.text for r in first]
        assert again.from_cache == 2 and again.requests == 0
        # Another model's, or other parameters', answers are never reused.
        client(server.url, tmp_path, parameters={"temperature": 0.7}).complete_all(requests)
        assert len(server.requests) == 4
        assert server.requests[-1]["temperature"] == 0.7


def test_429_500_a_dropped_connection_and_a_timeout_are_retried() -> None:
    with serving() as server:
        server.faults, server.slow_seconds = ["429", "500", "drop", "slow"], 2.0
        limits = Limits(timeout=0.3, retries=4, backoff=0.0, concurrency=1)
        made = client(server.url, limits=limits)
        reply = made.complete(asking("persist"))
    assert reply.text == reply_of({"messages": asking("persist")})
    assert made.retried == 4 and len(server.requests) == 5


def test_a_malformed_answer_is_said_and_not_cached(tmp_path: Path) -> None:
    with serving() as server:
        server.faults = ["malformed", "empty"]
        made = client(server.url, tmp_path, limits=Limits(concurrency=1))
        replies = made.complete_all([asking("x"), asking("y")])
        assert [r.problem for r in replies] == [
            f"{made.endpoint} answered a malformed chat response (no choice)",
            f"{made.endpoint} answered a malformed chat response (a choice without text)",
        ]
        assert all(r.answer is None for r in replies)
        fixed = client(server.url, tmp_path).complete_all([asking("x")])
    assert fixed[0].text == reply_of({"messages": asking("x")}) and len(server.requests) == 3


def test_the_request_budget_stops_cleanly_keeping_what_was_answered(tmp_path: Path) -> None:
    requests = [asking(str(n)) for n in range(5)]
    with serving() as server:
        limited = Limits(max_requests=3, concurrency=1)
        with pytest.raises(RequestBudgetError, match=r"request budget spent: 3 requests"):
            client(server.url, tmp_path, limits=limited).complete_all(requests)
        assert len(server.requests) == 3
        rest = client(server.url, tmp_path)
        rest.complete_all(requests)
    assert rest.from_cache == 3 and rest.answered == 2 and len(server.requests) == 5


def test_the_token_budget_stops_before_the_next_request() -> None:
    with serving() as server:
        limited = Limits(token_budget=10, concurrency=1)
        made = client(server.url, limits=limited)
        with pytest.raises(RequestBudgetError, match=r"token budget spent: 12 of 10 tokens"):
            made.complete_all([asking("one two three") for _ in range(4)])
    assert len(server.requests) == 2  # 6 tokens each: the third would pass the budget


def test_a_refused_key_and_an_unknown_model_are_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    with serving() as server:
        with pytest.raises(EndpointError, match=r"does not know this model"):
            ChatClient("no-such-model", server.url, limits=FAST).complete(asking("x"))
        monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
        with pytest.raises(EndpointError, match=r"refused the key in OPENAI_API_KEY") as err:
            client(server.url).complete(asking("x"))
    assert "\n" not in str(err.value) and "sk-wrong" not in str(err.value)


def test_an_unreachable_endpoint_says_so() -> None:
    limits = Limits(timeout=0.5, retries=1, backoff=0.0)
    with pytest.raises(EndpointError, match=r"cannot be reached \(2 attempts"):
        client("http://127.0.0.1:9/v1", limits=limits).complete(asking("x"))


def test_an_empty_or_blank_answer_is_no_answer_and_is_not_cached(tmp_path: Path) -> None:
    blanks = ["", " \n\t "]
    with serving() as server:
        server.reply = lambda body: blanks.pop(0) if blanks else reply_of(body)
        made = client(server.url, tmp_path, limits=Limits(concurrency=1))
        replies = made.complete_all([asking("x"), asking("y")])
        assert [r.problem for r in replies] == [f"{made.endpoint} answered an empty text"] * 2
        assert all(r.answer is None for r in replies)
        assert made.empty == 2 and made.answered == 2 and made.tokens == 2  # asked: counted
        assert not list((tmp_path / "cache").glob("chat/*/*.json"))
        again = client(server.url, tmp_path)
        assert again.complete_all([asking("x")])[0].text == reply_of({"messages": asking("x")})
        assert again.answered == 1 and again.empty == 0 and len(server.requests) == 3
        # An empty answer a cache already holds is asked again, never served.
        stored = client(server.url, tmp_path)
        stored.cache.put(stored.key(asking("z")), CHAT_MODEL, ChatAnswer("  "))
        assert stored.complete(asking("z")).text == reply_of({"messages": asking("z")})
        assert stored.from_cache == 0 and len(server.requests) == 4


@pytest.mark.parametrize(
    ("usage", "found"),
    [
        ({"prompt_tokens": "12", "completion_tokens": 3}, "prompt_tokens is the string '12'"),
        ({"prompt_tokens": 3, "completion_tokens": None}, "completion_tokens is null"),
        ({"prompt_tokens": {"n": 3}, "completion_tokens": 3}, "prompt_tokens is an object"),
        ({"prompt_tokens": True, "completion_tokens": 3}, "prompt_tokens is true (a boolean)"),
        ({"prompt_tokens": 3, "completion_tokens": 1.5}, "completion_tokens is the number 1.5"),
        ({"prompt_tokens": 3, "completion_tokens": -100}, "completion_tokens is the number -100"),
        ({"prompt_tokens": 2**63, "completion_tokens": 3}, f"prompt_tokens is the number {2**63}"),
        ("many", "usage is the string 'many'"),
    ],
)
def test_token_counts_that_are_not_counts_are_one_line_and_never_lower_the_budget(
    tmp_path: Path, usage: object, found: str
) -> None:
    with serving() as server:
        counted = {"prompt_tokens": 4, "completion_tokens": 2}
        server.usage = lambda body: usage if message_text(body) == "bad" else counted
        limits = Limits(token_budget=100, concurrency=1, retries=0)
        made = client(server.url, tmp_path, limits=limits)
        assert made.complete(asking("good")).answer is not None and made.tokens == 6
        with pytest.raises(EndpointError) as err:
            made.complete(asking("bad"))
        assert "answered token counts that are not counts" in str(err.value)
        assert found in str(err.value) and "\n" not in str(err.value)
        assert made.tokens == 6  # what was counted stays: a count never lowers the budget
        assert len(list((tmp_path / "cache").glob("chat/*/*.json"))) == 1  # "bad" not kept


def test_a_rewrite_against_a_server_with_negative_counts_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmbright_core.cli import main

    with serving() as server:
        server.usage = lambda body: {"prompt_tokens": -(10**6), "completion_tokens": 1}
        command = ["rewrite", "--source", "demo", "--task", "1", "--domain", "gis", "--llm"]
        command += [CHAT_MODEL, "--endpoint", server.url, "--option", "token_budget=10"]
        command += ["--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path / "q.jsonl")]
        assert main(command) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "answered token counts that are not counts" in err and "-1000000" in err
    assert not (tmp_path / "q.jsonl").exists()


def test_retries_0_one_at_a_time_sends_one_request_to_a_failing_endpoint() -> None:
    # The pool's worker took the next queued request before the failure was seen: two
    # requests went to an endpoint told to be tried once.
    with serving() as server:
        server.faults = ["500"] * 5
        made = client(server.url, limits=Limits(retries=0, backoff=0.0, concurrency=1))
        with pytest.raises(EndpointError, match=r"answered HTTP 500; found scripted 500"):
            made.complete_all([asking(str(n)) for n in range(5)])
    assert len(server.requests) == 1 and made.requests == 1
