"""``llm:MODEL`` reranking on the demo against the loopback chat server (the real ``openai``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from bright_code import openai_body, rerank_new_rank, rerank_prompt, rerank_scores
from fixture_dataset import with_newlines
from openai_server import CHAT_MODEL, OpenAIServer, message_text

from mmbright_core.cli import main
from mmbright_core.data.images import image_problem
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.ranking import ranked
from mmbright_core.rerank.llm import bright_ranking, parse_grade, parse_permutation, windows
from mmbright_core.ui.common.workspace import DEMO_RUNS

FIRST = DEMO_RUNS / "run_it2t_bm25"
DOMAIN, DEPTH = "gis", 8
DEMO = open_source("demo")


def rerank(server: OpenAIServer, tmp_path: Path, *options: str, out: str = "out") -> Path:
    """Rerank the demo's first stage into ``tmp_path / out``, caching in ``tmp_path``."""
    out_dir = tmp_path / out
    args = [str(FIRST), "--source", "demo", "--task", "2", "--domain", DOMAIN]
    args += ["--reranker", f"llm:{CHAT_MODEL}", "--endpoint", server.url]
    args += ["--depth", str(DEPTH), "--cache-dir", str(tmp_path / "cache"), "--out", str(out_dir)]
    for option in options:
        args += ["--option", option]
    assert main(["rerank", *args]) == 0
    (folder,) = [p for p in out_dir.iterdir() if p.is_dir()]
    return folder


def order(docs: dict[str, float]) -> list[str]:
    return [doc_id for doc_id, _ in ranked(docs)]


def kept_first_stage(folder: Path) -> tuple[dict[str, dict[str, float]], dict[str, Any]]:
    """Check that the rerank in ``folder`` kept every query's first-stage top ``DEPTH``.

    Returns the first stage's run and what ``rerank.json`` records of each query.
    """
    first, reranked = read_outputs(FIRST).runs[DOMAIN], read_outputs(folder).runs[DOMAIN]
    for query_id, docs in first.items():
        assert order(reranked[query_id])[:DEPTH] == order(docs)[:DEPTH]
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    return first, recorded


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
    first, recorded = kept_first_stage(folder)
    for query_id in first:
        problem = recorded[query_id]["problem"]
        assert problem.startswith("window 5-8: the answer '[1] > [1] > [2]' is not a permutation")
    assert len(chat_server.requests) == len(first)  # the first bad window ends the query
    rerank(chat_server, tmp_path, "mode=listwise", "window=4", "step=2", out="again")
    assert len(chat_server.requests) == 2 * len(first)  # nothing failed was cached


def grade_by_length(body: dict[str, Any]) -> str:
    found = re.search(r"Document: (.*)\n\nHow much", message_text(body), re.S)
    return f"{len(found.group(1)) % 4}" if found else "none"


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
    asked = len(chat_server.requests)
    assert main(["rerank", *args, "--option", "image_side=0"]) == 2
    err = capsys.readouterr().err
    assert "option image_side is not valid; expected a whole number of at least 1" in err
    assert len(chat_server.requests) == asked  # refused before any request


def test_a_grade_is_read_only_in_the_form_the_prompt_asks() -> None:
    for answer, grade in [("2", 2), (" 3.\n", 3), ("0", 0), ("\n1\n", 1)]:
        assert parse_grade(answer) == grade, answer
    for answer in ["alert(1)", "1 or 2", "12", "Grade: 2", "\uff12", "-1", "3/3", "4", "", "2 2"]:
        problem = parse_grade(answer)
        assert isinstance(problem, str) and "is no grade 0-3" in problem, answer


