"""``mmbright run --retriever api`` end to end on the demo, against a loopback server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from openai_server import KEY, MODEL, OpenAIServer, kill_when_held, serving, vector_of

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import ranked, top_k
from mmbright_core.types import TaskData

pytest.importorskip("mmbright_core.retrieval.dual.encoder")

SUBDIRS = {1: f"run_t2t_{MODEL}", 2: f"run_it2t_{MODEL}"}


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[OpenAIServer]:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with serving() as running:
        yield running


def run_api(url: str, tmp_path: Path, task: int, *extra: str) -> int:
    command = ["run", "--source", "demo", "--task", str(task), "--retriever", "api"]
    command += ["--model", MODEL, "--endpoint", url, "--k", "20"]
    command += ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
    return main([*command, *extra])


def sent(text: str, instruction: str = "") -> str:
    # What the backend sends: instruction + text, cut to 24,000 characters, never empty.
    cut = (instruction + text)[:24_000]
    return cut if cut.strip() else " "


def expected_run(
    data: TaskData, k: int, query_instruction: str = ""
) -> dict[str, dict[str, float]]:
    """The top ``k`` of every query by 100 x cosine of the server's vectors, exclusions out."""
    units = np.stack([vector_of(sent(d.text)) for d in data.corpus]).astype(np.float64)
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    ids = [d.doc_id for d in data.corpus]
    out: dict[str, dict[str, float]] = {}
    for query in data.queries:
        vector = vector_of(sent(query.text, query_instruction)).astype(np.float64)
        scores = 100 * units @ (vector / np.linalg.norm(vector))
        every = {i: float(s) for i, s in zip(ids, scores, strict=True)}
        out[query.query_id] = top_k(every, k, data.excluded.get(query.query_id, ()))
    return out


def assert_same_run(got: dict[str, dict[str, float]], want: dict[str, dict[str, float]]) -> None:
    """Equal rankings (order included) and equal scores up to float32 rounding."""
    assert got.keys() == want.keys()
    for query_id, docs in want.items():
        assert [d for d, _ in ranked(got[query_id])] == list(docs), query_id
        assert got[query_id] == pytest.approx(docs, abs=1e-4), query_id


@pytest.mark.parametrize("task", [1, 2])
def test_scores_are_the_cosines_of_the_servers_vectors(
    server: OpenAIServer, tmp_path: Path, task: int
) -> None:
    assert run_api(server.url, tmp_path, task) == 0
    outputs = read_outputs(tmp_path / "out" / SUBDIRS[task])
    source = open_source("demo")
    for domain in source.domains():
        assert_same_run(outputs.runs[domain], expected_run(source.task(task, domain), 20))
    config = (tmp_path / "out" / SUBDIRS[task] / "config.json").read_text()
    assert KEY not in config
    recorded = json.loads(config)["config"]
    assert recorded["retriever"] == "api" and recorded["model"] == MODEL
    assert recorded["options"]["endpoint"] == server.url and recorded["fusion"] == "text"


def test_instructions_are_sent_and_recorded(server: OpenAIServer, tmp_path: Path) -> None:
    extra = ["--domain", "gis", "--option", "query_instruction=Find: "]
    assert run_api(server.url, tmp_path, 1, *extra) == 0
    data = open_source("demo").task(1, "gis")
    sent_texts = {t for r in server.requests for t in r["input"]}
    assert {f"Find: {q.text}" for q in data.queries} <= sent_texts
    got = read_outputs(tmp_path / "out" / SUBDIRS[1]).runs["gis"]
    assert_same_run(got, expected_run(data, 20, "Find: "))
    config = (tmp_path / "out" / SUBDIRS[1] / "config.json").read_text()
    assert "Find: " in config


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("nokey", "no API key: the environment variable OPENAI_API_KEY is not set"),
        ("badkey", "refused the key in OPENAI_API_KEY (401)"),
        ("model", "the server does not know this model"),
        ("down", "cannot be reached"),
    ],
)
def test_endpoint_faults_are_one_line_with_exit_status_2(
    server: OpenAIServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    message: str,
) -> None:
    url, extra = server.url, ["--domain", "gis", "--option", "retries=1", "--option", "backoff=0"]
    if setup == "nokey":
        monkeypatch.delenv("OPENAI_API_KEY")
    elif setup == "badkey":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-refused")
    elif setup == "model":
        server.models = ("another-model",)
    else:
        url = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there
    assert run_api(url, tmp_path, 1, *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert "sk-refused" not in err


def test_a_spent_budget_stops_and_the_rerun_asks_nothing_twice(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = ["--domain", "gis", "--option", "batch_size=8"]
    assert run_api(server.url, tmp_path, 1, *small, "--option", "max_requests=3") == 2
    assert "request budget spent: 3 requests" in capsys.readouterr().err
    first = [t for r in server.requests for t in r["input"]]
    assert len(server.requests) == 3 and all(len(r["input"]) <= 8 for r in server.requests)
    assert run_api(server.url, tmp_path, 1, *small) == 0
    second = [t for r in server.requests[3:] for t in r["input"]]
    assert second and not set(first) & set(second)


def test_a_killed_run_pays_nothing_twice(server: OpenAIServer, tmp_path: Path) -> None:
    # The run is SIGKILLed while its 6th request waits for an answer; everything answered
    # before is in the cache, so the rerun sends none of those inputs again.
    server.hold_after = 5
    command = [sys.executable, "-m", "mmbright_core", "run", "--source", "demo", "--task", "1"]
    command += ["--retriever", "api", "--model", MODEL, "--endpoint", server.url]
    command += ["--option", "batch_size=8", "--domain", "biology"]
    command += ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    kill_when_held(server, command, env)
    answered = [t for r in server.requests[:5] for t in r["input"]]
    server.hold_after = None
    server.release()
    before = len(server.requests)
    rerun = subprocess.run(command, env=env, capture_output=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    again = [t for r in server.requests[before:] for t in r["input"]]
    assert len(answered) == 40 and again
    assert not set(answered) & set(again)
