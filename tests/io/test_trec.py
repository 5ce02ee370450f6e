"""The TREC line grammar: text after a run's tag is read as trec_eval reads it, with one warning.

trec_eval's own test run (``test/results.trunc``) has lines such as
``301 Q0 DOC 99 2.13 STANDARD more junk at``: trec_eval skips what follows the tag
(``get_trec_results.c``, "Skip over rest of line"). The lines below have that shape.
"""

from __future__ import annotations

import gzip
import io
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
import pytrec_eval

import mmbright_core.io.reading as opening
from mmbright_core.cli import main
from mmbright_core.errors import InputError, InputWarning
from mmbright_core.io.qrels import read_qrels
from mmbright_core.io.reading import load
from mmbright_core.io.runs import read_run

CLEAN = (
    "301 Q0 FR940202-2-00150 1 2.13 STANDARD\n"
    "301 Q0 FR940202-2-00151 2 1.5 STANDARD\n"
    "301 Q0 FR940203-1-00058 3 0.75 STANDARD\n"
    "302 Q0 FBIS3-10082 1 4.0 STANDARD\n"
    "302 Q0 FBIS3-10169 2 3.25 STANDARD\n"
)
# Lines 1, 3 and 5 carry text after the tag, as in trec_eval's results.trunc.
JUNK = {1: " more junk at", 3: "\tjunk", 5: " 7 Q0 x"}
RUN = "".join(
    line + JUNK.get(number, "") + "\n" for number, line in enumerate(CLEAN.splitlines(), start=1)
)
QRELS = (
    "301 0 FR940202-2-00150 1\n301 0 FR940203-1-00058 1\n301 0 FR940202-2-00151 0\n"
    "302 0 FBIS3-10169 1\n303 0 FT921-7107 1\n"
)
WARNING = (
    "{name}: 3 lines have text after the run tag (the first is line 1); "
    "ignored, as trec_eval ignores it"
)


def _read_warned(src: object) -> tuple[dict[str, dict[str, float]], list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = read_run(src)  # type: ignore[arg-type]
    return run, [str(w.message) for w in caught if issubclass(w.category, InputWarning)]


def test_text_after_the_tag_is_ignored_with_one_counted_warning(tmp_path: Path) -> None:
    path = tmp_path / "r.trec"
    path.write_text(RUN, encoding="utf-8")
    run, said = _read_warned(path)
    assert run == read_run(CLEAN)
    assert said == [WARNING.format(name=path)]


def test_one_line_with_text_after_the_tag_is_named() -> None:
    _, said = _read_warned("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0 t extra\n")
    assert said == [
        "<text>: 1 line has text after the run tag (line 2); ignored, as trec_eval ignores it"
    ]


def test_a_clean_run_warns_nothing() -> None:
    assert _read_warned(CLEAN)[1] == []


def test_the_extra_text_does_not_change_the_scores() -> None:
    qrels = read_qrels(QRELS)
    measures = {"ndcg_cut_10", "map", "recip_rank", "P_5"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures)
    assert evaluator.evaluate(_read_warned(RUN)[0]) == evaluator.evaluate(
        {
            "301": {"FR940202-2-00150": 2.13, "FR940202-2-00151": 1.5, "FR940203-1-00058": 0.75},
            "302": {"FBIS3-10082": 4.0, "FBIS3-10169": 3.25},
        }
    )


def _eval(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main(["eval", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_cli_eval_prints_the_warning_once_and_scores_as_the_clean_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "q.trec").write_text(QRELS, encoding="utf-8")
    (tmp_path / "r.trec").write_text(RUN, encoding="utf-8")
    (tmp_path / "clean.trec").write_text(CLEAN, encoding="utf-8")
    # --missing zero is trec_eval -c: judged query 303, absent from the run, counts as 0.
    options = ["--qrels", str(tmp_path / "q.trec"), "-m", "nDCG@10", "AP", "--missing", "zero"]
    out, err = _eval([*options, "--run", str(tmp_path / "r.trec")], capsys)
    clean_out, clean_err = _eval([*options, "--run", str(tmp_path / "clean.trec")], capsys)
    assert out == clean_out and clean_err == ""
    assert err == f"mmbright eval: warning: {WARNING.format(name=tmp_path / 'r.trec')}\n"
    ap = pytrec_eval.RelevanceEvaluator(read_qrels(QRELS), {"map"}).evaluate(read_run(CLEAN))
    mean = (ap["301"]["map"] + ap["302"]["map"] + 0.0) / 3
    assert float(out.splitlines()[1].split("\t")[2]) == pytest.approx(mean, abs=1e-15)


@pytest.mark.parametrize(
    ("content", "found"),
    [("q1 Q0 d1 1 2.0\n", "5: 'q1 Q0 d1 1 2.0'"), ("q1 Q0 d1\n", "3: 'q1 Q0 d1'")],
)
def test_fewer_than_six_run_columns_are_still_refused(content: str, found: str) -> None:
    with pytest.raises(InputError, match="wrong number of columns") as err:
        read_run(content)
    assert err.value.found == found


def test_qrels_keep_exactly_four_columns() -> None:
    with pytest.raises(InputError, match="wrong number of columns"):
        read_qrels("q1 0 d1 1 extra\n")


SOURCES: list[tuple[str, Callable[[Path], object]]] = [
    ("path", lambda p: p),
    ("gzip path", lambda p: p.with_suffix(".gz")),
    ("bytes", lambda p: p.read_bytes()),
    ("gzip bytes", lambda p: p.with_suffix(".gz").read_bytes()),
    ("binary stream", lambda p: io.BytesIO(p.read_bytes())),
    ("text", lambda p: p.read_text(encoding="utf-8")),
]


@pytest.mark.parametrize("make", [m for _, m in SOURCES], ids=[n for n, _ in SOURCES])
def test_each_input_is_checked_for_binary_data_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Callable[[Path], object]
) -> None:
    path = tmp_path / "r.trec"
    path.write_text(CLEAN, encoding="utf-8")
    path.with_suffix(".gz").write_bytes(gzip.compress(CLEAN.encode()))
    checked: list[bytes] = []
    check = opening._refuse_binary

    def counting(head: bytes, name: str) -> None:
        checked.append(head)
        check(head, name)

    monkeypatch.setattr(opening, "_refuse_binary", counting)
    assert load(make(path)).data == CLEAN.encode()  # type: ignore[arg-type]
    assert checked == [CLEAN.encode()]


@pytest.mark.parametrize(
    ("content", "read", "problem"),
    [
        # A run's rank is checked before the duplicate test, its score only after it.
        ("q Q0 d 1 1.0 t\nq Q0 d 2 oops t\n", read_run, "duplicate doc id 'd'"),
        ("q Q0 d 1 1.0 t\nq Q0 d x 0.5 t\n", read_run, "non-integer rank"),
        # A qrels label is checked before the duplicate test.
        ("q 0 d 1\nq 0 d x\n", read_qrels, "non-integer relevance"),
        ("q 0 d 1\nq 0 d 0\n", read_qrels, "duplicate doc id 'd'"),
    ],
)
def test_a_bad_second_line_is_named_for_its_first_fault(
    content: str, read: Callable[[str], object], problem: str
) -> None:
    with pytest.raises(InputError, match=problem) as caught:
        read(content)
    assert caught.value.line == 2
