"""The task table: each task's record, the protocol doc it restates, the data it describes."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mmbright_core.benchmark import doc_id_shape
from mmbright_core.data.choices import TASKS
from mmbright_core.data.sources import FolderSource
from mmbright_core.errors import UnknownNameError
from mmbright_core.io.mteb import MTEB_TASKS, mteb_task_name
from mmbright_core.io.official import official_subdir
from mmbright_core.task_table import TASK_TABLE, TaskInfo, task_info, task_of_type

PROTOCOL_DOC = Path(__file__).resolve().parent.parent / "docs" / "protocol.md"

# Each field over tasks 1-4, as docs/protocol.md and the official harness state them.
EXPECTED = {
    "number": (1, 2, 3, 4),
    "label": (
        "Task 1: text → text",
        "Task 2: text+image → text",
        "Task 3: text+image → image",
        "Task 4: text+image → text+image",
    ),
    "query_config": (
        "examples",
        "examples_multimodal",
        "examples_multimodal",
        "examples_multimodal",
    ),
    "corpus": ("passages", "passages", "images", "pairs"),
    "id_shape": ("passage", "passage", "image", "pair"),
    "negatives": (True, True, False, False),
    "text_only": (True, False, False, False),
    "folder_prefix": ("run_t2t_", "run_it2t_", "multimodal_it2i_", "it2it_"),
    "official_prefix": ("run_", "run_", "multimodal_it2i_", "it2it_"),
    "task_type": ("text_text", "multimodal_text", "text_image", "text_pair"),
    "mteb_name": (
        "MMBrightT2TRetrieval",
        "MMBrightIT2TRetrieval",
        "MMBrightIT2IRetrieval",
        "MMBrightIT2ITRetrieval",
    ),
    "graded": (False, False, False, True),
    "main_score": ("nDCG@10",) * 4,
}


def test_every_field_of_the_record_is_checked() -> None:
    assert list(EXPECTED) == [f.name for f in dataclasses.fields(TaskInfo)]


@pytest.mark.parametrize("task", [1, 2, 3, 4])
def test_each_task_has_its_record(task: int) -> None:
    record = task_info(task)
    assert record is TASK_TABLE[task]
    assert dataclasses.asdict(record) == {name: row[task - 1] for name, row in EXPECTED.items()}


def test_the_table_holds_the_four_tasks_in_order_and_cannot_change() -> None:
    assert tuple(TASK_TABLE) == TASKS == (1, 2, 3, 4)
    with pytest.raises(TypeError):
        TASK_TABLE[5] = TASK_TABLE[1]  # type: ignore[index]
    with pytest.raises(AttributeError):
        TASK_TABLE[1].graded = True  # type: ignore[misc]


def test_derived_facts_follow_the_corpus() -> None:
    assert [t for t in TASKS if TASK_TABLE[t].corpus_text] == [1, 2, 4]
    assert [t for t in TASKS if TASK_TABLE[t].corpus_images] == [3, 4]
    assert [t for t in TASKS if TASK_TABLE[t].protocols] == [4]


def test_an_unknown_task_is_refused_with_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown task '5'.*known: 1, 2, 3, 4"):
        task_info(5)


def test_task_types_and_mteb_names_read_back_to_their_task() -> None:
    for task, info in TASK_TABLE.items():
        assert task_of_type(info.task_type) == task
        assert MTEB_TASKS[info.mteb_name] == task
        assert mteb_task_name(task) == info.mteb_name
        assert official_subdir(task, "bm25") == f"{info.folder_prefix}bm25"
    assert task_of_type("text_video") is None


def _benchmark_rows() -> dict[int, list[str]]:
    """docs/protocol.md's table of the four tasks: task -> [query, corpus, judgments]."""
    rows = {}
    for line in PROTOCOL_DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"[1-4] .*", cells[0]):
            rows[int(cells[0][0])] = cells[1:]
    return rows


def test_the_records_state_what_the_protocol_doc_states() -> None:
    rows = _benchmark_rows()
    assert sorted(rows) == [1, 2, 3, 4]
    corpus_words = {"passages": "text passages", "images": "images", "pairs": "pairs"}
    for task, (query, corpus, judgments) in rows.items():
        info = TASK_TABLE[task]
        assert ("its images" not in query) == info.text_only, task
        assert corpus_words[info.corpus] in corpus, task
        assert judgments.startswith("graded" if info.graded else "binary"), task


def _config_tasks(text: str) -> dict[str, set[int]]:
    """docs/protocol.md's query configs: ``| `examples` (Task 1) |`` -> {"examples": {1}}."""
    found: dict[str, set[int]] = {}
    for config, one, first, last in re.findall(
        r"^\| `(\w+)` \((?:Task (\d)|tasks (\d)-(\d))\)", text, re.M
    ):
        found[config] = {int(one)} if one else set(range(int(first), int(last) + 1))
    return found


def test_configs_negatives_and_folders_are_the_protocol_docs() -> None:
    text = PROTOCOL_DOC.read_text(encoding="utf-8")
    configs = _config_tasks(text)
    assert configs == {"examples": {1}, "examples_multimodal": {2, 3, 4}}
    for task, info in TASK_TABLE.items():
        assert task in configs[info.query_config], task
    (bullet,) = [b for b in text.split("\n- ") if "`negative_ids` (except" in b]
    named = {int(n) for n in re.findall(r"\*\*Task (\d)\*\*", bullet)}
    assert named == {t for t in TASKS if TASK_TABLE[t].negatives} == {1, 2}
    official = "`run_<model>` for tasks 1 and 2, `multimodal_it2i_<model>` for Task 3 and"
    assert official in text and "`it2it_<model>` for Task 4" in text
    assert [TASK_TABLE[t].official_prefix for t in TASKS] == [
        "run_", "run_", "multimodal_it2i_", "it2it_",
    ]  # fmt: skip
    assert "`run_t2t_<model>` (Task 1)" in text and "`run_it2t_<model>` (Task 2)" in text


@pytest.mark.parametrize("task", [1, 2, 3, 4])
def test_a_built_task_ranks_ids_of_its_shape_with_its_grades(fixture_dir: Path, task: int) -> None:
    info = TASK_TABLE[task]
    data = FolderSource(fixture_dir).task(task, "academia")
    assert {doc_id_shape(d.doc_id) for d in data.corpus} == {info.id_shape}
    labels = {rel for judged in data.qrels.values() for rel in judged.values()}
    assert labels == ({1, 2} if info.graded else {1})
    assert any(d.text for d in data.corpus) == info.corpus_text
    assert any(d.image is not None for d in data.corpus) == info.corpus_images
    assert any(q.images for q in data.queries) != info.text_only
    assert any(data.excluded.values()) == (info.negatives or info.corpus == "pairs")
