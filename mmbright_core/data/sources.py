"""Where MM-BRIGHT is read from: the Hugging Face hub, a local folder, or the embedded demo.

Every source reads one parquet file per config and domain (``{config}/{domain}.parquet``,
docs/protocol.md, The data as published) with pyarrow, never through ``datasets.load_dataset``
(which fails on ``examples_multimodal`` and leaves ``.incomplete`` caches behind). A source is made
of three parts: finding and checking its files (:mod:`.files`), streaming their records
(:mod:`.records`) and serving image bytes one item at a time (:mod:`.image_store`); this
module adds the task cache and :func:`open_source`.

Memory stays bounded by the largest domain, not by the number of domains: a source keeps the
tasks (with their corpus) of a bounded number of domains, least recently used first out
(physics alone holds 338,291 passages, docs/protocol.md, The benchmark).
"""

from __future__ import annotations

import os
import stat
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from mmbright_core.data.files import FolderFiles, HubFiles
from mmbright_core.data.ids import check_protocol
from mmbright_core.data.image_store import IMAGE_INDEX_CACHE, ImageStore
from mmbright_core.data.layout import PINNED_REVISION
from mmbright_core.data.records import BATCH_ROWS, RecordReader
from mmbright_core.data.tasks import Negatives, build_task, negatives_for
from mmbright_core.errors import QUOTE_LIMIT, InputError, show
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Protocol4, TaskData

__all__ = [
    "BATCH_ROWS",
    "CORPUS_CACHE_DOMAINS",
    "IMAGE_INDEX_CACHE",
    "FolderSource",
    "HubSource",
    "Source",
    "SourceSpec",
    "open_source",
    "parse_source_spec",
]

_TaskKey = tuple[int, Protocol4, Negatives]  # what a task's data depends on, checked

#: Domains whose tasks (with their corpus) a source keeps; 1 = never two corpora at once.
CORPUS_CACHE_DOMAINS = 1


class Source(RecordReader, ImageStore):
    """A copy of MM-BRIGHT: builds each task's data and serves image bytes lazily.

    Subclasses say where ``{config}/{domain}.parquet`` lives (``_locate``) and which
    domains exist. Tasks are cached per object, keyed by task, domain and protocol: judgments
    (no corpus) for every domain, tasks with their corpus for the ``corpus_cache_domains``
    most recently used domains only, so a run over all 29 domains holds one corpus at a time.

    Attributes:
        corpus_cache_domains: How many domains' corpus-bearing tasks to keep (at least 1).
    """

    corpus_cache_domains: int = CORPUS_CACHE_DOMAINS

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self._judgments: dict[tuple[str, int, Protocol4, Negatives], TaskData] = {}
        # domain -> its corpus-bearing tasks, least recently used domain first.
        self._tasks: OrderedDict[str, dict[_TaskKey, TaskData]] = OrderedDict()

    def task(
        self, task: int, domain: str, protocol: str = "paper", *, negatives: str = "exclude"
    ) -> TaskData:
        """Return one task's queries, corpus, qrels and exclusions for one domain.

        The protocol is in docs/protocol.md, Per-task protocol.

        Args:
            task: 1, 2, 3 or 4.
            domain: A domain of :meth:`domains`.
            protocol: The Task 4 protocol, ``"paper"``, ``"legacy"`` or ``"release"``; ignored
                by tasks 1-3.
            negatives: ``"exclude"`` (official) or ``"keep"`` each query's ``negative_ids``;
                ignored by tasks 3-4 (:func:`~mmbright_core.data.tasks.negatives_for`).
        """
        return self._cached_task(task, domain, protocol, negatives, with_corpus=True)

    def judgments(
        self, task: int, domain: str, protocol: str = "paper", *, negatives: str = "exclude"
    ) -> TaskData:
        """Return a task's data without reading its corpus (``corpus`` is empty).

        Scoring needs queries, qrels and exclusions only; tasks 1-3 then read no passage
        text and Task 4 reads passage ids alone. ``negatives`` as in :meth:`task`.
        """
        held = self._tasks.get(domain, {}).get(self._task_key(task, protocol, negatives))
        if held is not None:
            return held
        return self._cached_task(task, domain, protocol, negatives, with_corpus=False)

    def _task_key(self, task: int, protocol: str, negatives: str) -> _TaskKey:
        checked = self._check_task(task)
        return checked, _protocol_for(task, protocol), negatives_for(task, negatives)

    def _cached_task(
        self, task: int, domain: str, protocol: str, negatives: str, *, with_corpus: bool
    ) -> TaskData:
        key = self._task_key(task, protocol, negatives)
        self.check_domain(domain)
        if not with_corpus:
            light = (domain, *key)
            if light not in self._judgments:
                self._judgments[light] = build_task(
                    self, task, domain, key[1], with_corpus=False, negatives=key[2]
                )
            return self._judgments[light]
        if domain not in self._tasks:
            # Evict before building: the new corpus must never sit beside one too many.
            while len(self._tasks) >= max(1, self.corpus_cache_domains):
                self._tasks.popitem(last=False)
            self._tasks[domain] = {}
        self._tasks.move_to_end(domain)
        held = self._tasks[domain]
        if key not in held:
            held[key] = build_task(self, task, domain, key[1], with_corpus=True, negatives=key[2])
        return held[key]

    @staticmethod
    def _check_task(task: int) -> int:
        if task not in TASK_TABLE:
            raise InputError("unknown task", expected="1, 2, 3 or 4", found=repr(task))
        return task


