"""``mmbright eval --source``: a run scored on a benchmark task, per domain and macro."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import pytrec_eval
from release_task4 import release_task4

from mmbright_core.cli import main
from mmbright_core.data.ids import normalise_path
from mmbright_core.io.official import write_domain_outputs
from mmbright_core.io.runs import write_trec_run

A1, A2, A3 = "academia/a1b2c3d4_101.txt", "academia/a1b2c3d4_102.txt", "academia/e5f6a7b8_201.txt"
A_HARD, A_EMPTY = "academia/0123456789abcdef_301.txt", "academia/c0ffee00_401.txt"
B1, B3 = "biology/fec40b40_1635_0.txt", "biology/abcdef12_77_0.txt"
B_HARD = "biology/fedcba9876543210_5_0.txt"

# One run over both domains. a1's hard negative is excluded before ranking, which lifts A1
# to rank 1; b1's hard negative likewise lifts B1 to rank 1 over B3.
RUN = {
    "a1": {A_HARD: 3.0, A1: 2.0, A2: 1.0},
    "a2": {A3: 1.0, A1: 0.5},
    "b1": {B_HARD: 9.0, B3: 2.0, B1: 1.0},
    "b2": {B1: 5.0, B3: 4.0},
}
# academia (task 1 qrels: a1 {A1}, a2 {A3, A_EMPTY}, a3 {A2}, a4 {A3}; a3, a4 absent):
#   a1: with A_HARD excluded the ranking is A1, A2 -> DCG 1, IDCG 1 -> 1
#   a2: A3 at rank 1, A_EMPTY missed -> DCG 1, IDCG 1 + 1/log2(3) -> 1 / 1.6309 = 0.6131
# biology (b1 {B1} excluding B_HARD; b2 {B3}):
#   b1: ranking B3, B1 -> 1/log2(3) = 0.6309;  b2: B3 at rank 2 -> 0.6309
ACADEMIA = (1 + 1 / (1 + 1 / math.log2(3))) / 2
BIOLOGY = 1 / math.log2(3)


def task1_argv(
    fixture_dir: Path, tmp_path: Path, run: dict[str, dict[str, float]] = RUN
) -> list[str]:
    """``mmbright eval`` of ``run`` (RUN), written as a TREC file, on Task 1 of the fixture."""
    write_trec_run(tmp_path / "run.trec", run)
    return [
        "eval",
        "--source",
        str(fixture_dir),
        "--task",
        "1",
        "--run",
        str(tmp_path / "run.trec"),
    ]


def json_report(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """The JSON report ``mmbright eval`` prints for ``argv`` (which must succeed)."""
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_source_splits_a_run_file_by_domain(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = task1_argv(fixture_dir, tmp_path)
    out = json_report(argv, capsys)
    assert out["domains"]["academia"]["aggregate"]["nDCG@10"] == pytest.approx(ACADEMIA, abs=1e-12)
    assert out["domains"]["biology"]["aggregate"]["nDCG@10"] == pytest.approx(BIOLOGY, abs=1e-12)
    assert out["macro"]["nDCG@10"] == pytest.approx((ACADEMIA + BIOLOGY) / 2, abs=1e-12)
    assert out["domains"]["academia"]["counts"] == {
        "evaluated": 2, "dropped_empty_qrels": 0, "missing_from_run": 2, "extra_in_run": 0
    }  # fmt: skip
    assert main(argv) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines()]
    assert rows[0][:2] == ["domain", "nDCG@10"]
    assert rows[1][:3] == ["academia", f"{100 * ACADEMIA:.1f}", "2"]
    assert rows[3][:2] == ["macro(2 domains)", f"{50 * (ACADEMIA + BIOLOGY):.1f}"]


def test_eval_source_negatives_keep_scores_the_run_as_given(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = task1_argv(fixture_dir, tmp_path)
    assert main([*argv, "--negatives", "keep", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # a1: A_HARD stays first, A1 second -> 1/log2(3); a2 as before -> 0.6131.
    # b1: B_HARD, B3, B1 -> B1 third: 1/log2(4) = 0.5; b2 as before -> 0.6309.
    academia = (1 / math.log2(3) + 1 / (1 + 1 / math.log2(3))) / 2
    biology = (0.5 + 1 / math.log2(3)) / 2
    assert out["negatives"] == "keep"
    assert out["domains"]["academia"]["aggregate"]["nDCG@10"] == pytest.approx(academia)
    assert out["domains"]["biology"]["aggregate"]["nDCG@10"] == pytest.approx(biology)
    assert main([*argv, "--negatives", "keep"]) == 0
    assert "negatives=keep" in capsys.readouterr().out.splitlines()[-1]
    assert main(argv) == 0
    assert "negatives=exclude" in capsys.readouterr().out.splitlines()[-1]


def test_eval_source_matches_pytrec_eval_after_exclusions(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_trec_run(tmp_path / "run.trec", RUN)
    argv = ["eval", "--source", str(fixture_dir), "--task", "1", "--domain", "biology"]
    assert main([*argv, "--run", str(tmp_path / "run.trec"), "--format", "json"]) == 0
    ours = json.loads(capsys.readouterr().out)["domains"]["biology"]["per_query"]["nDCG@10"]
    qrels = {"b1": {B1: 1}, "b2": {B3: 1}}
    excluded_run = {"b1": {B3: 2.0, B1: 1.0}, "b2": RUN["b2"]}
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(excluded_run)
    assert ours == pytest.approx({q: v["ndcg_cut_10"] for q, v in theirs.items()}, abs=1e-9)


def test_eval_source_reads_an_official_outputs_folder(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task_dir = tmp_path / "run_bm25"
    write_domain_outputs(task_dir, "academia", {q: RUN[q] for q in ("a1", "a2")}, {})
    write_domain_outputs(task_dir, "biology", {q: RUN[q] for q in ("b1", "b2")}, {})
    argv = ["eval", "--source", str(fixture_dir), "--task", "1", "--run", str(task_dir)]
    out = json_report(argv, capsys)
    assert out["macro"]["nDCG@10"] == pytest.approx((ACADEMIA + BIOLOGY) / 2, abs=1e-12)


def test_eval_source_rejects_a_run_of_another_task_or_missing_options(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = task1_argv(fixture_dir, tmp_path, {"q-unknown": {A1: 1.0}})
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no query of the run belongs to this task" in err and "run.trec" in err
    assert "'q-unknown'" in err
    assert main(["eval", "--source", str(fixture_dir), "--run", str(tmp_path / "run.trec")]) == 2
    assert "--source S --task N --run PATH" in capsys.readouterr().err


def test_eval_source_reads_a_run_from_standard_input(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    write_trec_run(tmp_path / "run.trec", RUN)
    with (tmp_path / "run.trec").open("rb") as stdin:
        monkeypatch.setattr("sys.stdin", type("Stdin", (), {"buffer": stdin})())
        argv = ["eval", "--source", str(fixture_dir), "--task", "1", "--run", "-"]
        out = json_report(argv, capsys)
    assert out["macro"]["nDCG@10"] == pytest.approx((ACADEMIA + BIOLOGY) / 2, abs=1e-12)


def test_an_unwritable_output_path_is_one_error_line(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["qrels", "--source", str(fixture_dir), "--task", "1", "--domain", "academia"]
    assert main([*argv, "--out", str(tmp_path)]) == 2  # a folder, not a file
    err = capsys.readouterr().err
    assert err.startswith("mmbright qrels: error:") and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_eval_source_release_protocol_scores_task4_as_the_release_code(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run ranking every release pair of both domains; pytrec_eval (what the release's
    # calculate_retrieval_metrics calls) scores it on the release's own judgments.
    run, expected = {}, {}
    for domain in ("academia", "biology"):
        pair_ids, qrels, _ = release_task4(fixture_dir, domain)
        draw = random.Random(domain)
        scores = {q: {normalise_path(d): draw.random() for d in pair_ids} for q in qrels}
        run.update({f"{domain}/{q}": docs for q, docs in scores.items()})
        judged = {q: {normalise_path(d): r for d, r in j.items()} for q, j in qrels.items()}
        evaluated = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(scores)
        expected[domain] = {q: v["ndcg_cut_10"] for q, v in evaluated.items()}
    write_trec_run(tmp_path / "run.trec", run)
    argv = [
        "eval",
        "--source",
        str(fixture_dir),
        "--task",
        "4",
        "--run",
        str(tmp_path / "run.trec"),
    ]
    out = json_report([*argv, "--protocol", "release"], capsys)
    assert out["protocol"] == "release"
    for domain, values in expected.items():
        ours = out["domains"][domain]["per_query"]["nDCG@10"]
        assert ours == pytest.approx(values, abs=1e-9)
    macro = sum(sum(v.values()) / len(v) for v in expected.values()) / len(expected)
    assert out["macro"]["nDCG@10"] == pytest.approx(macro, abs=1e-9)
    assert json_report(argv, capsys)["macro"]["nDCG@10"] != pytest.approx(macro)  # paper grades
