"""``llm:MODEL`` reranking on the demo against the loopback chat server (the real ``openai``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from openai_server import CHAT_MODEL, OpenAIServer, message_text

from mmbright_core.cli import main
from mmbright_core.data.images import image_problem
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import ranked
from mmbright_core.rerank.llm import parse_permutation, windows
from mmbright_core.ui.workspace import DEMO_RUNS

FIRST = DEMO_RUNS / "run_it2t_bm25"
DOMAIN, DEPTH = "gis", 8
DEMO = open_source("demo")


def rerank(server: OpenAIServer, tmp_path: Path, *options: str) -> Path:
    out = tmp_path / "out"
    args = [str(FIRST), "--source", "demo", "--task", "2", "--domain", DOMAIN]
    args += ["--reranker", f"llm:{CHAT_MODEL}", "--endpoint", server.url]
    args += ["--depth", str(DEPTH), "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]
    for option in options:
        args += ["--option", option]
    assert main(["rerank", *args]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def order(docs: dict[str, float]) -> list[str]:
    return [doc_id for doc_id, _ in ranked(docs)]


def reverse_window(body: dict[str, Any]) -> str:
    found = re.search(r"Rank the (\d+) documents", message_text(body))
    n = int(found.group(1)) if found else 0
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def test_rankgpt_windows_slide_from_the_bottom_to_the_top() -> None:
    assert windows(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60),
                                    (30, 50), (20, 40), (10, 30), (0, 20)]  # fmt: skip
    assert windows(8, 4, 2) == [(4, 8), (2, 6), (0, 4)] and windows(3, 20, 10) == [(0, 3)]
    assert parse_permutation("[2] > [3] > [1]", 3) == (1, 2, 0)
    assert "not a permutation of [1]..[3] (found 3 numbers, 2 distinct)" in str(
        parse_permutation("[2] > [2] > [1]", 3)
    )


def test_listwise_windows_reorder_the_top_depth_with_the_query_images(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = reverse_window
    folder = rerank(chat_server, tmp_path, "mode=listwise", "window=4", "step=2")
    assert folder.name == f"run_it2t_bm25+llm-{CHAT_MODEL}-listwise"
    first, reranked = read_outputs(FIRST).runs[DOMAIN], read_outputs(folder).runs[DOMAIN]
    for query_id, docs in first.items():
        before = order(docs)
        places = list(range(DEPTH))
        for start, end in [(4, 8), (2, 6), (0, 4)]:  # each window answered reversed
            places[start:end] = places[start:end][::-1]
        want = [before[i] for i in places] + before[DEPTH:]
        assert order(reranked[query_id])[: len(want)] == want, query_id
    queries = {q.query_id: q for q in DEMO.judgments(2, DOMAIN).queries}
    assert len(chat_server.requests) == 3 * len(first)
    for body in chat_server.requests:
        query = next(q for q in queries.values() if f"Question: {q.text}\n" in message_text(body))
        usable = [r for r in query.images if image_problem(
            DEMO.query_image_bytes(DOMAIN, r.path), r.path) is None]  # fmt: skip
        parts = body["messages"][0]["content"]
        urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
        assert len(urls) == len(usable) and all(
            u.startswith("data:image/png;base64,") for u in urls
        )
    config = json.loads((folder / "config.json").read_text())["config"]["options"]
    settings = config["reranker_settings"]
    assert (settings["mode"], settings["window"], settings["step"]) == ("listwise", 4, 2)
    assert settings["model"] == CHAT_MODEL and settings["endpoint"] == chat_server.url


def test_a_listwise_answer_that_is_no_permutation_keeps_the_first_stage_order(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = lambda body: "[1] > [1] > [2]"
    folder = rerank(chat_server, tmp_path, "mode=listwise", "window=4", "step=2")
    first, reranked = read_outputs(FIRST).runs[DOMAIN], read_outputs(folder).runs[DOMAIN]
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    for query_id, docs in first.items():
        assert order(reranked[query_id])[:DEPTH] == order(docs)[:DEPTH]
        problem = recorded[query_id]["problem"]
        assert problem.startswith("window 5-8: the answer '[1] > [1] > [2]' is not a permutation")
    assert len(chat_server.requests) == len(first)  # the first bad window ends the query


def grade_by_length(body: dict[str, Any]) -> str:
    found = re.search(r"Document: (.*)\n\nHow much", message_text(body), re.S)
    return f"Grade: {len(found.group(1)) % 4 if found else 'none'}"


def test_pointwise_grades_are_the_scores_and_ties_keep_the_first_stage_order(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = grade_by_length
    folder = rerank(chat_server, tmp_path, "mode=pointwise", "max_chars=300")
    data = DEMO.task(2, DOMAIN)
    text = {d.doc_id: d.text[:300] for d in data.corpus}
    first, reranked = read_outputs(FIRST).runs[DOMAIN], read_outputs(folder).runs[DOMAIN]
    for query_id, docs in first.items():
        top = order(docs)[:DEPTH]
        want = sorted(top, key=lambda d: -(len(text[d]) % 4))  # stable: ties keep their order
        assert order(reranked[query_id])[:DEPTH] == want, query_id
    assert len(chat_server.requests) == DEPTH * len(first)


def test_a_grade_outside_0_3_is_recorded_and_bad_options_are_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chat_server.reply = lambda body: "very relevant"
    folder = rerank(chat_server, tmp_path, "mode=pointwise")
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    assert all("is no grade 0-3" in r["problem"] for r in recorded.values())
    args = [str(FIRST), "--source", "demo", "--task", "2", "--reranker", f"llm:{CHAT_MODEL}"]
    args += ["--endpoint", chat_server.url, "--out", str(tmp_path / "x")]
    assert main(["rerank", *args, "--option", "mode=sideways"]) == 2
    assert "bad llm reranker option mode; expected pointwise or listwise" in capsys.readouterr().err


def test_task_3_candidates_are_their_images(chat_server: OpenAIServer, tmp_path: Path) -> None:
    chat_server.reply = reverse_window
    first = ["run", "--source", "demo", "--task", "3", "--retriever", "random", "--k", "20"]
    assert main([*first, "--domain", DOMAIN, "--out", str(tmp_path / "first")]) == 0
    (run,) = (tmp_path / "first").iterdir()
    args = [str(run), "--source", "demo", "--task", "3", "--domain", DOMAIN, "--depth", "4"]
    args += ["--reranker", f"llm:{CHAT_MODEL}", "--endpoint", chat_server.url]
    args += ["--option", "window=4", "--option", "step=2", "--option", "query_images=first"]
    args += ["--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]
    assert main(["rerank", *args]) == 0
    queries = {q.text: q for q in DEMO.judgments(3, DOMAIN).queries}
    first_run = read_outputs(run).runs[DOMAIN]
    assert len(chat_server.requests) == len(first_run)
    for body in chat_server.requests:
        text = message_text(body)
        query = next(q for t, q in queries.items() if f"Question: {t}\n" in text)
        top = order(first_run[query.query_id])[:4]
        urls = [p for p in body["messages"][0]["content"] if p["type"] == "image_url"]
        has_image = any(
            image_problem(DEMO.query_image_bytes(DOMAIN, r.path), r.path) is None
            for r in query.images
        )
        assert len(urls) == int(has_image) + len(top)  # the first query image, each candidate's
        assert text.count("(an image, shown after this line)") == len(top)


def test_a_window_that_is_no_number_is_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(FIRST), "--source", "demo", "--task", "2", "--reranker", f"llm:{CHAT_MODEL}"]
    args += ["--endpoint", chat_server.url, "--out", str(tmp_path / "x")]
    assert main(["rerank", *args, "--option", "window=wide"]) == 2
    err = capsys.readouterr().err
    assert "option window is not a number; expected int; found 'wide'" in err
    assert not chat_server.requests
