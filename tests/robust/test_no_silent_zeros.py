"""No silent zeros: data that leaves nothing to rank, or less than it seems, is said or refused.

Every case rewrites one parquet file of a copy of the fixture dataset (the published schema)
and runs the real command line, reads the outputs back, and loads them in the dashboard.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apptest import fresh, goto, use_folder
from fixture_dataset import CORRUPT, SVG

from mmbright_core.cli import main
from mmbright_core.errors import InputError
from mmbright_core.io.official import read_outputs, write_domain_outputs

TRUNCATED_JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF"  # a JPEG that stops inside its first segment


@pytest.fixture
def dataset(fixture_dir: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(fixture_dir, tmp_path / "data"))


def _rewrite(path: Path, column: str, change) -> None:
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    values = change(table.column(column).to_pylist())
    table = table.set_column(index, column, pa.array(values, table.schema.field(index).type))
    pq.write_table(table, path)


def _run(dataset: Path, out: Path, task: int, *extra: str) -> int:
    return main(
        [
            "run",
            "--task",
            str(task),
            "--retriever",
            "random",
            "--source",
            str(dataset),
            "--domain",
            "academia",
            "--out",
            str(out),
            *extra,
        ]
    )


def _break_every_image(dataset: Path) -> int:
    broken = [CORRUPT, SVG, b"", TRUNCATED_JPEG]
    path = dataset / "document_images" / "academia.parquet"
    _rewrite(path, "bytes", lambda blobs: [broken[i % len(broken)] for i in range(len(blobs))])
    return pq.read_metadata(path).num_rows


def test_task3_with_every_corpus_image_broken_warns_everywhere(
    dataset: Path, tmp_path: Path, capsys
):
    count = _break_every_image(dataset)
    assert _run(dataset, tmp_path / "out", 3) == 0
    err = capsys.readouterr().err
    said = f"all {count} corpus images fail to decode"
    assert f"mmbright run: warning: academia: document_images/academia.parquet: {said}" in err
    assert "no document was ranked for any of the" in err  # why the score is 0.0
    task_dir = tmp_path / "out" / "multimodal_it2i_random"
    stored = json.loads((task_dir / "academia" / "metrics.json").read_text())
    assert stored["NDCG@10"] == 0.0 and said in stored["warnings"][0]
    outputs = read_outputs(task_dir)  # the readers keep the warnings apart from the metrics
    assert "warnings" not in outputs.metrics["academia"] and said in outputs.warnings["academia"][0]
    assert _run(dataset, tmp_path / "out", 3) == 0  # reused from disk: said again
    assert said in capsys.readouterr().err
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(dataset)).run()
    at.selectbox(key="task").set_value(3).run()
    at.text_input(key="runs_folder").input(str(task_dir)).run()
    at.button(key="add_folder").click().run()
    assert not at.exception
    shown = [w.value for w in at.warning]
    assert any(said in text and "academia" in text for text in shown), shown


def test_task4_with_no_decodable_document_image_is_refused(dataset: Path, tmp_path: Path, capsys):
    # The official runner raises for such a domain (src/eval_runner.py
    # EvaluationRunner._evaluate_domain: "No document images loaded ... Task 4 cannot be
    # evaluated without them"): every pair would be text-only.
    count = _break_every_image(dataset)
    assert _run(dataset, tmp_path / "out", 4) == 2
    err = capsys.readouterr().err
    assert "mmbright run: error: document_images/academia.parquet: no document image decodes" in (
        err
    )
    assert f"all {count} fail to decode" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "it2it_random").exists()  # nothing was run


def test_null_query_texts_and_passages_warn_with_counts(dataset: Path, tmp_path: Path, capsys):
    _rewrite(dataset / "examples" / "academia.parquet", "query", lambda q: [None, None, *q[2:]])
    documents = dataset / "documents" / "academia.parquet"
    _rewrite(documents, "content", lambda texts: [None, *texts[1:]])
    total = pq.read_metadata(documents).num_rows
    queries = pq.read_metadata(dataset / "examples" / "academia.parquet").num_rows
    assert _run(dataset, tmp_path / "out", 1) == 0
    err = capsys.readouterr().err
    assert f"examples/academia.parquet: 2 of {queries} queries have no text (null)" in err
    assert f"documents/academia.parquet: 1 of {total} passages have no text (null)" in err
    stored = json.loads(
        (tmp_path / "out" / "run_t2t_random" / "academia" / "metrics.json").read_text()
    )
    assert len(stored["warnings"]) == 2


def test_duplicate_doc_ids_are_refused_naming_file_and_ids(dataset: Path, tmp_path: Path, capsys):
    documents = dataset / "documents" / "academia.parquet"
    _rewrite(documents, "id", lambda ids: [ids[0], ids[0], *ids[2:]])
    assert _run(dataset, tmp_path / "out", 1) == 2
    err = capsys.readouterr().err
    assert "documents/academia.parquet: 1 passage id(s) repeat" in err
    assert "'academia/a1b2c3d4_101.txt' (2 times)" in err


@pytest.mark.parametrize(("config", "task"), [("documents", 1), ("document_images", 3)])
def test_an_empty_corpus_is_refused(dataset: Path, tmp_path: Path, capsys, config: str, task: int):
    path = dataset / config / "academia.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)
    assert _run(dataset, tmp_path / "out", task) == 2
    err = capsys.readouterr().err
    assert f"{config}/academia.parquet: the corpus is empty: nothing could be ranked" in err
    assert not (tmp_path / "out" / "run_t2t_random" / "academia" / "metrics.json").exists()


def test_a_query_file_without_rows_is_refused(dataset: Path, tmp_path: Path, capsys):
    path = dataset / "examples" / "academia.parquet"
    pq.write_table(pq.read_table(path).slice(0, 0), path)
    assert _run(dataset, tmp_path / "out", 1) == 2
    assert "examples/academia.parquet: the file holds no query" in capsys.readouterr().err


def test_metrics_json_with_bad_warnings_is_refused(tmp_path: Path):
    folder = write_domain_outputs(
        tmp_path / "run_t2t_x", "academia", {"q": {"d": 1.0}}, {"NDCG@10": 0.5}, ["ok"]
    )
    (folder / "metrics.json").write_text('{"NDCG@10": 0.5, "warnings": 3}')
    with pytest.raises(
        InputError, match=r'bad value at \$\["warnings"\]; expected a list of strings'
    ):
        read_outputs(tmp_path / "run_t2t_x")


def test_the_run_page_shows_why_a_run_scores_zero(dataset: Path, tmp_path: Path):
    count = _break_every_image(dataset)
    at = fresh()
    use_folder(at, dataset)
    at.selectbox(key="task").set_value(3).run()
    goto(at, "run")
    at.selectbox(key="run_retriever").set_value("random").run()
    at.text_input(key="run_out").input(str(tmp_path / "out")).run()
    at.button(key="run_start").click().run()
    assert not at.exception
    # The page shows each message as escaped Markdown (document\\_images): literal text.
    shown = " ".join(w.value for w in at.warning).replace("\\", "")
    assert f"academia: document_images/academia.parquet: all {count} corpus images" in shown
    assert "no document was ranked for any of the" in shown