def _protocol_for(task: int, protocol: str) -> Protocol4:
    """Check the protocol name; tasks 1-3 have one protocol, so they share one cache entry."""
    checked = check_protocol(protocol)
    return checked if TASK_TABLE[task].protocols else "paper"


class FolderSource(FolderFiles, Source):
    """A local folder with the published layout ``{config}/{domain}.parquet``.

    Args:
        root: The folder.
        name: What the source is called (default: the folder).
    """


class HubSource(HubFiles, Source):
    """The Hugging Face dataset, fetched one parquet file at a time into the hub cache.

    Args:
        revision: The dataset revision (default: the benchmark's pinned one).
        repo_id: The dataset repository.
    """


def _demo_root() -> Path:
    return Path(__file__).parent / "demo"


@dataclass(frozen=True)
class SourceSpec:
    """What a source spec names: the embedded demo, the hub at one revision, or a folder.

    Attributes:
        kind: ``"demo"``, ``"hf"`` or ``"folder"``.
        revision: The hub revision (``hf`` only, empty otherwise): the one after ``@``, else
            the one given beside the spec, else the benchmark's pinned one.
        folder: The folder as written, ``~`` not yet expanded (``folder`` only, empty
            otherwise).
    """

    kind: Literal["demo", "hf", "folder"]
    revision: str = ""
    folder: str = ""


def parse_source_spec(spec: str, revision: str | None = None) -> SourceSpec:
    """Read a source spec: ``"demo"``, ``"hf"``, ``"hf@<revision>"`` or a folder.

    The spec is taken as written: ``hf@`` names no revision, as ``hf``, and a folder whose
    name is ``demo``, ``hf`` or starts with ``hf@`` is named by a path (``./hf@x``).

    Args:
        spec: The spec (``mmbright --source``, ``MMBRIGHT_SOURCE``, the sidebar's choice).
        revision: A hub revision given beside it (``"hf"`` only).

    Raises:
        InputError: For a revision given twice or to a non-hub source.
    """
    kind, _, at_revision = spec.partition("@") if spec.startswith("hf@") else (spec, "", "")
    if at_revision and revision and at_revision != revision:
        raise InputError("two different revisions", found=f"{spec!r} and revision={revision!r}")
    if kind == "hf":
        return SourceSpec("hf", revision=at_revision or revision or PINNED_REVISION)
    if revision:
        raise InputError(
            "a revision applies to the hub source only",
            found=f"{spec!r} with revision={revision!r}",
        )
    return SourceSpec("demo") if kind == "demo" else SourceSpec("folder", folder=spec)


def open_source(spec: str, revision: str | None = None) -> Source:
    """Open a copy of MM-BRIGHT.

    Args:
        spec: ``"demo"`` (the embedded demo dataset), ``"hf"`` or ``"hf@<revision>"`` (the hub
            dataset, pinned to the benchmark's revision unless told otherwise), or a folder
            (:func:`parse_source_spec`).
        revision: A hub revision (``"hf"`` only).

    Raises:
        InputError: For a revision given twice or to a non-hub source, or a folder that is
            missing, not a folder, unreadable or not in the published layout.
    """
    parsed = parse_source_spec(spec, revision)
    if parsed.kind == "hf":
        return HubSource(parsed.revision)
    if parsed.kind == "demo":
        root = _demo_root()
        if not any(root.glob("*/*.parquet")):
            raise InputError(
                "the embedded demo dataset is missing",
                source=str(root),
                hint="Build it with the mmbright_core.data.demo_build module",
            )
        return FolderSource(root, name="demo")
    root = Path(parsed.folder).expanduser()
    _check_folder(root, parsed.folder)
    return FolderSource(root)


_KINDS = "'demo', 'hf', 'hf@<revision>' or a folder with {config}/{domain}.parquet"


def _check_folder(root: Path, spec: str) -> None:
    """Refuse a folder spec that is missing, not a folder, or cannot be listed, naming it.

    A typo in a path is the likely cause, so the message says the folder is missing rather
    than that the spec is unknown (it also lists the other kinds of source).

    Raises:
        InputError: The path does not exist, is not a folder, or cannot be read.
    """
    shown = show(spec, QUOTE_LIMIT)
    try:
        kind = root.stat().st_mode
    except FileNotFoundError:
        raise InputError(
            f"no such folder: {shown}",
            expected=_KINDS,
            hint="Check the path, or copy the dataset there",
        ) from None
    except (OSError, ValueError) as err:  # a NUL character: ValueError
        raise _unreadable(shown, err) from None
    if not stat.S_ISDIR(kind):
        raise InputError(f"not a folder: {shown}", expected=_KINDS, found="a file")
    try:
        with os.scandir(root) as entries:
            next(entries, None)
    except OSError as err:
        raise _unreadable(shown, err) from None


def _unreadable(shown: str, err: Exception) -> InputError:
    return InputError(
        f"cannot read the folder {shown} ({type(err).__name__}: {err})",
        expected="a folder this program may list and read",
        hint="Check its permissions, or copy the dataset to a readable folder",
    )
