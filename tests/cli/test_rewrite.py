"""``mmbright rewrite`` on the demo against the loopback chat server, then ``run --queries``."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from bright_code import openai_body, reason_prompt
from fixture_dataset import with_newlines
from openai_server import CHAT_MODEL, OpenAIServer, kill_when_held, message_text, reply_of
from PIL import Image

from mmbright_core.analysis.attribution import (
    LexicalAttribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.cli import main
from mmbright_core.data.images import decode_image
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.io.rewrites import query_set_text, read_query_set
from mmbright_core.llm.prompts import REASON_IMAGES
from mmbright_core.ranking import top_k
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.runner.rewritten import Rewritten

DEMO = open_source("demo")


def rewrite(server: OpenAIServer, tmp_path: Path, task: int, *extra: str, out: str = "q") -> int:
    command = ["rewrite", "--source", "demo", "--task", str(task), "--llm", CHAT_MODEL]
    command += ["--endpoint", server.url, "--cache-dir", str(tmp_path / "cache")]
    return main([*command, "--out", str(tmp_path / f"{out}.jsonl"), *extra])


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_reason_on_task_1_sends_exactly_what_bright_reason_py_sends(
    chat_server: OpenAIServer, tmp_path: Path, fixture_dir: Path
) -> None:
    root = with_newlines(fixture_dir, tmp_path / "data")
    command = ["rewrite", "--source", str(root), "--task", "1", "--llm", CHAT_MODEL]
    command += ["--endpoint", chat_server.url, "--cache-dir", str(tmp_path / "cache")]
    assert main([*command, "--out", str(tmp_path / "q.jsonl")]) == 0
    posts = {}  # reason.py reads e["query"] of BRIGHT's examples: here the examples' parquet
    for path in sorted((root / "examples").glob("*.parquet")):
        posts |= {(path.stem, row["id"]): row["query"] for row in pq.read_table(path).to_pylist()}
    assert all("\n\n\n" in post for post in posts.values())
    want = {key: openai_body(CHAT_MODEL, reason_prompt(post)) for key, post in posts.items()}
    sent = sorted(chat_server.requests, key=lambda body: json.dumps(body, sort_keys=True))
    assert sent == sorted(want.values(), key=lambda body: json.dumps(body, sort_keys=True))
    got = records(tmp_path / "q.jsonl")
    assert len(got) == len(posts)
    for record in got:
        body = want[(str(record["domain"]), str(record["query_id"]))]
        assert record["answer"] == record["query"] == reply_of(body)  # the answer replaces it
    shared = read_query_set(tmp_path / "q.jsonl").settings
    assert shared["prompt"]["system"] == "You are a helpful assistant"
    assert shared["prompt"]["query_newlines"] == " "
    assert shared["llm"]["parameters"] == {"temperature": 0.8, "top_p": 0.8, "max_tokens": 2048}
    # An option overrides the recipe's sampling, and is recorded.
    extra = ["--option", "temperature=0", "--domain", "biology", "--out", str(tmp_path / "t")]
    assert main([*command, *extra]) == 0
    assert chat_server.requests[-1]["temperature"] == 0
    assert chat_server.requests[-1]["top_p"] == 0.8
    parameters = read_query_set(tmp_path / "t").settings["llm"]["parameters"]
    assert parameters == {"temperature": 0, "top_p": 0.8, "max_tokens": 2048}


def test_reason_replaces_each_query_with_the_answer_to_its_text_and_images(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    assert rewrite(chat_server, tmp_path, 2, "--domain", "biology") == 0
    got = records(tmp_path / "q.jsonl")
    queries = DEMO.judgments(2, "biology").queries
    assert [r["query_id"] for r in got] == [q.query_id for q in queries]
    by_text = {body["messages"][1]["content"][0]["text"]: body for body in chat_server.requests}
    for record, query in zip(got, queries, strict=True):
        body = by_text[reason_prompt(query.text)]
        system, user = body["messages"]
        assert system == {"role": "system", "content": "You are a helpful assistant"}
        assert {k: body[k] for k in ("temperature", "top_p", "max_tokens")} == {
            "temperature": 0.8,
            "top_p": 0.8,
            "max_tokens": 2048,
        }
        assert record["answer"] == record["query"] == reply_of(body)
        assert record["original"] == query.text and record["problem"] is None
        assert user["content"][0]["type"] == "text"  # the images follow the text
        sent = [p["image_url"]["url"] for p in user["content"][1:]]
        paths = [image["path"] for image in record["images"]]  # type: ignore[union-attr]
        assert paths and len(sent) == len(paths)
        for path, url, image in zip(paths, sent, record["images"], strict=True):  # type: ignore[arg-type]
            data = DEMO.query_image_bytes("biology", path)
            assert image["sha256"] == content_key(data or b"")
            png = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
            assert png.format == "PNG"
            assert png.convert("RGB").tobytes() == decode_image(data, path).tobytes()
        assert record["tokens"] == {"prompt": len(message_text(body).split()), "completion": 3}


def test_reason_images_is_the_packages_own_wording_without_a_system_message(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    extra = ["--domain", "gis", "--prompt", "reason-images"]
    assert rewrite(chat_server, tmp_path, 2, *extra) == 0
    texts = {message_text(body) for body in chat_server.requests}
    queries = DEMO.judgments(2, "gis").queries
    assert texts == {REASON_IMAGES.format(query=q.text, domain="gis") for q in queries}
    assert all(len(body["messages"]) == 1 for body in chat_server.requests)
    assert all(body["temperature"] == 0 and "top_p" not in body for body in chat_server.requests)
    for record in records(tmp_path / "q.jsonl"):
        assert record["query"] == record["answer"]


def test_caption_appends_and_a_template_file_fills_its_fields(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    assert rewrite(chat_server, tmp_path, 2, "--domain", "gis", "--prompt", "caption") == 0
    for record in records(tmp_path / "q.jsonl"):
        assert record["query"] == f"{record['original']}\n{record['answer']}"
    template = tmp_path / "short.txt"
    template.write_text("Keywords for a {domain} search, braces {{kept}}: {query}", "utf-8")
    extra = ["--domain", "gis", "--prompt", str(template), "--combine", "replace"]
    assert rewrite(chat_server, tmp_path, 1, *extra, out="t") == 0
    first = DEMO.judgments(1, "gis").queries[0]
    texts = [message_text(body) for body in chat_server.requests]
    assert f"Keywords for a gis search, braces {{kept}}: {first.text}" in texts
    assert isinstance(chat_server.requests[-1]["messages"][0]["content"], str)  # task 1: no image
    shared = read_query_set(tmp_path / "t.jsonl").settings
    assert shared["prompt"]["name"] == "short.txt" and shared["prompt"]["combine"] == "replace"


def test_a_template_with_unknown_fields_is_refused_in_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "bad.txt"
    template.write_text("Answer {question} now", "utf-8")
    assert rewrite(chat_server, tmp_path, 1, "--prompt", str(template)) == 2
    err = capsys.readouterr().err
    assert "bad.txt: a template with the wrong fields; expected {query}" in err
    assert "found {question}" in err and chat_server.requests == []
    assert rewrite(chat_server, tmp_path, 1, "--prompt", "caption") == 2
    assert "Task 1 sends none" in capsys.readouterr().err and chat_server.requests == []


def test_a_malformed_answer_keeps_the_original_text_and_says_why(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.faults = ["malformed"]
    extra = ["--domain", "gis", "--option", "concurrency=1"]
    assert rewrite(chat_server, tmp_path, 1, *extra) == 0
    first, *rest = records(tmp_path / "q.jsonl")
    assert first["answer"] is None and first["query"] == first["original"]
    assert "malformed chat response (no choice)" in str(first["problem"])
    assert all(r["problem"] is None for r in rest)


def test_a_spent_budget_stops_with_one_line_and_the_rerun_goes_on(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--domain", "gis", "--option", "concurrency=1", "--option", "max_requests=3"]
    assert rewrite(chat_server, tmp_path, 1, *extra) == 2
    assert "request budget spent: 3 requests" in capsys.readouterr().err
    assert not (tmp_path / "q.jsonl").exists()
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis") == 0
    asked = [message_text(body) for body in chat_server.requests]
    assert len(asked) == len(set(asked)) == len(DEMO.judgments(1, "gis").queries)


def test_a_killed_rewrite_resumes_without_asking_twice_and_ends_byte_identical(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    # One request at a time: when the 6th arrives, the 5 answers before it are cached.
    chat_server.hold_after = 5
    command = [sys.executable, "-m", "mmbright_core", "rewrite", "--source", "demo"]
    command += ["--task", "2", "--llm", CHAT_MODEL, "--endpoint", chat_server.url]
    command += ["--option", "concurrency=1", "--cache-dir", str(tmp_path / "cache")]
    command += ["--out", str(tmp_path / "q.jsonl")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    kill_when_held(chat_server, command, env)
    assert len(list((tmp_path / "cache" / "chat").glob("*/*.json"))) == 5
    answered = {message_text(body) for body in chat_server.requests[:5]}
    chat_server.hold_after = None
    chat_server.release()
    before = len(chat_server.requests)
    rerun = subprocess.run(command, env=env, capture_output=True, timeout=300, check=False)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    again = [message_text(body) for body in chat_server.requests[before:]]
    assert again and not answered & set(again)
    # A clean job from an empty cache writes the same bytes.
    clean = [*command[:-4], "--cache-dir", str(tmp_path / "fresh"), "--out", str(tmp_path / "c")]
    assert subprocess.run(clean, env=env, timeout=300, check=False).returncode == 0
    assert (tmp_path / "q.jsonl").read_bytes() == (tmp_path / "c").read_bytes()


def test_run_on_rewritten_queries_ranks_their_texts_and_records_the_set(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis", "physics") == 0
    queries = tmp_path / "q.jsonl"
    base = ["run", "--source", "demo", "--task", "1", "--retriever", "bm25", "--k", "20"]
    base += ["--domain", "gis", "physics", "--cache-dir", str(tmp_path / "cache")]
    base += ["--out", str(tmp_path / "out")]
    assert main(base) == 0
    assert main([*base, "--queries", str(queries)]) == 0
    query_set = read_query_set(queries)
    folder = tmp_path / "out" / f"run_t2t_bm25-rw-reason-{query_set.sha256[:8]}"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run_t2t_bm25", folder.name]
    options = json.loads((folder / "config.json").read_text())["config"]["options"]
    assert options["queries_sha256"] == query_set.sha256
    assert (options["rewrite_model"], options["rewrite_prompt"]) == (CHAT_MODEL, "reason")
    assert options["rewrite_endpoint"] == chat_server.url
    outputs = read_outputs(folder)
    wrapped = Rewritten.of(get_retriever("bm25"), query_set)
    for domain in ("gis", "physics"):
        data = DEMO.task(1, domain)
        want = get_retriever("bm25").retrieve(wrapped.rewritten(data), None, 20)
        assert outputs.runs[domain].keys() == want.keys()
        for query_id, docs in want.items():
            cut = top_k(docs, 20, data.excluded.get(query_id, frozenset()))
            assert outputs.runs[domain][query_id] == pytest.approx(cut), query_id
        recorded = json.loads((folder / domain / "rewrites.json").read_text())["queries"]
        assert {q: r["query"] for q, r in recorded.items()} == {
            q.query_id: query_set.rewrites[(domain, q.query_id)].query for q in data.queries
        }


def test_run_refuses_a_set_of_another_task_or_missing_a_domain(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis") == 0
    base = ["run", "--source", "demo", "--retriever", "bm25", "--k", "20"]
    base += ["--queries", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out")]
    assert main([*base, "--task", "2", "--domain", "gis"]) == 2
    assert "written for another task; expected task 2; found task 1" in capsys.readouterr().err
    assert main([*base, "--task", "1", "--domain", "biology"]) == 2
    err = capsys.readouterr().err
    assert "has no rewrite of a query" in err and "--domain biology" in err


def test_a_rewritten_runs_scores_split_by_origin_text_or_llm(
    chat_server: OpenAIServer, tmp_path: Path
) -> None:
    chat_server.reply = lambda body: "raster projection coordinate system elevation"
    assert rewrite(chat_server, tmp_path, 2, "--domain", "gis", "--prompt", "caption") == 0
    out = tmp_path / "out"
    run = ["run", "--source", "demo", "--task", "2", "--retriever", "bm25", "--k", "20"]
    run += ["--domain", "gis", "--cache-dir", str(tmp_path / "cache"), "--out", str(out)]
    assert main([*run, "--queries", str(tmp_path / "q.jsonl")]) == 0
    (folder,) = out.iterdir()
    outputs = read_outputs(folder)
    rebuilt = retriever_from_config(json.loads((folder / "config.json").read_text()))
    assert isinstance(rebuilt, Unavailable) and "records none" in rebuilt.reason
    rebuilt = retriever_from_config(
        json.loads((folder / "config.json").read_text()), rewrites=outputs.rewrites
    )
    assert isinstance(rebuilt, Rewritten)
    analyzer = EnglishAnalyzer()
    data = DEMO.task(2, "gis")
    added = set(analyzer.analyze("raster projection coordinate system elevation"))
    seen = set()
    for query in data.queries:
        scores = outputs.runs["gis"][query.query_id]
        found = explain(rebuilt, data, DEMO, query.query_id, list(scores)[:5])
        original = set(analyzer.analyze(query.text))
        for doc_id, attribution in found.items():
            assert isinstance(attribution, LexicalAttribution), attribution
            assert attribution.score == pytest.approx(scores[doc_id], rel=1e-5)
            for term in attribution.terms:
                want = "text" if term.term in original else "llm"
                assert term.origin == want and (want == "text" or term.term in added)
                seen.add(term.origin)
    assert seen == {"text", "llm"}


def test_an_empty_answer_keeps_the_original_is_not_cached_and_is_counted(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blanks = ["", "  \n "]
    chat_server.reply = lambda body: blanks.pop(0) if blanks else reply_of(body)
    extra = ["--domain", "gis", "--option", "concurrency=1"]
    assert rewrite(chat_server, tmp_path, 1, *extra) == 0
    first, second, *rest = records(tmp_path / "q.jsonl")
    for empty in (first, second):
        assert empty["answer"] is None and empty["query"] == empty["original"]
        assert str(empty["problem"]).endswith("answered an empty text")
    assert rest and all(r["problem"] is None and r["answer"] for r in rest)
    out = capsys.readouterr().out
    assert "2 without an answer (2 of them empty answers;" in out
    assert len(list((tmp_path / "cache" / "chat").glob("*/*.json"))) == len(rest)
    assert rewrite(chat_server, tmp_path, 1, *extra) == 0  # the rerun asks the two again
    assert "0 without an answer (0 of them empty answers;" in capsys.readouterr().out
    asked = [message_text(body) for body in chat_server.requests]
    assert len(asked) == len(rest) + 4


def test_run_on_a_set_with_empty_queries_warns_once_with_their_count(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis") == 0
    kept = records(tmp_path / "q.jsonl")
    for record in kept[:2]:
        record["query"] = " " if record is kept[0] else ""
    (tmp_path / "q.jsonl").write_text(query_set_text(kept), encoding="utf-8")
    capsys.readouterr()
    command = ["run", "--source", "demo", "--task", "1", "--retriever", "bm25", "--domain"]
    command += ["gis", "--queries", str(tmp_path / "q.jsonl"), "--out", str(tmp_path / "out")]
    assert main(command) == 0
    warned = [line for line in capsys.readouterr().err.splitlines() if "empty text" in line]
    assert warned == [
        f"mmbright run: warning: {tmp_path / 'q.jsonl'}: 2 of {len(kept)} queries have an "
        f"empty text (the first: domain 'gis', query {kept[0]['query_id']!r}); they are "
        "ranked with no text and score 0. Rewrite them again with mmbright rewrite, which "
        "keeps a query's own text where the answer is empty"
    ]


@pytest.mark.parametrize("side", ["0", "-5", "abc", "true", "2.5"])
def test_an_image_side_that_is_no_size_is_refused_before_any_request(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], side: str
) -> None:
    assert rewrite(chat_server, tmp_path, 2, "--option", f"image_side={side}") == 2
    err = capsys.readouterr().err
    assert "option image_side is not valid; expected a whole number of at least 1" in err
    assert len(err.strip().splitlines()) == 1
    assert chat_server.requests == [] and not (tmp_path / "q.jsonl").exists()


@pytest.mark.parametrize(
    ("option", "found"),
    [
        ("top_p=NaN", "option top_p is not valid; expected a number from 0 to 1; found nan"),
        ("top_p=nan", "option top_p is not valid; expected a number from 0 to 1; found 'nan'"),
        ("top_p=1.5", "option top_p is not valid; expected a number from 0 to 1; found 1.5"),
        (
            "temperature=Infinity",
            "option temperature is not valid; expected a number of at least 0; found inf",
        ),
        (
            "max_tokens=0",
            "option max_tokens is not valid; expected a whole number of at least 1; found 0",
        ),
        ("stop=3", "option stop is not valid; expected a text, or a list of texts; found 3"),
    ],
)
def test_sampling_options_the_chat_api_cannot_take_are_refused_before_any_request(
    chat_server: OpenAIServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    found: str,
) -> None:
    # top_p=NaN was sent as NaN and keyed the answer cache; a text went out as a text.
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis", "--option", option) == 2
    assert capsys.readouterr().err == f"mmbright rewrite: error: {found}\n"
    assert chat_server.requests == [] and not (tmp_path / "q.jsonl").exists()


def test_a_rewrite_whose_every_answer_was_unusable_warns_in_one_line(
    chat_server: OpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every answer malformed: the set was written, each query its own text, and nothing said
    # but a count at the end of the summary.
    chat_server.faults = ["malformed"] * 50
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis") == 0
    asked = len(records(tmp_path / "q.jsonl"))
    assert capsys.readouterr().err == (
        f"mmbright rewrite: warning: every answer of {chat_server.url} (model {CHAT_MODEL!r}) "
        f"was unusable: the {asked} queries asked keep their own text; the first: "
        f"{chat_server.url} answered a malformed chat response (no choice)\n"
    )
    chat_server.faults = ["malformed"] * (asked - 1)  # one usable answer: no warning
    assert rewrite(chat_server, tmp_path, 1, "--domain", "gis", "--option", "concurrency=1") == 0
    assert "warning" not in capsys.readouterr().err
