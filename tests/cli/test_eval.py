import io
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import pytrec_eval
from locations import IO_SAMPLES
from not_files import assert_each_refused

from mmbright_core.cli import main
from mmbright_core.io.qrels import write_qrels
from mmbright_core.io.runs import (
    RunColumns,
    read_run_to_score,
    write_json_run,
    write_parquet_run,
    write_trec_run,
)

DATA = IO_SAMPLES
QRELS = str(DATA / "qrels.trec")
RUN = str(DATA / "run.trec")


def _rows(text: str) -> list[list[str]]:
    return [line.split("\t") for line in text.splitlines()]


def _pytrec(qrels: dict, run: dict, measures: set[str]) -> dict[str, dict[str, float]]:
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def test_tsv_means_and_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--qrels", QRELS, "--run", RUN]) == 0
    rows = _rows(capsys.readouterr().out)
    # The fixture run ranks q1 and q2; q3 is judged but absent and skipped.
    expected = _pytrec(
        {"q1": {"d1": 1, "d3": 2, "dx": 0}, "q2": {"d4": 1}},
        {"q1": {"d3": 2.5, "d1": 0.1, "d2": 0.1, "dé": -1e-300}, "q2": {"d1": 7, "d4": 3.0}},
        {"ndcg_cut_10"},
    )
    mean = sum(s["ndcg_cut_10"] for s in expected.values()) / 2
    assert rows[0][:2] == ["nDCG@10", "all"]
    assert float(rows[0][2]) == pytest.approx(mean, abs=1e-12)
    counts = {r[0]: int(r[2]) for r in rows[1:]}
    assert counts["evaluated"] == 2 and counts["missing_from_run"] == 1


