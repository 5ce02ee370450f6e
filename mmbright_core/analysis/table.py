"""The results table: one row per (run, task, domain, query) with measures and query features.

Built once per set of runs (the dashboard caches it) and read by every analysis: the
leaderboard averages it, comparisons pair two of its runs, breakdowns group it by the query
features. Scoring is the benchmark's (docs/protocol.md, Per-task protocol and Scoring): each query's
excluded ids are removed before the top-1000 cut (``mmbright_core.benchmark``), then ``evaluate``
scores the run; a run given as a DataFrame or Arrow table stays columns all the way
(``run_columns``, ``apply_protocol_columns``), as ``evaluate`` scores a table.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mmbright_core.benchmark import apply_protocol, apply_protocol_columns
from mmbright_core.data.sources import Source
from mmbright_core.data.view import TaskView
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.runs import run_columns
from mmbright_core.measures import Measure, parse_measures
from mmbright_core.metrics import evaluate
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.types import Missing, TaskData

RunLike = Any
"""One domain's run: query_id -> doc_id -> score, or a DataFrame / Arrow table of them."""

ImageProblem = Callable[[str, str], "str | None"]
"""(domain, image path) -> why the query image cannot be decoded, or None if it decodes."""

FEATURES = ("n_images", "n_decodable_images", "query_chars", "n_judged", "n_relevant")
KEYS = ("run", "task", "domain", "query_id")
_FIRST_RELEVANT = "RR"  # 1 / rank of the first relevant item (trec_eval recip_rank)


def source_results_table(
    view: TaskView,
    runs: Mapping[str, Mapping[str, RunLike]],
    *,
    domains: Sequence[str] | None = None,
    measures: Iterable[str] = (MAIN_SCORE,),
    missing: Missing = "skip",
    check_images: bool = True,
    negatives: str = "exclude",
) -> pd.DataFrame:
    """Build the results table of several runs of one task on a dataset copy.

    Args:
        view: The dataset copy, the task and its protocol (its judgments define the task).
        runs: run name -> domain -> run.
        domains: Domains to include (default: every domain any run has).
        measures: Measure names.
        missing: ``"skip"`` or ``"zero"`` (docs/protocol.md, Scoring).
        check_images: Decode every query image to count the decodable ones (cached by the
            source); when False that column is left empty (<NA>).
        negatives: ``"exclude"`` (official) or ``"keep"`` the queries' ``negative_ids``.

    Returns:
        See :func:`results_table`.
    """
    chosen = sorted({d for run in runs.values() for d in run}) if domains is None else domains
    source = view.source
    tasks = [view.judgments(source.check_domain(d), negatives) for d in chosen]

    def problem(domain: str, path: str) -> str | None:
        return source.image_problem("examples_images", domain, path)

    return results_table(
        tasks,
        runs,
        measures=measures,
        missing=missing,
        image_problem=problem if check_images else None,
    )


def results_table(
    tasks: Sequence[TaskData],
    runs: Mapping[str, Mapping[str, RunLike]],
    *,
    measures: Iterable[str | Measure] = (MAIN_SCORE,),
    missing: Missing = "skip",
    image_problem: ImageProblem | None = None,
) -> pd.DataFrame:
    """Score every run on every task domain and join the query features.

    Args:
        tasks: One :class:`TaskData` per domain (queries, qrels, exclusions).
        runs: run name -> domain -> run; a run lacking a domain is scored as empty.
        measures: Measure names (e.g. ``"nDCG@10"``).
        missing: ``"skip"`` or ``"zero"``: how judged queries absent from a run count.
        image_problem: Says whether a query image decodes; None leaves
            ``n_decodable_images`` empty (<NA>).

    Returns:
        One row per (run, task, domain, query) of the tasks, in that order, with columns
        ``run``, ``task``, ``domain``, ``query_id``, one per measure (NaN where the query
        was not scored: no judgment, or absent from the run under ``skip``), the features
        ``n_images``, ``n_decodable_images``, ``query_chars``, ``n_judged``, ``n_relevant``,
        ``first_relevant_rank`` (NaN when no relevant item is in the run's top 1,000) and
        ``covered`` (the run ranks the query).
    """
    wanted = list(dict.fromkeys(str(m) for m in parse_measures(measures)))
    features = query_features(tasks, image_problem)
    names = [*wanted, _FIRST_RELEVANT] if _FIRST_RELEVANT not in wanted else wanted
    scored = [
        _score(data, by_domain.get(data.domain, {}), names, missing)
        for by_domain in runs.values()
        for data in tasks
    ]
    columns = [*KEYS, *wanted, *FEATURES, "first_relevant_rank", "covered"]
    if not scored:
        empty = features.merge(_empty_scores(wanted), on=["task", "domain", "query_id"])
        return empty[columns].reset_index(drop=True)
    # Every run scores every query of the tasks in the features' order, so the table is the
    # features repeated once per run (no join on the string keys).
    table = pd.concat([features] * len(runs), ignore_index=True)
    table.insert(0, "run", np.repeat(list(runs), len(features)))
    values = {n: np.concatenate([part[n] for part in scored]) for n in [*names, "covered"]}
    with np.errstate(divide="ignore"):
        rr = values[_FIRST_RELEVANT]
        values["first_relevant_rank"] = np.where(rr > 0, np.round(1 / rr), np.nan)
    scores = pd.DataFrame({n: values[n] for n in columns if n in values}, index=table.index)
    return pd.concat([table, scores], axis=1)[columns]


