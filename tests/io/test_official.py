import json
import random
from pathlib import Path

import pytest
import pytrec_eval

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.io.official import (
    official_subdir,
    read_outputs,
    write_domain_outputs,
    write_summary,
)
from mmbright_core.metrics.official import OFFICIAL_MEASURES, official_metrics

RUN = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d9": 0.5, "d4": 0.25}}
METRICS = {"NDCG@10": 0.61315, "MAP@10": 0.5, "MRR": 0.75}


@pytest.mark.parametrize(
    ("task", "expected"),
    [(1, "run_t2t_bm25"), (2, "run_it2t_bm25"), (3, "multimodal_it2i_bm25"), (4, "it2it_bm25")],
)
def test_official_subdir(task: int, expected: str) -> None:
    # Tasks 1 and 2 share ``run_<model>`` officially; here each task has a folder of its own.
    assert official_subdir(task, "bm25") == expected


@pytest.mark.parametrize(
    "name",
    [
        "run_bm25",
        "run_t2t_bm25",
        "run_it2t_bm25",
        "run_it2t_bm25_2",
        "multimodal_it2i_bm25",
        "multimodal_bm25",
        "it2it_bm25",
    ],
)
def test_the_model_is_read_from_every_folder_name(tmp_path: Path, name: str) -> None:
    # Official outputs without a summary name their model by their folder alone.
    write_domain_outputs(tmp_path / name, "law", {"q3": {"x": 1.0}}, {"NDCG@10": 0.2})
    expected = "bm25_2" if name.endswith("_2") else "bm25"
    assert read_outputs(tmp_path / name).model == expected


def _config(path: Path, **settings: object) -> None:
    config = {"retriever": "bm25", "task": 1, "k": 1000, "package_version": "0.1", **settings}
    path.write_text(json.dumps({"config": config, "domain": path.parent.name}))


def test_a_folder_mixing_configurations_is_refused(tmp_path: Path) -> None:
    task_dir = tmp_path / "run_t2t_bm25"
    for domain in ("biology", "law"):
        write_domain_outputs(task_dir, domain, RUN, METRICS)
    assert read_outputs(task_dir).domain_configs == {"biology": None, "law": None}  # official
    _config(task_dir / "biology" / "config.json")
    with pytest.raises(InputError, match=r"law has no config.json, beside biology") as err:
        read_outputs(task_dir)
    assert str(task_dir) in str(err.value) and "run the same command again" in str(err.value)
    _config(task_dir / "law" / "config.json", package_version="0.2")  # a new release only
    assert read_outputs(task_dir).domain_configs["law"] == {
        "retriever": "bm25",
        "task": 1,
        "k": 1000,
        "package_version": "0.2",
    }
    _config(task_dir / "law" / "config.json", k=10, options={"k1": 1.5})
    with pytest.raises(
        InputError, match=r"law/?\S* differs from biology in k \(biology 1000, law 10\)"
    ):
        read_outputs(task_dir)


def test_a_summary_of_another_run_than_its_domains_is_refused(tmp_path: Path) -> None:
    task_dir = tmp_path / "run_t2t_bm25"
    write_domain_outputs(task_dir, "biology", RUN, METRICS)
    write_summary(task_dir, "bm25", "text_text", {"biology": METRICS})
    assert read_outputs(task_dir).metrics["biology"] == METRICS
    write_domain_outputs(task_dir, "biology", RUN, {**METRICS, "NDCG@10": 0.65})
    with pytest.raises(InputError, match=r"summary\.json disagrees with the metrics of biology"):
        read_outputs(task_dir)


def test_official_subdir_refuses_bad_input() -> None:
    with pytest.raises(UnknownNameError, match="unknown task '5'"):
        official_subdir(5, "bm25")
    with pytest.raises(InputError, match=r"invalid model name.*'a/b'"):
        official_subdir(1, "a/b")


def test_domain_outputs_round_trip(tmp_path: Path) -> None:
    task_dir = tmp_path / "outputs" / "run_bm25"
    folder = write_domain_outputs(task_dir, "biology", RUN, METRICS)
    assert sorted(p.name for p in folder.iterdir()) == ["metrics.json", "scores.json"]
    assert json.loads((folder / "scores.json").read_text()) == RUN
    write_domain_outputs(task_dir, "law", {"q3": {"x": 1.0}}, {"NDCG@10": 0.2, "MRR": 0.25})
    write_summary(
        task_dir,
        "bm25",
        "text_text",
        {"biology": METRICS, "law": {"NDCG@10": 0.2, "MRR": 0.25}},
    )
    summary = json.loads((task_dir / "summary.json").read_text())
    # Each metric is averaged over the domains reporting it, rounded to 5 decimals.
    assert summary["aggregated"] == {"NDCG@10": 0.40658, "MAP@10": 0.5, "MRR": 0.5}

    for path in (task_dir, tmp_path / "outputs"):  # the <subdir>, or the folder above it
        out = read_outputs(path)
        assert out.path == task_dir
        assert (out.model, out.task_type) == ("bm25", "text_text")
        assert out.runs == {"biology": RUN, "law": {"q3": {"x": 1.0}}}
        assert out.metrics["biology"] == METRICS
        assert out.aggregated == summary["aggregated"]


