import io
from pathlib import Path

import pytest
from locations import IO_SAMPLES

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.qrels import read_qrels, write_qrels

DATA = IO_SAMPLES

EXPECTED = {"q1": {"d1": 1, "d3": 2, "dx": 0}, "q2": {"d4": 1}, "q3": {"d9": 1}}


@pytest.mark.parametrize("name", ["qrels.trec", "qrels.trec.gz", "qrels.json"])
def test_every_format_reads_to_the_same_qrels(name: str) -> None:
    path = DATA / name
    assert read_qrels(path) == EXPECTED
    assert read_qrels(str(path)) == EXPECTED
    assert read_qrels(path.read_bytes()) == EXPECTED
    with path.open("rb") as handle:
        assert read_qrels(handle) == EXPECTED


def test_inline_text_and_text_stream() -> None:
    assert read_qrels("q1 0 d1 1\nq1 0 d3 2\nq1 0 dx 0\nq2 0 d4 1\nq3 0 d9 1\n") == EXPECTED
    assert read_qrels(io.StringIO('{"q": {"d": 2}}')) == {"q": {"d": 2}}
    assert read_qrels("q 0 d -1") == {"q": {"d": -1}}  # trec_eval accepts negative labels


def test_labels_are_ints() -> None:
    qrels = read_qrels(DATA / "qrels.json")
    assert all(type(r) is int for docs in qrels.values() for r in docs.values())


@pytest.mark.parametrize("name", ["q.trec", "q.txt.gz", "q.json", "q.json.gz"])
def test_round_trip(tmp_path: Path, name: str) -> None:
    qrels = {"b": {"x": 2, "y": 0}, "a": {"z": 1}}
    path = write_qrels(tmp_path / name, qrels)
    assert read_qrels(path) == qrels
    if name == "q.trec":
        assert path.read_text() == "a 0 z 1\nb 0 x 2\nb 0 y 0\n"


def test_explicit_format(tmp_path: Path) -> None:
    path = write_qrels(tmp_path / "q.txt", {"q": {"d": 1}}, format="json")
    assert path.read_text().startswith("{")
    assert read_qrels(path, format="json") == {"q": {"d": 1}}
    with pytest.raises(UnknownNameError, match="did you mean 'json'"):
        read_qrels(path, format="jsn")


def test_writer_refuses_bad_values(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r'non-integer relevance at \$\["q"\]\["d"\]'):
        write_qrels(tmp_path / "q.trec", {"q": {"d": 0.5}})
    with pytest.raises(InputError, match="non-integer relevance"):
        write_qrels(tmp_path / "q.trec", {"q": {"d": True}})
    with pytest.raises(InputError, match="cannot be written"):
        write_qrels(tmp_path / "q.trec", {"q": {"d e": 1}})
    assert not list(tmp_path.iterdir())
