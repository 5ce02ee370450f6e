import gzip
import io
import math
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from locations import IO_SAMPLES

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.runs import (
    read_run,
    run_from_frame,
    run_to_frame,
    write_json_run,
    write_parquet_run,
    write_trec_run,
)

DATA = IO_SAMPLES

# The run every fixture file in tests/support/samples/io holds, in its own format.
EXPECTED = {
    "q1": {"d3": 2.5, "d1": 0.1, "d2": 0.1, "dé": -1e-300},
    "q2": {"d1": 7.0, "d4": 3.0000000000000004},
}


@pytest.mark.parametrize(
    "name", ["run.trec", "run.trec.gz", "run.json", "run.json.gz", "run.parquet"]
)
def test_every_format_reads_to_the_same_run(name: str) -> None:
    run = read_run(DATA / name)
    assert run == EXPECTED
    assert all(type(s) is float for docs in run.values() for s in docs.values())


@pytest.mark.parametrize("name", ["run.trec", "run.trec.gz", "run.json", "run.parquet"])
def test_path_string_binary_stream_and_bytes_agree(name: str) -> None:
    path = DATA / name
    assert read_run(str(path)) == EXPECTED
    with path.open("rb") as handle:
        assert read_run(handle) == EXPECTED
    assert read_run(path.read_bytes()) == EXPECTED
    assert read_run(io.BytesIO(path.read_bytes())) == EXPECTED


def test_text_stream_and_inline_text() -> None:
    with (DATA / "run.trec").open(encoding="utf-8") as handle:
        assert read_run(handle) == EXPECTED
    assert read_run((DATA / "run.trec").read_text(encoding="utf-8")) == EXPECTED
    assert read_run((DATA / "run.json").read_text(encoding="utf-8")) == EXPECTED
    assert read_run("q1 Q0 d1 1 0.5 t") == {"q1": {"d1": 0.5}}  # one line, no newline


def test_gzip_is_detected_by_content_not_name(tmp_path: Path) -> None:
    hidden = tmp_path / "run.txt"
    hidden.write_bytes(gzip.compress((DATA / "run.trec").read_bytes()))
    assert read_run(hidden) == EXPECTED


def test_dataframe_and_arrow_table() -> None:
    frame = pd.read_parquet(DATA / "run.parquet")
    assert read_run(frame) == EXPECTED
    assert run_from_frame(pa.Table.from_pandas(frame)) == EXPECTED


def test_integer_ids_are_read_as_decimal_strings() -> None:
    frame = pd.DataFrame({"query_id": [1, 1], "doc_id": [10, 2], "score": [1, 2]})
    assert run_from_frame(frame) == {"1": {"10": 1.0, "2": 2.0}}


def test_explicit_format_and_unknown_format() -> None:
    assert read_run((DATA / "run.json").read_bytes(), format="json") == EXPECTED
    with pytest.raises(UnknownNameError, match="did you mean 'trec'"):
        read_run(DATA / "run.trec", format="treq")
    with pytest.raises(InputError, match=r"not a parquet file.*found b'q1 Q'"):
        read_run(DATA / "run.trec", format="parquet")


def test_blank_lines_are_skipped_but_line_numbers_kept() -> None:
    with pytest.raises(InputError, match=r"<text>:3: non-numeric score"):
        read_run("q1 Q0 d1 1 1.0 t\n\nq1 Q0 d2 2 high t\n")


def test_unicode_space_stays_inside_an_id() -> None:
    # trec_eval splits on ASCII blanks only.
    assert read_run("q1 Q0 a\u00a0b 1 1.5 t\n") == {"q1": {"a\u00a0b": 1.5}}


def test_trec_round_trip_is_exact(tmp_path: Path) -> None:
    run = {"q": {"a": 0.1 + 0.2, "b": 1e-310, "c": -123456.789, "d": 5}, "p": {"x": 1 / 3}}
    for name in ("r.trec", "r.trec.gz", "r.json", "r.json.gz", "r.parquet"):
        path = tmp_path / name
        if name.endswith("parquet"):
            write_parquet_run(path, run)
        elif ".json" in name:
            write_json_run(path, run)
        else:
            write_trec_run(path, run)
        assert read_run(path) == run, name


def test_trec_writer_ranks_with_the_ranking_rule(tmp_path: Path) -> None:
    path = write_trec_run(tmp_path / "r.trec", {"q": {"a": 1.0, "c": 1.0, "b": 2.0}}, tag="x")
    assert path.read_text().splitlines() == [
        "q Q0 b 1 2.0 x",
        "q Q0 c 2 1.0 x",  # tie: doc id descending
        "q Q0 a 3 1.0 x",
    ]


def test_gz_writer_compresses_deterministically(tmp_path: Path) -> None:
    first = write_trec_run(tmp_path / "a.trec.gz", EXPECTED).read_bytes()
    second = write_trec_run(tmp_path / "b.trec.gz", EXPECTED).read_bytes()
    assert first[:2] == b"\x1f\x8b" and first == second


def test_writers_refuse_unwritable_values(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"doc id cannot be written.*'a b'"):
        write_trec_run(tmp_path / "r.trec", {"q": {"a b": 1.0}})
    with pytest.raises(InputError, match="run tag"):
        write_trec_run(tmp_path / "r.trec", {"q": {"a": 1.0}}, tag="")
    with pytest.raises(InputError, match=r'bad score at \$\["q"\]\["a"\].*nan'):
        write_json_run(tmp_path / "r.json", {"q": {"a": math.nan}})
    with pytest.raises(InputError, match="bad score"):
        write_trec_run(tmp_path / "r.trec", {"q": {"a": "1.0"}})
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_json_writer_accepts_blanks_in_ids(tmp_path: Path) -> None:
    run = {"q 1": {"a b": 1.0}}
    assert read_run(write_json_run(tmp_path / "r.json", run)) == run


def test_run_to_frame_orders_queries_then_ranking() -> None:
    frame = run_to_frame({"q2": {"a": 1.0}, "q1": {"a": 1.0, "b": 3.0}})
    assert list(frame.columns) == ["query_id", "doc_id", "score"]
    assert frame.values.tolist() == [["q1", "b", 3.0], ["q1", "a", 1.0], ["q2", "a", 1.0]]
    assert run_from_frame(frame) == {"q1": {"b": 3.0, "a": 1.0}, "q2": {"a": 1.0}}


def test_package_exports_resolve() -> None:
    import mmbright_core.io as package

    for name in package.__all__:
        assert callable(getattr(package, name)), name
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018
