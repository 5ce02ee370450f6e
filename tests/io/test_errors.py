"""Every malformed input names the file, the line or JSON path, what was expected and found."""

import gzip
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from locations import IO_SAMPLES

from mmbright_core.errors import InputError
from mmbright_core.io.qrels import read_qrels
from mmbright_core.io.runs import read_run

RUN = "q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t\n"

# (reader, file name, content, line, where, expected, found)
CASES: list[tuple[Callable[..., Any], str, bytes, int | None, str, str, str]] = [
    (read_run, "r.trec", b"q1 Q0 d1 1 2.0\n", 1, "", "6 columns", "5: 'q1 Q0 d1 1 2.0'"),
    (read_run, "r.trec", b"q1 0 d1 1\n", 1, "", "6 columns", "4"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d3 3 abc t\n", 3, "", "finite", "'abc'"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d3 3 NaN t\n", 3, "", "finite", "'NaN'"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d3 3 -inf t\n", 3, "", "finite", "'-inf'"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d3 3 1e999 t\n", 3, "", "finite", "'1e999'"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d3 3 1_0 t\n", 3, "", "finite", "'1_0'"),
    (read_run, "r.trec", b"q1 Q0 d1 0.5 1 t\n", 1, "", "integer rank", "'0.5'"),
    (read_run, "r.trec", RUN.encode() + b"q1 Q0 d1 3 0.5 t\n", 3, "", "at most once", "line 1"),
    (read_run, "r.trec", b"", None, "", "at least one record", "no content"),
    (read_run, "r.trec", b" \n\t\n", None, "", "at least one record", "blank"),
    (read_run, "r.trec", b"q1 Q0 d1 1 2.0 t\nq1 Q0 d\xe9 2 1 t\n", 2, "", "UTF-8", "b'\\xe9'"),
    (read_run, "r.json", b'{"q1": {"d1": 1, "d1": 2}}', None, '$["q1"]["d1"]', "once", "'d1'"),
    (read_run, "r.json", b'{"q1": {"d1": 1}, "q1": {}}', None, '$["q1"]', "once", "'q1'"),
    (read_run, "r.json", b'{"q1": {"d1": "0.5"}}', None, '$["q1"]["d1"]', "finite", "string"),
    (read_run, "r.json", b'{"q1": {"d1": NaN}}', None, '$["q1"]["d1"]', "finite", "nan"),
    (read_run, "r.json", b'{"q1": {"d1": true}}', None, '$["q1"]["d1"]', "finite", "boolean"),
    (read_run, "r.json", b'{"q1": {"d1": 1e400}}', None, '$["q1"]["d1"]', "finite", "inf"),
    (read_run, "r.json", b'{"q1": [["d1", 1]]}', None, '$["q1"]', "an object", "an array"),
    (read_run, "r.json", b'["q1"]', None, "$", "an object", "an array"),
    (read_run, "r.json", b'{"q1": {"d1": 1},\n "q2": {', 2, "", "valid JSON", "Expecting"),
    (read_qrels, "q.trec", b"q1 0 d1 1\nq1 0 d2 1.5\n", 2, "", "integer", "'1.5'"),
    (read_qrels, "q.trec", b"q1 0 d1 1\nq1 0 d2 high\n", 2, "", "integer", "'high'"),
    (read_qrels, "q.trec", b"q1 0 d1 1\nq1 d2 1\n", 2, "", "4 columns", "3"),
    (read_qrels, "q.trec", b"q1 Q0 d1 1 0.5 run\n", 1, "", "4 columns", "6"),
    (read_qrels, "q.trec", b"q1 0 d1 1\nq2 0 d1 0\nq1 0 d1 2\n", 3, "", "once", "line 1"),
    (read_qrels, "q.trec", b"", None, "", "at least one record", "no content"),
    (read_qrels, "q.trec", b"q1 0 d1 1\n\xff\n", 2, "", "UTF-8", "b'\\xff'"),
    (read_qrels, "q.json", b'{"q1": {"d1": 1.0}}', None, '$["q1"]["d1"]', "integer", "1.0"),
    (read_qrels, "q.json", b'{"q1": {"d1": 1, "d1": 0}}', None, '$["q1"]["d1"]', "once", "'d1'"),
    (read_qrels, "q.json", b'{"q1": 1}', None, '$["q1"]', "an object", "number 1"),
]


@pytest.mark.parametrize(("reader", "name", "content", "line", "where", "expected", "found"), CASES)
def test_malformed_file_is_reported_precisely(
    tmp_path: Path,
    reader: Callable[..., Any],
    name: str,
    content: bytes,
    line: int | None,
    where: str,
    expected: str,
    found: str,
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        reader(path)
    err = caught.value
    message = str(err)
    assert err.source == str(path) and message.startswith(str(path))
    assert err.line == line
    if line is not None:
        assert f"{path}:{line}:" in message
    assert where in err.problem
    assert expected in (err.expected or "")
    assert found in (err.found or "")
    assert f"expected {err.expected}" in message and f"found {err.found}" in message


def test_gzipped_file_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.trec.gz"
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 x t\n"))
    with pytest.raises(InputError, match=rf"^{path}:1: non-numeric score"):
        read_run(path)
    path.write_bytes(gzip.compress(b"q1 Q0 d1 1 2 t\n")[:-6])
    with pytest.raises(InputError, match="corrupt or truncated gzip") as caught:
        read_run(path)
    assert caught.value.source == str(path)


def test_sources_without_a_name() -> None:
    with pytest.raises(InputError, match=r"^<text>:1: wrong number of columns"):
        read_run("q1 Q0 d1\n")
    with pytest.raises(InputError, match=r"^<bytes>:1: wrong number of columns"):
        read_run(b"q1 Q0 d1\n")
    with pytest.raises(InputError, match=r"^<stream>:1:"):
        read_run(io.BytesIO(b"q1 Q0 d1\n"))


def test_missing_file_is_not_parsed_as_text(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found") as caught:
        read_run(str(tmp_path / "absent.trec"))
    assert caught.value.source == str(tmp_path / "absent.trec")
    with pytest.raises(InputError, match="file not found"):
        read_qrels(tmp_path / "absent qrels.txt")  # a Path is always a path


def test_hints_say_how_to_fix() -> None:
    with pytest.raises(InputError) as caught:
        read_run("q1 Q0 d1 1 1 t\nq1 Q0 d1 2 0 t\n")
    assert caught.value.hint and "never" in caught.value.hint
    with pytest.raises(InputError) as caught:
        read_qrels("q1 Q0 d1 1 1 t\n")
    assert caught.value.hint == "This looks like a run line; read it with read_run"


@pytest.mark.parametrize(
    ("frame", "problem", "found"),
    [
        (pd.DataFrame({"qid": ["q"], "docno": ["d"], "score": [1.0]}), "missing columns", "qid"),
        (
            pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "score": [2.0, 1.0]}),
            "row 2: duplicate doc id 'a'",
            "row 1",
        ),
        (
            pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, None]}),
            "row 2: missing score",
            "null",
        ),
        (
            pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", None], "score": [2.0, 1.0]}),
            "row 2: missing doc_id",
            "null",
        ),
        (
            pd.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": ["high"]}),
            "score is not numeric",
            "string",
        ),
        (
            pd.DataFrame({"query_id": ["q"], "doc_id": [1.5], "score": [1.0]}),
            "doc_id has the wrong type",
            "double",
        ),
        (
            pd.DataFrame({"query_id": ["q", 7], "doc_id": ["a", "b"], "score": [1.0, 1.0]}),
            "mixes value types",
            "int",
        ),
    ],
)
def test_malformed_parquet_file(
    tmp_path: Path, frame: pd.DataFrame, problem: str, found: str
) -> None:
    path = tmp_path / "run.parquet"
    if "mixes" in problem:
        with pytest.raises(InputError, match=problem) as caught:
            read_run(frame)
        assert caught.value.source == "<frame>"
    else:
        frame.to_parquet(path)
        with pytest.raises(InputError, match=problem) as caught:
            read_run(path)
        assert caught.value.source == str(path)
    assert found in (caught.value.found or "") and caught.value.expected


def test_infinite_parquet_score(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pd.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, float("inf")]}
    ).to_parquet(path)
    with pytest.raises(InputError, match=r"row 2: non-finite score.*found inf"):
        read_run(path)


def test_truncated_parquet(tmp_path: Path) -> None:
    data = (IO_SAMPLES / "run.parquet").read_bytes()
    path = tmp_path / "cut.parquet"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="corrupt or truncated parquet") as caught:
        read_run(path)
    assert caught.value.source == str(path)


def test_parquet_string_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    frame = pd.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "dé"], "score": [1.0, 2.0]})
    frame.to_parquet(path, compression="none")
    data = path.read_bytes()
    assert b"d\xc3\xa9" in data
    path.write_bytes(data.replace(b"d\xc3\xa9", b"d\xc3\x28"))
    with pytest.raises(InputError, match=r"corrupt or truncated parquet.*Invalid UTF8") as caught:
        read_run(path)
    assert caught.value.source == str(path)
