"""Embeddings answers are checked before anything is kept, against a real loopback server."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from openai_server import HOSTILE, KEY, MODEL, OpenAIServer, serving, vector_of

from mmbright_core.cli import main
from mmbright_core.endpoints.client import Limits
from mmbright_core.errors import EndpointError, InputError, printable
from mmbright_core.retrieval.backends.api import ApiRetriever
from mmbright_core.retrieval.backends.api_client import EmbeddingClient

pytest.importorskip("mmbright_core.retrieval.dual.encoder")

FAST = Limits(batch_inputs=4, timeout=2.0, retries=0, backoff=0.0)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> OpenAIServer:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serving() as running:
        yield running  # type: ignore[misc]


def run_api(url: str, tmp_path: Path, *extra: str, domain: str = "gis", out: str = "out") -> int:
    command = ["run", "--source", "demo", "--task", "1", "--retriever", "api", "--model", MODEL]
    command += ["--endpoint", url, "--domain", domain, "--option", "batch_size=8"]
    command += ["--option", "retries=0", "--cache-dir", str(tmp_path / "cache")]
    return main([*command, "--out", str(tmp_path / out), *extra])


def shards(tmp_path: Path) -> set[Path]:
    return set((tmp_path / "cache").rglob("*.check.json"))


def one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("same_index", r"index fields .* expected each of 0 to 3 once; found 0, 0, 0, 0"),
        ("null_index", r"index fields .* found None, None, None, None"),
        ("text_in_vector", r"vector 0 holds '0.5'; expected numbers"),
        ("zeros", r"vector 0 is all zeros"),
        ("no_vector", r"vector 0 is empty"),
        ("invalid_json", r"answered a body that is not JSON"),
        ("nested_json", r"answered a body that is not JSON"),
    ],
)
def test_a_malformed_answer_is_one_line(server: OpenAIServer, fault: str, said: str) -> None:
    server.faults = [fault]
    made = EmbeddingClient(MODEL, server.url, limits=FAST)
    with pytest.raises(EndpointError, match=said) as err:
        made.embed(["a", "b", "c", "d"])
    assert "\n" not in str(err.value) and str(err.value).startswith(server.url)


def test_answers_given_out_of_order_are_put_back_by_their_index(server: OpenAIServer) -> None:
    server.faults = ["reversed"]
    vectors = EmbeddingClient(MODEL, server.url, limits=FAST).embed(["a", "b", "c"])
    np.testing.assert_array_equal(vectors, np.stack([vector_of(t) for t in "abc"]))


@pytest.mark.parametrize("fault", ["same_index", "zeros", "text_in_vector", "nested_json"])
def test_a_batch_that_fails_a_check_is_never_cached(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    # The third request's answer (8 passages) is bad: the first two are kept, not the third.
    server.faults = ["", "", fault]
    assert run_api(server.url, tmp_path) == 2
    one_line(capsys.readouterr().err)
    assert len(server.requests) == 3 and len(server.requests[2]["input"]) == 8
    kept = shards(tmp_path)
    assert len(kept) == 2
    first = {t for r in server.requests[:2] for t in r["input"]}
    assert run_api(server.url, tmp_path) == 0
    again = {t for r in server.requests[3:] for t in r["input"]}
    assert set(server.requests[2]["input"]) <= again  # asked again, never taken from a cache
    assert not first & again  # the good batches were not paid for twice
    assert kept <= shards(tmp_path)


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("tiny_values", "vector 0 is all zeros (as float32)"),
        ("huge_values", "vector 0 has a length that overflows float32 (numbers near 1e38)"),
        ("long_number", None),
    ],
)
def test_vectors_float32_cannot_score_are_one_line_and_never_cached(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fault: str,
    said: str | None,
) -> None:
    # Numbers JSON carries but no float32 vector can score: 1e-50 is 0 in float32, the length
    # of numbers near 1e38 overflows (both would be scored as all zeros), 401 digits no float
    # holds. The second request's answer carries them: only the first batch is kept.
    server.faults = ["", fault]
    assert run_api(server.url, tmp_path) == 2
    err = one_line(capsys.readouterr().err)
    if said is None:  # no float holds it: the openai library cannot read the answer
        said = f"{server.url} (model {MODEL!r}) answered a number no float holds"
    else:
        said = f"{server.url} answered a malformed embeddings response: {said}"
    assert err.startswith(f"mmbright run: error: {said}"), err
    assert len(shards(tmp_path)) == 1


def test_a_size_that_changes_between_answers_stops_and_the_rerun_keeps_good_shards(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.faults = ["", "resized"]
    assert run_api(server.url, tmp_path) == 2
    err = one_line(capsys.readouterr().err)
    assert "vectors of 12 numbers; expected 8, the size of its first answer" in err
    kept = shards(tmp_path)
    asked = len(server.requests)
    assert run_api(server.url, tmp_path) == 0
    again = {t for r in server.requests[asked:] for t in r["input"]}
    assert not set(server.requests[0]["input"]) & again
    assert kept <= shards(tmp_path)  # never deleted: every shard has the run's size


def test_a_model_whose_size_changed_never_replaces_cached_vectors(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_api(server.url, tmp_path) == 0
    kept = shards(tmp_path)
    server.dim = 12  # the same model name now answers another size
    assert run_api(server.url, tmp_path, domain="physics") == 2
    err = one_line(capsys.readouterr().err)
    assert "vectors of 12 numbers; expected 8, the size of the vectors cached" in err
    assert shards(tmp_path) == kept
    asked = len(server.requests)
    assert run_api(server.url, tmp_path, out="again") == 0  # what was cached still serves
    assert len(server.requests) == asked


def test_the_size_is_fixed_by_the_first_answer_for_every_role(server: OpenAIServer) -> None:
    made = EmbeddingClient(MODEL, server.url, limits=FAST)
    made.embed(["query"])
    assert made.size == 8
    server.dim = 12
    with pytest.raises(EndpointError, match=r"vectors of 12 numbers; expected 8"):
        made.embed(["passage"])


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("retries=-1", r"option retries .* expected a whole number of at least 0; found -1"),
        ("timeout=-1", r"option timeout .* expected a number of seconds above 0; found -1"),
        ("timeout=abc", r"option timeout .* found 'abc'"),
        ("batch_size=0", r"option batch_size .* expected a whole number of at least 1; found 0"),
        ("dimensions=abc", r"option dimensions .* expected a whole number of at least 1"),
        ("dimensions=0", r"option dimensions .* found 0"),
        ("max_requests=0", r"option max_requests .* found 0"),
        ("max_answer_bytes=0", r"option max_answer_bytes .* found 0"),
        ("backoff=nan", r"option backoff .* found 'nan'"),
    ],
)
def test_options_out_of_range_are_refused_before_any_request(
    server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    said: str,
) -> None:
    assert run_api(server.url, tmp_path, "--option", option) == 2
    assert server.requests == []
    assert re.search(said, one_line(capsys.readouterr().err))


@pytest.mark.parametrize(
    "endpoint",
    [
        "http://user:s3cret@127.0.0.1:{port}/v1",
        "http://127.0.0.1:{port}/v1?api-version=s3cret",
        "http://127.0.0.1:{port}/v1#s3cret",
        "ftp://127.0.0.1:{port}/v1",
    ],
)
def test_an_endpoint_with_credentials_or_a_query_is_refused_before_any_request(
    server: OpenAIServer, capsys: pytest.CaptureFixture[str], endpoint: str
) -> None:
    url = endpoint.format(port=server.httpd.server_address[1])
    with pytest.raises(InputError, match=r"endpoint .* expected an http\(s\) base URL") as err:
        ApiRetriever(MODEL, url)
    assert "s3cret" not in str(err.value) and server.requests == []


def test_a_servers_hostile_error_text_reaches_the_terminal_escaped(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.faults = ["hostile_error"]
    assert run_api(server.url, tmp_path) == 2
    err = one_line(capsys.readouterr().err)
    assert "\x1b" not in err and "\x07" not in err and "\u202e" not in err
    assert "model \\x1b[31mred\\x1b]0;owned\\x07 \\u202eevil" in err
    assert printable(HOSTILE) in err


@pytest.mark.parametrize(
    ("endpoint", "shown", "holds"),
    [
        ("http://127.0.0.1:99999/v1", "'http://127.0.0.1:99999/v1'", "a port that is no number"),
        (
            "http://127.0.0.1:8000/v1\r\nX-Evil: 1",
            r"'http://127.0.0.1:8000/v1\r\nX-Evil: 1'",
            "a control character or a blank",
        ),
        ("http://user:s3cret@127.0.0.1:-1/v1", "'http://127.0.0.1:-1/v1'", "a port that is no"),
        ("http://[::1/v1?key=s3cret", "'http://[::1/v1'", "a port that is no number"),
    ],
)
def test_an_endpoint_with_a_control_character_or_no_port_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], endpoint: str, shown: str, holds: str
) -> None:
    # Each was a traceback from urllib or httpx (ValueError: Port out of range 0-65535).
    assert run_api(endpoint, tmp_path) == 2
    err = one_line(capsys.readouterr().err)
    assert err.startswith(f"mmbright run: error: the endpoint {shown} holds {holds}"), err
    assert "s3cret" not in err and not (tmp_path / "out").exists()