def test_tsv_per_query_rows_and_zero_rule(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["eval", "--qrels", QRELS, "--run", RUN, "-m", "P@1", "RR", "--per-query"]
    assert main([*argv, "--missing", "zero"]) == 0
    rows = _rows(capsys.readouterr().out)
    per_query = {(m, q): float(v) for m, q, v in rows if q != "all" and m in ("P@1", "RR")}
    assert per_query[("P@1", "q1")] == 1.0  # d3 (rel 2) is ranked first
    assert per_query[("P@1", "q2")] == 0.0
    assert per_query[("RR", "q2")] == 0.5
    means = {m: float(v) for m, q, v in rows if q == "all" and m in ("P@1", "RR")}
    assert means["RR"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)  # q3 counts as 0


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "--qrels", QRELS, "--run", RUN, "--format", "json", "-m", "RR"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"per_query", "aggregate", "counts"}
    assert data["per_query"]["RR"] == {"q1": 1.0, "q2": 0.5}
    assert data["aggregate"]["RR"] == 0.75
    assert data["counts"]["evaluated"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--run", RUN], "nothing to score"),
        (["--qrels", QRELS, "--run", "absent.trec"], "absent.trec: file not found"),
        (["--qrels", RUN, "--run", RUN], f"{RUN}:1: wrong number of columns"),
        (["--qrels", QRELS, "--run", RUN, "-m", "nDGC@10"], "did you mean"),
    ],
)
def test_errors_are_one_message_without_traceback(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert main(["eval", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("mmbright eval: error: ") and message in captured.err
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1


def _random_case(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    rng = random.Random(11)
    docs = [f"doc{i}" for i in range(60)]
    qrels = {f"q{q}": {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, 6)} for q in range(20)}
    # Coarse scores make ties, which must be broken by doc id as trec_eval does.
    run = {f"q{q}": {d: rng.randint(0, 9) / 4 for d in rng.sample(docs, 40)} for q in range(22)}
    qrels_path = write_qrels(tmp_path / "qrels.txt.gz", qrels)
    run_path = write_trec_run(tmp_path / "run.trec", run)
    write_json_run(tmp_path / "run.json", run)
    return qrels_path, run_path, qrels, run


@pytest.mark.slow
def test_installed_console_script_matches_pytrec_eval(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "mmbright"
    command = [str(script)] if script.exists() else [shutil.which("mmbright") or "mmbright"]
    qrels_path, run_path, qrels, run = _random_case(tmp_path)
    measures = ["nDCG@10", "AP", "RR", "P@5", "R@20"]
    pytrec_names = {
        "nDCG@10": "ndcg_cut_10",
        "AP": "map",
        "RR": "recip_rank",
        "P@5": "P_5",
        "R@20": "recall_20",
    }
    expected = _pytrec(qrels, run, {"ndcg_cut.10", "map", "recip_rank", "P.5", "recall.20"})
    for run_file in (run_path, tmp_path / "run.json"):
        argv = ["eval", "--qrels", str(qrels_path), "--run", str(run_file), "--per-query"]
        done = subprocess.run(
            [*command, *argv, "-m", *measures], capture_output=True, text=True, check=True
        )
        rows = _rows(done.stdout)
        for measure in measures:
            name = pytrec_names[measure]
            got = {q: float(v) for m, q, v in rows if m == measure and q != "all"}
            assert got.keys() == expected.keys()
            for query_id, value in got.items():
                assert abs(value - expected[query_id][name]) <= 1e-9, (measure, query_id)
            mean = sum(s[name] for s in expected.values()) / len(expected)
            (all_value,) = [float(v) for m, q, v in rows if m == measure and q == "all"]
            assert abs(all_value - mean) <= 1e-9


@pytest.mark.slow
def test_console_script_reports_errors_with_exit_status(tmp_path: Path) -> None:
    bad = tmp_path / "run.trec"
    bad.write_text("q1 Q0 d1 1 nan tag\n")
    done = subprocess.run(
        [sys.executable, "-m", "mmbright_core", "eval", "--qrels", QRELS, "--run", str(bad)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert f"{bad}:1: non-finite score" in done.stderr and "Traceback" not in done.stderr


def test_run_from_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stdin = io.TextIOWrapper(io.BytesIO((DATA / "run.trec.gz").read_bytes()))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert main(["eval", "--qrels", QRELS, "--run", "-", "-m", "RR"]) == 0
    assert _rows(capsys.readouterr().out)[0] == ["RR", "all", "0.75"]


def test_nothing_in_common_is_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    run = write_trec_run(tmp_path / "run.trec", {"other": {"d1": 1.0}})
    assert main(["eval", "--qrels", QRELS, "--run", str(run)]) == 2
    assert "no query can be evaluated" in capsys.readouterr().err


def _json_out(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("task", [1, 2, 4])
def test_qrels_run_and_eval_fit_together_on_the_demo(
    task: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # mmbright qrels writes query ids as mmbright run's run.trec does, so --qrels --run scores
    # the run as --source scores it, query for query.
    chosen = ["--source", "demo", "--task", str(task), "--domain", "biology", "gis"]
    argv = ["run", *chosen, "--retriever", "bm25", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    (run,) = (tmp_path / "out").glob("*/run.trec")
    qrels = tmp_path / "qrels.trec"
    assert main(["qrels", *chosen, "--out", str(qrels)]) == 0
    pooled = _json_out(["eval", "--qrels", str(qrels), "--run", str(run)], capsys)
    bench = _json_out(["eval", *chosen, "--run", str(run)], capsys)
    per_query = {
        f"{domain}/{query}": value
        for domain, result in bench["domains"].items()
        for query, value in result["per_query"]["nDCG@10"].items()
    }
    assert len(per_query) > 2
    assert pooled["per_query"]["nDCG@10"] == pytest.approx(per_query, abs=1e-12)
    assert pooled["counts"]["evaluated"] == len(per_query)
    assert pooled["counts"]["extra_in_run"] == 0
    # One domain's qrels score the combined run as that domain's score.
    gis = tmp_path / "gis.trec"
    assert (
        main(
            ["qrels", "--source", "demo", "--task", str(task), "--domain", "gis", "--out", str(gis)]
        )
        == 0
    )
    one = _json_out(["eval", "--qrels", str(gis), "--run", str(run)], capsys)
    assert one["aggregate"]["nDCG@10"] == pytest.approx(
        bench["domains"]["gis"]["aggregate"]["nDCG@10"], abs=1e-12
    )


def test_a_domains_scores_json_against_qrels_says_how_to_score_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = tmp_path / "qrels.trec"
    assert (
        main(["qrels", "--source", "demo", "--task", "1", "--domain", "gis", "--out", str(qrels)])
        == 0
    )
    scores = tmp_path / "scores.json"
    write_json_run(scores, {"gis_0": {"gis/d": 1.0}})
    capsys.readouterr()
    assert main(["eval", "--qrels", str(qrels), "--run", str(scores)]) == 2
    assert "--source S --task N --run FOLDER" in capsys.readouterr().err


def test_a_parquet_run_is_scored_on_its_columns_as_pytrec_eval_scores_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels_path, _, qrels, run = _random_case(tmp_path)
    run_path = write_parquet_run(tmp_path / "run.parquet", run)
    assert isinstance(read_run_to_score(run_path), RunColumns)  # never built into a mapping
    expected = _pytrec(qrels, run, {"ndcg_cut.10", "recip_rank"})
    out = _json_out(
        ["eval", "--qrels", str(qrels_path), "--run", str(run_path), "-m", "nDCG@10", "RR"], capsys
    )
    for measure, name in (("nDCG@10", "ndcg_cut_10"), ("RR", "recip_rank")):
        assert out["per_query"][measure].keys() == expected.keys()
        for query_id, value in out["per_query"][measure].items():
            assert abs(value - expected[query_id][name]) <= 1e-9, (measure, query_id)
    assert out["counts"]["extra_in_run"] == 2  # q20 and q21 have no judgment


def test_a_bad_parquet_run_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "run.parquet"
    pd.DataFrame(
        {"query_id": ["q1", "q1"], "doc_id": ["d1", "d1"], "score": [1.0, 2.0]}
    ).to_parquet(bad)
    assert main(["eval", "--qrels", QRELS, "--run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: row 2: duplicate doc id 'd1' for query 'q1'" in err and err.count("\n") == 1


def test_query_ids_of_another_form_in_a_parquet_run_get_the_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels = write_qrels(tmp_path / "qrels.trec", {"gis/gis_0": {"gis/d": 1}})
    run = write_parquet_run(tmp_path / "run.parquet", {"gis_0": {"gis/d": 1.0}})
    assert main(["eval", "--qrels", str(qrels), "--run", str(run)]) == 2
    assert "--source S --task N --run FOLDER" in capsys.readouterr().err


def test_ids_that_match_only_once_normalised_are_warned_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    qrels, run = tmp_path / "qrels.json", tmp_path / "run.json"
    qrels.write_text(json.dumps({"q1": {"d1": 1}, "q2": {"d2": 1}}), encoding="utf-8")
    run.write_text(json.dumps({"q1": {"\u202ed1": 1.0}, "q2\u200b": {"d2": 1.0}}), encoding="utf-8")
    assert main(["eval", "--qrels", str(qrels), "--run", str(run)]) == 0
    captured = capsys.readouterr()
    assert "nDCG@10\tall\t0.0\n" in captured.out  # exactly trec_eval's: ids are not fixed
    warned = [line for line in captured.err.splitlines() if "warning" in line]
    assert any("'q2\\u200b' ~ 'q2'" in line for line in warned)
    assert any("'\\u202ed1' ~ 'd1'" in line for line in warned)
    assert "\u202e" not in captured.err and "\u200b" not in captured.err


def test_qrels_out_naming_a_link_a_fifo_or_a_device_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    chosen = ["qrels", "--source", "demo", "--task", "1", "--domain", "gis"]
    assert_each_refused(tmp_path, "qrels", lambda out: main([*chosen, "--out", out]), capsys)