def query_features(tasks: Sequence[TaskData], image_problem: ImageProblem | None) -> pd.DataFrame:
    """One row per query of the tasks: its images, length and judgments (no run involved)."""
    rows = []
    for data in tasks:
        for query in data.queries:
            labels = data.qrels.get(query.query_id, {}).values()
            decodable: Any = pd.NA
            if image_problem is not None:
                decodable = sum(image_problem(data.domain, i.path) is None for i in query.images)
            rows.append(
                (data.task, data.domain, query.query_id, len(query.images), decodable,
                 len(query.text), len(labels), sum(label >= 1 for label in labels))
            )  # fmt: skip
    frame = pd.DataFrame(rows, columns=["task", "domain", "query_id", *FEATURES])
    return frame.astype({"n_decodable_images": "Int64"})


def _score(
    data: TaskData, run: RunLike, names: list[str], missing: Missing
) -> dict[str, np.ndarray]:
    """Score one domain's run the benchmark's way: each measure and ``covered``, per query.

    The arrays follow the order of ``data.queries``.
    """
    prepared: Any
    if isinstance(run, Mapping):
        prepared = apply_protocol(run, data.excluded)
        covered = set(prepared)
    else:  # scored on its columns, as evaluate scores a table
        prepared = apply_protocol_columns(run_columns(run, "run", "scorer"), data.excluded)
        covered = set(prepared.query_ids)
    result = evaluate(data.qrels, prepared, measures=names, missing=missing)
    ids = [q.query_id for q in data.queries]
    out = {
        name: np.array([result.per_query[name].get(q, np.nan) for q in ids], dtype=np.float64)
        for name in names
    }
    out["covered"] = np.array([q in covered for q in ids], dtype=bool)
    return out


def _empty_scores(measures: list[str]) -> pd.DataFrame:
    columns = ["task", "domain", "query_id", *measures, "first_relevant_rank", "covered", "run"]
    return pd.DataFrame(columns=columns)


def query_image_features(
    view: TaskView,
    domains: Sequence[str],
    *,
    ocr_cache: Path | None = None,
    ocr_words: OcrWords | None = None,
) -> pd.DataFrame:
    """What each query's first image is: its size from the file header, and its OCR words.

    Only the image header is read for the size (no pixels are decoded). The words are those
    read from the query's first decodable image (the ``first`` policy): first as a run
    recorded them (``ocr_words``, checked against the image's bytes), else as the ``ocr-*``
    retrievers cached them. OCR is never run here, so a query whose image has neither gets
    NaN (the ``not read`` slice). Without an ``ocr_cache`` no image is decoded at all.

    Args:
        view: The dataset copy, the task whose queries are described and its protocol.
        domains: The domains to describe.
        ocr_cache: The cache root of the OCR retrievers (``retrieval.cache.default_cache_dir``).
        ocr_words: The words OCR runs recorded with their outputs.

    Returns:
        One row per query: ``domain``, ``query_id``, ``ocr_words``, ``image_width``,
        ``image_height`` (NaN where there is no image, or its header cannot be read).
    """
    reader = None if ocr_cache is None else _cached_ocr(ocr_cache)
    source = view.source
    rows = []
    for domain in domains:
        for query in view.judgments(source.check_domain(domain)).queries:
            width = height = words = math.nan
            if query.images:
                width, height = _header_size(source.query_image_bytes(domain, query.images[0].path))
                words = _recorded_words(ocr_words, source, query)
                if math.isnan(words) and reader is not None:
                    words = _cached_words(reader, source, query)
            rows.append((domain, query.query_id, words, width, height))
    columns = ["domain", "query_id", "ocr_words", "image_width", "image_height"]
    return pd.DataFrame(rows, columns=columns)


def _header_size(data: bytes | None) -> tuple[float, float]:
    from PIL import Image, UnidentifiedImageError

    if not data:
        return math.nan, math.nan
    try:
        with Image.open(io.BytesIO(data)) as image:  # reads the header, not the pixels
            width, height = image.size
    except (UnidentifiedImageError, OSError, ValueError):
        return math.nan, math.nan
    return (float(width), float(height)) if width and height else (math.nan, math.nan)


def _cached_ocr(cache_root: Path) -> Any:
    from mmbright_core.retrieval.backends.ocr_reader import OcrReader

    return OcrReader(cache_root)


def _recorded_words(words: OcrWords | None, source: Source, query: Any) -> float:
    from mmbright_core.retrieval.cache.store import content_key

    read = None if words is None else words.images_read(query.domain, query.query_id)
    if not read:
        return math.nan
    first = read[0]  # the first image that decoded, whatever the run's policy
    data = source.query_image_bytes(query.domain, first.path)
    if data is None or content_key(data) != first.sha256:
        return math.nan  # the run read other bytes under that path: not these words
    return float(len(first.text.split()))


def _cached_words(reader: Any, source: Source, query: Any) -> float:
    from mmbright_core.data.images import query_images
    from mmbright_core.retrieval.cache.store import content_key

    images = query_images(source, query, "first")
    if not images.images:
        return math.nan
    path = next(ref.path for ref in query.images if ref.path not in images.problems)
    data = source.query_image_bytes(query.domain, path) or b""
    text = reader.cached(content_key(data))  # never runs OCR: a query not read yet is "not read"
    return math.nan if text is None else float(len(text.split()))
