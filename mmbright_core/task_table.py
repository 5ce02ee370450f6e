"""The facts of each MM-BRIGHT task, one frozen record per task (docs/protocol.md, "The benchmark").

Every module that needs to know what a task reads, ranks or writes asks its record here
rather than testing the task's number, so adding a fact or a task is one edit. The module
imports nothing but the shared types and errors, so every layer (``io`` included) may read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from mmbright_core.errors import UnknownNameError
from mmbright_core.types import Task

CorpusKind = Literal["passages", "images", "pairs"]
"""What a task ranks: text passages, the domain's images, or (passage, image) pairs."""

IdShape = Literal["passage", "image", "pair"]
"""The shape of a task's doc ids (``docs/protocol.md``, "The data as published")."""

MAIN_SCORE = "nDCG@10"
"""The measure every task is reported by (docs/protocol.md, Scoring), each :class:`TaskInfo`'s
``main_score``: the default of every command and table that scores."""

RUN_DEPTH = 1000
"""Every run is cut to its top 1,000 per query (docs/protocol.md, Per-task protocol): the
depth scoring reads and the ``k`` a run keeps by default."""


@dataclass(frozen=True)
class TaskInfo:
    """What one task is, after MTEB's ``TaskMetadata``.

    Attributes:
        number: 1, 2, 3 or 4.
        label: How the task reads on screen (``"Task 1: text → text"``).
        query_config: The dataset config its queries come from.
        corpus: What it ranks.
        id_shape: The shape of its doc ids.
        negatives: Whether each query's ``negative_ids`` apply (excluded from its ranking
            unless ``--negatives keep``, docs/protocol.md "Per-task protocol").
        text_only: Whether its queries are text alone (no query image is read).
        folder_prefix: The ``<subdir>`` prefix this package writes its runs under.
        official_prefix: The ``<subdir>`` prefix the official harness writes them under
            (docs/protocol.md, "The official harness's files").
        task_type: The ``task_type`` its runs record in ``summary.json``.
        mteb_name: MTEB's name of the task (its prediction files and statistics carry it).
        graded: Whether its judgments are graded (2 / 1 / 0) rather than binary.
        main_score: The measure it is reported by (MTEB's ``main_score``).
    """

    number: Task
    label: str
    query_config: str
    corpus: CorpusKind
    id_shape: IdShape
    negatives: bool
    text_only: bool
    folder_prefix: str
    official_prefix: str
    task_type: str
    mteb_name: str
    graded: bool
    main_score: str

    @property
    def corpus_text(self) -> bool:
        """Whether its documents carry text (passages and pairs; Task 3's images none)."""
        return self.corpus != "images"

    @property
    def corpus_images(self) -> bool:
        """Whether its documents carry images (Task 3's images, Task 4's pairs)."""
        return self.corpus != "passages"

    @property
    def protocols(self) -> bool:
        """Whether ``--protocol`` changes it: only the pair join has two passage-key rules."""
        return self.corpus == "pairs"


# One row a task, in the order of TaskInfo's fields: number, label, query config, corpus,
# id shape, negatives, text only, folder prefix, official prefix, task_type, MTEB name,
# graded, main score. The official harness names tasks 1 and 2 both ``run_<model>``, so a Task 2 run
# replaced the Task 1 run of the same model; this package writes ``run_t2t_`` and
# ``run_it2t_``, after MTEB's T2T / IT2T names, and reads every official name.
_ROWS: tuple[tuple[Any, ...], ...] = (
    (1, "Task 1: text → text", "examples", "passages", "passage", True, True,
     "run_t2t_", "run_", "text_text", "MMBrightT2TRetrieval", False, MAIN_SCORE),
    (2, "Task 2: text+image → text", "examples_multimodal", "passages", "passage", True, False,
     "run_it2t_", "run_", "multimodal_text", "MMBrightIT2TRetrieval", False, MAIN_SCORE),
    (3, "Task 3: text+image → image", "examples_multimodal", "images", "image", False, False,
     "multimodal_it2i_", "multimodal_it2i_", "text_image", "MMBrightIT2IRetrieval", False,
     MAIN_SCORE),
    (4, "Task 4: text+image → text+image", "examples_multimodal", "pairs", "pair", False, False,
     "it2it_", "it2it_", "text_pair", "MMBrightIT2ITRetrieval", True, MAIN_SCORE),
)  # fmt: skip

TASK_TABLE: Mapping[int, TaskInfo] = MappingProxyType({row[0]: TaskInfo(*row) for row in _ROWS})
"""task number -> its record, in task order."""

TASKS: tuple[Task, ...] = tuple(info.number for info in TASK_TABLE.values())
"""The four tasks of MM-BRIGHT (docs/protocol.md, "The benchmark")."""


def tasks_where(test: Callable[[TaskInfo], bool]) -> frozenset[Task]:
    """Return the tasks whose record passes ``test``: what a retriever runs, read from the table.

    ``tasks_where(lambda t: t.corpus_text)`` are the tasks whose documents carry text (BM25's).
    """
    return frozenset(info.number for info in TASK_TABLE.values() if test(info))


TEXT_CORPUS_TASKS = tasks_where(lambda t: t.corpus_text)
"""The tasks whose documents carry text: what a text retriever ranks (BM25, a dense model)."""

PASSAGE_TASKS = tasks_where(lambda t: t.corpus == "passages")
"""The tasks whose documents are passages alone: what a text-only embedder ranks."""

IMAGE_QUERY_TEXT_TASKS = tasks_where(lambda t: t.corpus_text and not t.text_only)
"""The tasks whose queries carry images and whose documents text: where OCR adds words."""


def task_info(task: int) -> TaskInfo:
    """Return the record of a task number.

    Raises:
        UnknownNameError: ``task`` is not 1-4.
    """
    info = TASK_TABLE.get(task)
    if info is None:
        raise UnknownNameError("task", str(task), [str(t) for t in TASK_TABLE])
    return info


def task_of_type(task_type: str) -> Task | None:
    """Return the task whose runs record ``task_type`` in ``summary.json``, or None."""
    return next((i.number for i in TASK_TABLE.values() if i.task_type == task_type), None)