def test_an_answer_holding_a_digit_is_no_grade_and_is_asked_again(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = lambda body: "alert(1)"
    folder = rerank(chat_server, tmp_path, "mode=pointwise")
    first, recorded = kept_first_stage(folder)
    for query_id in first:
        assert "the answer 'alert(1)' is no grade 0-3" in recorded[query_id]["problem"]
        assert recorded[query_id]["scores"] is None
    assert not list((tmp_path / "cache").rglob("*.json"))  # nothing kept: a rerun asks again


def test_a_listwise_answer_with_a_5000_digit_number_is_a_problem_and_not_kept(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    assert isinstance(parse_permutation("[" + "7" * 5000 + "] > [1] > [2]", 3), str)
    chat_server.reply = lambda body: "[" + "7" * 5000 + "] > [1] > [2] > [3]"
    folder = rerank(chat_server, tmp_path, "mode=listwise", "window=4", "step=2")
    first, recorded = kept_first_stage(folder)
    for query_id in first:
        problem = recorded[query_id]["problem"]
        assert "is not a permutation of [1]..[4]" in problem and len(problem) < 1000
    assert not list((tmp_path / "cache").rglob("*.json"))
    chat_server.reply = reverse_window  # the rerun asks again, and reorders
    again = rerank(chat_server, tmp_path, "mode=listwise", "window=4", "step=2", out="again")
    assert len(chat_server.requests) == 4 * len(first)
    assert read_outputs(again).runs[DOMAIN] != first


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


# --- BRIGHT's listwise reranker (``mode=bright``) ---------------------------------------------


#: An answer whose list holds an id twice, one out of range, a string and a float.
BRIGHT_ANSWER = 'The post asks about X.\n```json\n[3, 1, "2", 99, 3, 5.0]\n```\nThat is all.'
TOPK = 4


def bright_rerank(
    server: OpenAIServer, tmp_path: Path, first: Path, source: str, task: int, out: str = "out"
) -> Path:
    """Rerank ``first`` with ``mode=bright`` into ``tmp_path / out``, caching in ``tmp_path``."""
    out_dir = tmp_path / out
    args = [str(first), "--source", source, "--task", str(task), "--depth", str(DEPTH)]
    args += ["--reranker", f"llm:{CHAT_MODEL}", "--endpoint", server.url]
    args += ["--option", "mode=bright", "--option", f"topk={TOPK}"]
    args += ["--domain", DOMAIN] if source == "demo" else []
    args += ["--cache-dir", str(tmp_path / "cache"), "--out", str(out_dir)]
    assert main(["rerank", *args]) == 0
    (folder,) = [p for p in out_dir.iterdir() if p.is_dir()]
    return folder


def test_bright_sends_exactly_what_rerank_py_sends_and_scores_k_minus_rank(
    chat_server: OpenAIServer, tmp_path: Path, fixture_dir: Path
) -> None:
    chat_server.reply = lambda body: BRIGHT_ANSWER
    root = with_newlines(fixture_dir, tmp_path / "data")
    run = ["run", "--source", str(root), "--task", "1", "--retriever", "bm25", "--k", "20"]
    assert main([*run, "--out", str(tmp_path / "first")]) == 0
    (first_dir,) = (tmp_path / "first").iterdir()
    folder = bright_rerank(chat_server, tmp_path, first_dir, str(root), 1)
    source = open_source(str(root))
    first, reranked = read_outputs(first_dir).runs, read_outputs(folder).runs
    want = []
    for domain in source.domains():
        # rerank.py's documents[d['id']] = d['content'] and examples[qid]['query'].
        table = pq.read_table(root / "documents" / f"{domain}.parquet").to_pylist()
        documents = {row["id"]: row["content"] for row in table}
        table = pq.read_table(root / "examples" / f"{domain}.parquet").to_pylist()
        posts = {row["id"]: row["query"] for row in table}
        assert all(
            "\n\n\n" in text for text in [*posts.values(), *documents.values()] if text.strip()
        )
        data = source.task(1, domain)
        recorded = json.loads((folder / domain / "rerank.json").read_text())["queries"]
        for query_id, docs in first[domain].items():
            excluded = data.excluded.get(query_id, frozenset())
            top = [d for d in order(docs) if d not in excluded]
            pairs = [[did, documents[did]] for did in top[:DEPTH]]
            want.append(openai_body(CHAT_MODEL, rerank_prompt(posts[query_id], pairs, TOPK)))
            scores = rerank_scores(rerank_new_rank(BRIGHT_ANSWER, pairs), top, TOPK)
            assert recorded[query_id] == {"problem": None, "scores": scores}
            head = sorted(scores, key=lambda d: -scores[d])
            rest = [d for d in top if d not in scores]
            assert order(reranked[domain][query_id])[: len(top)] == head + rest, query_id
    key = lambda body: json.dumps(body, sort_keys=True)  # noqa: E731
    assert sorted(chat_server.requests, key=key) == sorted(want, key=key)
    again = bright_rerank(chat_server, tmp_path, first_dir, str(root), 1, out="again")
    assert len(chat_server.requests) == len(want)  # every answer came from the cache
    for domain in source.domains():
        assert (again / domain / "rerank.json").read_bytes() == (
            folder / domain / "rerank.json"
        ).read_bytes()
        assert read_outputs(again).runs[domain] == reranked[domain]
    settings = json.loads((folder / "config.json").read_text())["config"]["options"]
    settings = settings["reranker_settings"]
    assert (settings["mode"], settings["topk"], settings["max_chars"]) == ("bright", TOPK, None)
    assert settings["system"] == "You are a helpful assistant"
    assert settings["parameters"] == {"temperature": 0.8, "top_p": 0.8, "max_tokens": 2048}


def test_bright_on_task_2_puts_the_query_images_after_rerank_pys_text(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = lambda body: BRIGHT_ANSWER
    folder = bright_rerank(chat_server, tmp_path, FIRST, "demo", 2)
    assert folder.name == f"run_it2t_bm25+llm-{CHAT_MODEL}-bright"
    data, first = DEMO.task(2, DOMAIN), read_outputs(FIRST).runs[DOMAIN]
    documents = {d.doc_id: d.text for d in data.corpus}
    queries = {q.query_id: q for q in data.queries}
    bodies = []
    for query_id, docs in first.items():
        excluded = data.excluded.get(query_id, frozenset())
        pairs = [[d, documents[d]] for d in order(docs) if d not in excluded][:DEPTH]
        bodies.append(openai_body(CHAT_MODEL, rerank_prompt(queries[query_id].text, pairs, TOPK)))
    by_text = {body["messages"][1]["content"]: body for body in bodies}
    assert len(chat_server.requests) == len(first)
    for sent in chat_server.requests:
        system, user = sent["messages"]
        text, *images = user["content"]
        want = by_text[text["text"]]
        assert system == want["messages"][0] and text["type"] == "text"
        assert {k: sent[k] for k in ("temperature", "top_p", "max_tokens")} == {
            k: want[k] for k in ("temperature", "top_p", "max_tokens")
        }
        query = next(q for q in queries.values() if f"query: {q.text}\n\n" in text["text"])
        usable = [r for r in query.images if image_problem(
            DEMO.query_image_bytes(DOMAIN, r.path), r.path) is None]  # fmt: skip
        assert len(images) == len(usable) and all(p["type"] == "image_url" for p in images)


@pytest.mark.parametrize(
    "answer",
    [
        "[1, 2, 3]",  # no fenced json block: rerank.py falls back to the first stage
        "```json\n[1, 2,\n```",  # not JSON: falls back
        "```json\n7\n```",  # not a list: rerank.py stops with a TypeError
        "```json\n[[1], 2]\n```",  # an unhashable item: a TypeError too
        '```json\n["1", "2"]\n```',  # no id: rerank.py ranks nothing for the query
    ],
)
def test_a_bright_answer_without_a_usable_list_keeps_the_first_stage_and_is_asked_again(
    chat_server: OpenAIServer, tmp_path: Path, answer: str
) -> None:
    docs = [[f"d{i}", "text"] for i in range(DEPTH)]
    try:
        fallback = rerank_new_rank(answer, docs) in (None, [])
    except TypeError:
        fallback = True
    assert fallback
    chat_server.reply = lambda body: answer
    folder = bright_rerank(chat_server, tmp_path, FIRST, "demo", 2)
    first, recorded = kept_first_stage(folder)
    for query_id in first:
        problem = recorded[query_id]["problem"]
        assert problem.startswith(f"all {DEPTH} candidates: the answer") and "\n" not in problem
    asked = len(chat_server.requests)
    assert asked == len(first)
    bright_rerank(chat_server, tmp_path, FIRST, "demo", 2, out="again")  # nothing failed kept
    assert len(chat_server.requests) == 2 * asked


def test_bright_reads_answers_as_rerank_py_does() -> None:
    docs = [[f"d{i}", "text"] for i in range(5)]
    answers = [
        BRIGHT_ANSWER,
        "```json\n[2, true, 4.0, 4.5, null]\n```",
        "first ```json\n[1]\n``` then ```json\n[5, 4]\n```",  # greedy: one match, not JSON
        "```json [5, 4]```",
        "```json\n[1, 2]\n``` and a stray ``` after",  # greedy to the last fence: not JSON
    ]
    for answer in answers:
        listed = bright_ranking(answer, len(docs))
        want = rerank_new_rank(answer, docs)
        if want:
            assert [docs[i][0] for i in listed] == want, answer
        else:
            assert isinstance(listed, str), answer


def test_bright_refuses_task_3_and_a_bad_topk_in_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(FIRST), "--source", "demo", "--reranker", f"llm:{CHAT_MODEL}"]
    args += ["--endpoint", chat_server.url, "--out", str(tmp_path / "x"), "--option", "mode=bright"]
    assert main(["rerank", *args, "--task", "3"]) == 2
    assert "cannot rerank task 3; expected one of tasks 1, 2, 4" in capsys.readouterr().err
    assert main(["rerank", *args, "--task", "2", "--option", "topk=0"]) == 2
    assert "bad llm reranker option topk; expected a positive integer" in capsys.readouterr().err
    assert not chat_server.requests


def test_a_domain_whose_every_answer_was_unusable_warns_in_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The run was written in the first-stage order with exit status 0 and nothing said.
    chat_server.faults = ["malformed"] * 500
    folder = rerank(chat_server, tmp_path, "mode=listwise")
    asked = len(read_outputs(FIRST).runs[DOMAIN])
    recorded = json.loads((folder / DOMAIN / "rerank.json").read_text())["queries"]
    problem = next(iter(recorded.values()))["problem"]
    assert capsys.readouterr().err == (
        f"mmbright rerank: warning: every answer of the reranker 'llm:{CHAT_MODEL}' on "
        f"{DOMAIN} was unusable: its {asked} queries keep their first-stage order; the "
        f"first: {problem}\n"
    )
    chat_server.faults = ["malformed"]  # one unusable answer among usable ones: no warning
    chat_server.reply = reverse_window
    rerank(chat_server, tmp_path, "mode=listwise", out="again")
    assert "warning" not in capsys.readouterr().err
