"""Reading rewritten query sets: every record checked, a hand-edited one refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mmbright_core.errors import InputError
from mmbright_core.io.rewrites import query_set_text, read_query_set


def record(query_id: str = "1", **changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "source": "demo",
        "task": 1,
        "domain": "gis",
        "query_id": query_id,
        "original": "a map",
        "images": [],
        "prompt": {"name": "reason", "template": "{query}", "combine": "replace"},
        "llm": {"model": "m", "endpoint": "http://x/v1", "parameters": {"temperature": 0}},
        "answer": "a projection",
        "problem": None,
        "tokens": {"prompt": 2, "completion": 2},
        "query": "a projection",
    }
    return {**base, **changes}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "q.jsonl"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_set_reads_back_with_its_settings_and_hash(tmp_path: Path) -> None:
    path = write(tmp_path, query_set_text([record("1"), record("2", answer=None, problem="x")]))
    read = read_query_set(path)
    assert list(read.rewrites) == [("gis", "1"), ("gis", "2")]
    assert read.rewrites[("gis", "2")].answer is None and read.task == 1
    assert read.settings["llm"]["model"] == "m" and len(read.sha256) == 64


def test_a_hand_edited_record_no_longer_matches_its_key(tmp_path: Path) -> None:
    line = json.loads(query_set_text([record()]))
    line["query"] = "something else"
    path = write(tmp_path, json.dumps(line) + "\n")
    with pytest.raises(InputError, match=r"q.jsonl:1: a record whose key does not match"):
        read_query_set(path)


def test_records_of_two_models_are_refused_naming_the_line(tmp_path: Path) -> None:
    other = record("2", llm={"model": "n", "endpoint": "http://x/v1", "parameters": {}})
    path = write(tmp_path, query_set_text([record("1"), other]))
    with pytest.raises(InputError, match=r"q.jsonl:2: a record of other settings \(llm\)"):
        read_query_set(path)


def test_a_query_twice_a_missing_field_and_a_wrong_type_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r":2: a query listed twice"):
        read_query_set(write(tmp_path, query_set_text([record("1"), record("1")])))
    missing = {k: v for k, v in record().items() if k != "query"}
    with pytest.raises(InputError, match=r":1: a record without 'query'"):
        read_query_set(write(tmp_path, query_set_text([missing])))
    with pytest.raises(InputError, match=r"'task' has the wrong type; expected an integer"):
        read_query_set(write(tmp_path, query_set_text([record(task="1")])))
    with pytest.raises(InputError, match=r"invalid JSON"):
        read_query_set(write(tmp_path, "{not json\n"))


@pytest.mark.parametrize(
    ("tokens", "found"),
    [
        ({"prompt": "12", "completion": 2}, "'prompt' is the string '12'"),
        ({"prompt": [1], "completion": 2}, "'prompt' is an array"),
        ({"prompt": 2, "completion": {"n": 1}}, "'completion' is an object"),
        ({"prompt": 1.5, "completion": 2}, "'prompt' is the number 1.5"),
        ({"prompt": True, "completion": 2}, "'prompt' is true (a boolean)"),
        ({"prompt": -3, "completion": 2}, "'prompt' is the number -3"),
        ({"prompt": 10**400, "completion": 2}, "'prompt' is the number 1000"),
        ({"prompt": 2}, "no 'completion'"),
        ({"prompt": 2, "completion": 2, "total": 4}, "a field 'total'"),
    ],
)
def test_token_counts_of_the_wrong_type_are_one_line(
    tmp_path: Path, tokens: dict[str, Any], found: str
) -> None:
    path = write(tmp_path, query_set_text([record("1"), record("2", tokens=tokens)]))
    with pytest.raises(InputError) as err:
        read_query_set(path)
    message = str(err.value)
    assert message.startswith(f"{path}:2: a record's 'tokens' are not token counts")
    assert "expected" in message and "whole numbers of at least 0" in message
    assert found in message and "\n" not in message
