"""End-to-end runs on the fixture dataset: files, exclusions, cut, metrics, reuse, resume."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mmbright_core.data.view import TaskView
from mmbright_core.errors import MissingDependencyError
from mmbright_core.io.official import read_outputs
from mmbright_core.io.runs import read_run
from mmbright_core.metrics import evaluate
from mmbright_core.metrics.official import OFFICIAL_MEASURES, official_metrics
from mmbright_core.retrieval import RunConfig, get_retriever
from mmbright_core.retrieval.runner.folders import OutputConflictError
from mmbright_core.retrieval.runner.task_run import run_task

DOMAINS = ("academia", "biology")


def check_outputs(source, task: int, task_dir: Path, k: int, protocol: str = "paper") -> None:
    assert (task_dir / "summary.json").is_file() and (task_dir / "config.json").is_file()
    outputs = read_outputs(task_dir)
    trec = read_run(task_dir / "run.trec", format="trec")
    for domain in DOMAINS:
        data = source.task(task, domain, protocol)
        run = outputs.runs[domain]
        assert set(run) == {q.query_id for q in data.queries}
        for query_id, docs in run.items():
            assert len(docs) <= k
            assert not data.excluded.get(query_id, frozenset()) & set(docs)
            assert set(docs) <= {d.doc_id for d in data.corpus}
            assert trec[f"{domain}/{query_id}"] == pytest.approx(docs)
        metrics = json.loads((task_dir / domain / "metrics.json").read_text())
        assert metrics == official_metrics(data.qrels, run)
        expected = evaluate(data.qrels, run, measures=("nDCG@10", "RR"))
        assert metrics["NDCG@10"] == round(expected.aggregate["nDCG@10"], 5)
        assert metrics["MRR"] == round(expected.aggregate["RR"], 5)
        assert set(metrics) == set(OFFICIAL_MEASURES)


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("bm25", 1),
        ("bm25", 2),
        ("bm25", 4),
        ("random", 1),
        ("random", 2),
        ("random", 3),
        ("random", 4),
    ],
)
def test_run_writes_official_outputs(source, tmp_path: Path, name: str, task: int):
    outcome = run_task(TaskView(source, task), get_retriever(name), tmp_path, k=3)
    assert (
        outcome.task_dir.name
        == {1: "run_t2t_", 2: "run_it2t_", 3: "multimodal_it2i_", 4: "it2it_"}[task] + name
    )
    assert [d.domain for d in outcome.domains] == list(DOMAINS)
    check_outputs(source, task, outcome.task_dir, k=3)
    summary = json.loads((outcome.task_dir / "summary.json").read_text())
    assert summary["model"] == name and set(summary["domains"]) == set(DOMAINS)


def test_legacy_protocol_is_recorded_for_task4_only(source, tmp_path: Path):
    four = run_task(TaskView(source, 4, "legacy"), get_retriever("bm25"), tmp_path, k=5)
    check_outputs(source, 4, four.task_dir, k=5, protocol="legacy")
    assert four.config.protocol == "legacy"
    one = run_task(TaskView(source, 1, "legacy"), get_retriever("bm25"), tmp_path, k=5)
    assert one.config.protocol == "paper"


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_equal_config_reuses_and_a_changed_config_never_replaces(source, tmp_path: Path):
    first = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    assert not any(d.reused for d in first.domains)
    scores = first.task_dir / "academia" / "scores.json"
    before = scores.stat().st_mtime_ns
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    assert all(d.reused for d in again.domains) and scores.stat().st_mtime_ns == before
    assert [d.run for d in again.domains] == [d.run for d in first.domains]
    written = _files(first.task_dir)
    with pytest.raises(OutputConflictError, match=r"options.k1 \(recorded 0.9, now 1.5\)"):
        run_task(TaskView(source, 1), get_retriever("bm25", k1=1.5), tmp_path, k=5)
    with pytest.raises(OutputConflictError, match=r"k \(recorded 5, now 4\)") as refused:
        run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=4)
    assert refused.value.folder == first.task_dir and "--out" in str(refused.value)
    assert _files(first.task_dir) == written  # byte for byte: nothing replaced
    moved = run_task(
        TaskView(source, 1), get_retriever("bm25", k1=1.5), tmp_path, k=5, new_folder=True
    )
    assert moved.task_dir == tmp_path / "run_t2t_bm25_2" and not any(
        d.reused for d in moved.domains
    )
    assert [folder for folder, _ in moved.avoided] == [first.task_dir]
    assert "options.k1 (recorded 0.9, now 1.5)" in moved.avoided[0][1]
    # The same configuration again goes back to its own folder, reused; a third one
    # passes both by.
    back = run_task(
        TaskView(source, 1), get_retriever("bm25", k1=1.5), tmp_path, k=5, new_folder=True
    )
    assert back.task_dir == moved.task_dir and all(d.reused for d in back.domains)
    third = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=4, new_folder=True)
    assert third.task_dir == tmp_path / "run_t2t_bm25_3" and len(third.avoided) == 2
    assert _files(first.task_dir) == written
    assert read_outputs(first.task_dir).run_config["k"] == 5


def test_a_folder_of_outputs_without_configuration_is_never_written(source, tmp_path: Path):
    # The official harness's outputs: scores and metrics, no config.json anywhere.
    first = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    for path in first.task_dir.rglob("config.json"):
        path.unlink()
    written = _files(first.task_dir)
    with pytest.raises(OutputConflictError, match="no recorded configuration"):
        run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    assert _files(first.task_dir) == written


def test_a_subset_rerun_keeps_the_other_domains_in_the_summary(source, tmp_path: Path):
    first = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5, domains=["biology"])
    assert [d.domain for d in again.domains] == ["biology"]
    assert [d.domain for d in again.kept] == ["academia"] and again.kept[0].reused
    summary = json.loads((first.task_dir / "summary.json").read_text())
    assert list(summary["domains"]) == list(DOMAINS)
    assert json.loads((first.task_dir / "config.json").read_text())["domains"] == list(DOMAINS)
    check_outputs(source, 1, first.task_dir, k=5)


A_HARD = "academia/0123456789abcdef_301.txt"  # a1's negative_ids: A_HARD and A_NEG
A_NEG = "academia/deadbeef_501.txt"


def test_negatives_keep_is_recorded_and_never_reuses_an_exclude_run(source, tmp_path: Path):
    # k=10 exceeds academia's 7 passages: every passage not excluded is in the run.
    exclude = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=10)
    assert exclude.config.negatives == "exclude"
    assert not {A_HARD, A_NEG} & set(exclude.domains[0].run["a1"])
    with pytest.raises(OutputConflictError, match=r"negatives \(recorded 'exclude', now 'keep'\)"):
        run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=10, negatives="keep")
    keep = run_task(
        TaskView(source, 1),
        get_retriever("bm25"),
        tmp_path,
        k=10,
        negatives="keep",
        new_folder=True,
    )
    assert not any(d.reused for d in keep.domains) and keep.task_dir != exclude.task_dir
    assert keep.config.negatives == "keep"
    assert {A_HARD, A_NEG} <= set(keep.domains[0].run["a1"])
    for path in (keep.task_dir / "config.json", keep.task_dir / "academia" / "config.json"):
        assert json.loads(path.read_text())["config"]["negatives"] == "keep"
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=10)
    assert all(d.reused for d in again.domains)  # the exclude outputs, untouched
    assert [d.run for d in again.domains] == [d.run for d in exclude.domains]
    four = run_task(TaskView(source, 4), get_retriever("random"), tmp_path, k=5, negatives="keep")
    assert four.config.negatives == "exclude"  # negative_ids do not apply to Task 4


def test_a_config_without_negatives_reads_as_exclude_and_is_reused(source, tmp_path: Path):
    first = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    for path in first.task_dir.rglob("config.json"):  # as written before it was recorded
        stored = json.loads(path.read_text())
        del stored["config"]["negatives"]
        path.write_text(json.dumps(stored))
        assert RunConfig.from_dict(stored["config"]).negatives == "exclude"
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    assert all(d.reused for d in again.domains)
    with pytest.raises(OutputConflictError, match="negatives"):
        run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5, negatives="keep")


class FailingOn:
    """A retriever that fails on one domain, as a run killed there would."""

    name = "bm25"
    tasks = frozenset({1})

    def __init__(self, domain: str) -> None:
        self.inner = get_retriever("bm25")
        self.domain = domain

    def label(self) -> str:
        return self.inner.label()

    def settings(self):
        return self.inner.settings()

    def retrieve(self, data, source, k):
        if data.domain == self.domain:
            raise KeyboardInterrupt
        return self.inner.retrieve(data, source, k)


def test_interrupted_run_resumes_with_the_finished_domains(source, tmp_path: Path):
    with pytest.raises(KeyboardInterrupt):
        run_task(TaskView(source, 1), FailingOn("biology"), tmp_path, k=5)
    task_dir = tmp_path / "run_t2t_bm25"
    assert (task_dir / "academia" / "config.json").is_file()
    assert not (task_dir / "biology" / "config.json").exists()
    resumed = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    assert [d.reused for d in resumed.domains] == [True, False]
    check_outputs(source, 1, task_dir, k=5)


def test_a_stale_domain_without_config_is_rerun(source, tmp_path: Path):
    run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    (tmp_path / "run_t2t_bm25" / "biology" / "config.json").unlink()
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5, domains=["biology"])
    assert [(d.domain, d.reused) for d in again.domains] == [("biology", False)]


def test_a_corrupt_scores_file_is_rerun_not_trusted(source, tmp_path: Path):
    first = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5)
    scores = tmp_path / "run_t2t_bm25" / "biology" / "scores.json"
    scores.write_text('{"b1": {"x": NaN', encoding="utf-8")  # a torn write from elsewhere
    again = run_task(TaskView(source, 1), get_retriever("bm25"), tmp_path, k=5, domains=["biology"])
    assert [(d.domain, d.reused) for d in again.domains] == [("biology", False)]
    assert again.domains[0].run == first.domains[1].run


def test_a_run_that_cannot_start_leaves_no_folder(
    source, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The install without the ``ocr`` extra: the engine's import fails, as it would there.
    with monkeypatch.context() as hidden:
        hidden.setitem(sys.modules, "rapidocr_onnxruntime", None)
        ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path / "cache"))
        with pytest.raises(MissingDependencyError) as err:
            run_task(TaskView(source, 2), ocr, tmp_path / "out", new_folder=True)
    assert str(err.value) == (
        "the OCR engine of ocr-bm25 and ocr-dense needs the optional package "
        "'rapidocr_onnxruntime', which is not installed; install it with: pip install "
        "'mmbright[ocr]'"
    )
    assert not (tmp_path / "out" / "run_it2t_ocr-bm25").exists()
    # Installed, the run goes to the standard folder, not to a <subdir>_2 beside a claim.
    ocr = get_retriever("ocr-bm25", cache_dir=str(tmp_path / "cache"))
    done = run_task(TaskView(source, 2), ocr, tmp_path / "out", new_folder=True)
    assert done.task_dir == tmp_path / "out" / "run_it2t_ocr-bm25" and not done.avoided