def test_older_results_json_without_summary(tmp_path: Path) -> None:
    folder = tmp_path / "it2it_clip" / "physics"
    folder.mkdir(parents=True)
    (folder / "scores.json").write_text(json.dumps(RUN))
    (folder / "results.json").write_text(json.dumps(METRICS))
    out = read_outputs(tmp_path / "it2it_clip")
    assert (out.model, out.task_type) == ("clip", None)
    assert out.runs == {"physics": RUN}
    assert out.metrics == {"physics": METRICS}


def test_errors_name_the_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="folder not found") as caught:
        read_outputs(tmp_path / "absent")
    assert caught.value.source == str(tmp_path / "absent")
    with pytest.raises(InputError, match="no official outputs here"):
        read_outputs(tmp_path)
    for name in ("run_a", "run_b"):
        write_domain_outputs(tmp_path / name, "law", RUN, METRICS)
    with pytest.raises(InputError, match=r"several official output folders.*run_a, run_b"):
        read_outputs(tmp_path)

    bad = tmp_path / "run_a" / "law" / "metrics.json"
    bad.write_text('{"NDCG@10": "high"}')
    with pytest.raises(InputError, match=r'bad metric value at \$\["NDCG@10"\]') as caught:
        read_outputs(tmp_path / "run_a")
    assert caught.value.source == str(bad)

    scores = tmp_path / "run_b" / "law" / "scores.json"
    scores.write_text('{"q1": {"d1": 1, "d1": 2}}')
    with pytest.raises(InputError, match=r'duplicate key at \$\["q1"\]\["d1"\]') as caught:
        read_outputs(tmp_path / "run_b")
    assert caught.value.source == str(scores)


def test_malformed_summary(tmp_path: Path) -> None:
    write_domain_outputs(tmp_path / "run_x", "law", RUN, METRICS)
    summary = tmp_path / "run_x" / "summary.json"
    summary.write_text('{"model": 3, "domains": {}}')
    with pytest.raises(InputError, match=r'bad value at \$\["model"\].*number 3') as caught:
        read_outputs(tmp_path / "run_x")
    assert caught.value.source == str(summary)


def _pytrec_official(qrels: dict, run: dict) -> dict[str, float]:
    """The official metrics, computed as the official harness does, with pytrec_eval."""
    ks = (1, 5, 10, 25, 50, 100)
    names = {
        **{f"NDCG@{k}": f"ndcg_cut_{k}" for k in ks},
        **{f"MAP@{k}": f"map_cut_{k}" for k in ks},
        **{f"Recall@{k}": f"recall_{k}" for k in ks},
        **{f"P@{k}": f"P_{k}" for k in ks},
        "MRR": "recip_rank",
    }
    cuts = ",".join(str(k) for k in ks)
    wanted = {f"ndcg_cut.{cuts}", f"map_cut.{cuts}", f"recall.{cuts}", f"P.{cuts}", "recip_rank"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, wanted)
    scores = evaluator.evaluate(run)
    out = {n: round(sum(s[m] for s in scores.values()) / len(scores), 5) for n, m in names.items()}
    # The oracle (calculate_retrieval_metrics): the top 100 by a stable sort on the score
    # (ties in run order) score their labels, every other document of the run scores 0.
    oracle = {}
    for qid, docs in run.items():
        top = set(sorted(docs, key=lambda d: docs[d], reverse=True)[:100])
        judged = qrels.get(qid, {})
        oracle[qid] = {d: float(judged[d]) if d in top and d in judged else 0.0 for d in docs}
    oracle_scores = evaluator.evaluate(oracle)
    for k in ks:
        total = sum(s[f"ndcg_cut_{k}"] for s in oracle_scores.values())
        out[f"Oracle NDCG@{k}"] = round(total / len(oracle_scores), 5)
    return out


def test_official_metrics_match_the_official_computation() -> None:
    rng = random.Random(7)
    docs = [f"d{i}" for i in range(150)]
    qrels = {f"q{q}": {d: rng.choice([0, 1, 2]) for d in rng.sample(docs, 8)} for q in range(12)}
    run = {
        f"q{q}": {d: float(rng.randint(0, 40)) for d in rng.sample(docs, 130)} for q in range(14)
    }
    got = official_metrics(qrels, run)
    assert list(got) == list(OFFICIAL_MEASURES)
    expected = _pytrec_official(qrels, {q: r for q, r in run.items() if q in qrels})
    assert got == expected  # rounded to 5 decimals the same way, so exactly equal


def test_official_metrics_without_any_evaluable_query() -> None:
    with pytest.raises(InputError, match="no query can be evaluated"):
        official_metrics({"q1": {"d": 1}}, {"q2": {"d": 1.0}})
