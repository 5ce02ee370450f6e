"""A pipeline runs its stages once: stopped, it resumes to the same bytes; changed, it says so.

The pipeline of the acceptance test: captions of the query images (``rewrite``), BM25 and an
embedding model on the captioned queries (``run``), their reciprocal rank fusion (``fuse``),
and an LLM reranking of the fused run (``rerank``), all against the loopback chat and
embeddings server.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from openai_server import CHAT_MODEL, MODEL, OpenAIServer, kill_when_held, message_text, reply_of

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.pipeline.stages import outputs_digest, record_path

DOMAINS = '["gis", "physics"]'
DEMO = open_source("demo")


def pipeline_file(tmp_path: Path, url: str) -> Path:
    text = f"""
[pipeline]
source = "demo"
task = 2
domain = {DOMAINS}

[stages.captions]
command = "rewrite"
llm = "{CHAT_MODEL}"
endpoint = "{url}"
prompt = "caption"
option = {{ concurrency = 1 }}

[stages.bm25]
command = "run"
queries = "captions"
retriever = "bm25"

[stages.dense]
command = "run"
queries = "captions"
retriever = "api"
model = "{MODEL}"
endpoint = "{url}"
option = {{ batch_size = 16 }}

[stages.rrf]
command = "fuse"
runs = ["bm25", "dense"]
method = "rrf"
k = 60

[stages.reranked]
command = "rerank"
run = "rrf"
reranker = "llm:{CHAT_MODEL}"
endpoint = "{url}"
depth = 5
option = {{ mode = "pointwise", concurrency = 1 }}
"""
    path = tmp_path / "pipeline.toml"
    path.write_text(text, encoding="utf-8")
    return path


def grade_or_caption(body: dict[str, Any]) -> str:
    """A grade 0-3 for a reranking request (from its text), else the server's usual words."""
    text = message_text(body)
    if "Answer with one number only" in text:
        return str(hashlib.sha256(text.encode()).digest()[0] % 4)
    return reply_of(body)


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the hidden ones (lock files), by relative path."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and not any(p.startswith(".") for p in path.relative_to(folder).parts)
    }


def command(file: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "mmbright_core", "pipeline", "run", str(file), "--out", str(out)]


@pytest.fixture
def server(chat_server: OpenAIServer) -> OpenAIServer:
    chat_server.reply = grade_or_caption
    return chat_server


def test_a_killed_pipeline_resumes_to_the_bytes_of_an_uninterrupted_one(
    server: OpenAIServer, tmp_path: Path
) -> None:
    file = pipeline_file(tmp_path, server.url)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MMBRIGHT_CACHE": str(tmp_path / "cache-a")}
    whole = subprocess.run(command(file, tmp_path / "a"), env=env, capture_output=True, timeout=600)
    assert whole.returncode == 0, whole.stderr.decode()[-2000:]
    asked = len(server.requests)
    reranking = sum("Answer with one number only" in message_text(b) for b in server.requests)
    queries = sum(len(DEMO.judgments(2, d).queries) for d in ("gis", "physics"))
    assert reranking == 5 * queries  # the 5 candidates of each query, each graded
    expected = files(tmp_path / "a")
    stages = ("captions", "bm25", "dense", "rrf", "reranked")
    assert {name.split("/")[0] for name in expected} == {
        *stages,
        *(f"{s}.stage.json" for s in stages),
    }
    for stage in stages:  # every stage's output in the official layout, recorded
        record = json.loads(expected[f"{stage}.stage.json"])
        assert record["outputs"] == outputs_digest(tmp_path / "a" / stage)
    assert "captions/queries.jsonl" in expected
    for stage in stages[1:]:  # each run readable alone, as `mmbright eval` reads it
        (task_dir,) = (p for p in (tmp_path / "a" / stage).iterdir() if not p.name.startswith("."))
        assert main(["eval", "--source", "demo", "--task", "2", "--run", str(task_dir)]) == 0

    # The same file into another folder, from an empty cache, killed while it reranks: the
    # server holds the request three before the last.
    env["MMBRIGHT_CACHE"] = str(tmp_path / "cache-b")
    server.hold_after = 2 * asked - 3
    kill_when_held(server, command(file, tmp_path / "b"), env)
    stopped = tmp_path / "b"
    assert record_path(stopped, "rrf").exists()  # the stages before it finished
    assert (stopped / "reranked").exists() and not record_path(stopped, "reranked").exists()
    server.hold_after = None
    server.release()
    before = len(server.requests)
    again = subprocess.run(command(file, stopped), env=env, capture_output=True, timeout=600)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    said = again.stdout.decode()
    for stage in stages[:-1]:
        assert f"stage {stage}: reused" in said
    assert len(server.requests) - before < reranking  # the answers cached before the kill
    assert files(stopped) == expected
    assert not list(tmp_path.glob(".b.lock"))  # the claim on the folder went with the job


def test_a_rerun_reuses_every_stage_and_a_changed_stage_is_refused_or_rerun_when_asked(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = pipeline_file(tmp_path, server.url)
    out = tmp_path / "out"
    assert main(["pipeline", "run", str(file), "--out", str(out)]) == 0
    first = files(out)
    asked = len(server.requests)
    capsys.readouterr()
    assert main(["pipeline", "run", str(file), "--out", str(out)]) == 0
    assert len(server.requests) == asked and files(out) == first
    assert capsys.readouterr().out.count("(reused)") == 5

    # Another k for the fusion: refused in one line naming the stage and what differs.
    file.write_text(file.read_text(encoding="utf-8").replace("k = 60", "k = 10"), "utf-8")
    assert main(["pipeline", "run", str(file), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stage 'rrf': it ran with another command line" in err
    assert "recorded with `60`, now with `10`" in err and "--rerun-changed" in err
    assert files(out) == first  # nothing was touched

    # Told to, it runs that stage afresh, and the reranking of it, whose input changed.
    assert main(["pipeline", "run", str(file), "--out", str(out), "--rerun-changed"]) == 0
    said = capsys.readouterr().out
    assert "stage bm25: reused" in said and "stage rrf: mmbright fuse" in said
    assert "stage reranked: mmbright rerank" in said
    changed = files(out)
    (config,) = (n for n in changed if re.fullmatch(r"rrf/[^/]+/config\.json", n))
    assert json.loads(changed[config])["config"]["options"]["rrf_k"] == 10
    assert changed["bm25.stage.json"] == first["bm25.stage.json"]
    record = json.loads(changed["rrf.stage.json"])
    assert "10" in record["argv"] and set(record["inputs"]) == {"bm25", "dense"}


def test_outputs_edited_after_their_stage_ran_are_not_reused_silently(
    server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = pipeline_file(tmp_path, server.url)
    out = tmp_path / "out"
    assert main(["pipeline", "run", str(file), "--out", str(out)]) == 0
    trec = next((out / "bm25").rglob("run.trec"))
    trec.write_text(trec.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["pipeline", "run", str(file), "--out", str(out)]) == 2
    assert "stage 'bm25': its outputs changed since it ran" in capsys.readouterr().err
