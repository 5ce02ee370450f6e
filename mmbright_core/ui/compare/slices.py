"""What the compare and per-query pages add to a comparison: tags, judgment gaps, slices.

Failure tags are read from the notes file on every rerun (an edit in the inspector shows at
once; reading one task's tags is one small SQLite query) and only when the file exists, so
opening a page never creates it. Judgment gaps need each query's top 10 in both runs, so
they are computed for the queries a table lists, not for every query; slices and their
bootstrap intervals only for the slice chosen. Both are cached on the runs' fingerprints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from mmbright_core.analysis.compare import Comparison
from mmbright_core.analysis.rankdiff import judgment_gap
from mmbright_core.analysis.slices import slice_effect
from mmbright_core.analysis.table import query_image_features
from mmbright_core.data.view import QueryRef, TaskView
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.ranking import top_k
from mmbright_core.retrieval.cache.store import default_cache_dir
from mmbright_core.ui.common import loaders, state
from mmbright_core.ui.common.state import Compared, RunEntry

IMAGE_SLICES = ("ocr-words", "image-size", "aspect")
"""Slices that read the query images' headers, recorded or cached OCR results."""
GAP_FILTERS = ("show all", "hide possible judgment gaps", "only judgment gaps")


def gap_flags(compared: Compared, rows: pd.DataFrame) -> list[bool]:
    """Whether each row (domain, query_id, delta) may be a judgment gap, in order.

    The definition is :func:`mmbright_core.analysis.rankdiff.judgment_gap`'s, on each
    run's top 10 after the protocol's exclusions.
    """
    keys = tuple(
        (str(d), str(q), float(x))
        for d, q, x in zip(rows["domain"], rows["query_id"], rows["delta"], strict=True)
    )
    pair = (compared.entries[compared.run_a], compared.entries[compared.run_b])
    names = tuple((e.name, e.fingerprint, e.negatives) for e in pair)
    return _gap_flags(compared.view, names, keys, pair)


@st.cache_data(max_entries=32, show_spinner=False, hash_funcs=loaders.VIEWS)
def _gap_flags(
    view: TaskView,
    names: tuple[tuple[str, str, str], ...],
    keys: tuple[tuple[str, str, float], ...],
    _pair: tuple[RunEntry, RunEntry],
) -> list[bool]:
    flags = []
    for domain, query_id, delta in keys:
        ref = view.query(domain, query_id)
        tops = [_top(ref, entry) for entry in _pair]
        flags.append(judgment_gap(ref.qrels, tops[0], tops[1], delta))
    return flags


def _top(ref: QueryRef, entry: RunEntry) -> Sequence[str]:
    scores = entry.runs.get(ref.domain, {}).get(ref.query_id, {})
    return list(top_k(scores, 10, ref.excluded(entry.negatives)))


def slice_table(
    view: TaskView,
    comparison: Comparison,
    by: str,
    tags: Mapping[tuple[str, str], Sequence[str]],
) -> pd.DataFrame:
    """The image effect per group of the slice ``by`` (bootstrap CIs for that slice only)."""
    features = None
    if by in IMAGE_SLICES:
        domains = tuple(sorted(comparison.per_query["domain"].unique()))
        entry = recorded_words_entry(comparison)
        words = None if entry is None else entry.ocr_words
        key = "" if entry is None else entry.fingerprint
        features = image_features(view, domains, key, words)
    if by != "tag":
        return _slice(comparison, by, features)
    return slice_effect(comparison, by, tags=tags)


@st.cache_data(max_entries=32, show_spinner="Slicing…")
def _slice(comparison: Comparison, by: str, features: pd.DataFrame | None) -> pd.DataFrame:
    return slice_effect(comparison, by, features=features)


def recorded_words_entry(comparison: Comparison) -> RunEntry | None:
    """The compared run whose recorded OCR words the slices read: B's, else A's, else none."""
    entries = state.task_runs()
    for name in (comparison.run_b, comparison.run_a):
        entry = entries.get(name)
        if entry is not None and entry.ocr_words is not None:
            return entry
    return None


@st.cache_data(
    max_entries=8, show_spinner="Reading the query images' headers…", hash_funcs=loaders.VIEWS
)
def image_features(
    view: TaskView,
    domains: tuple[str, ...],
    words_key: str = "",
    _words: OcrWords | None = None,
) -> pd.DataFrame:
    """Size, aspect and OCR words of each query's first image (OCR is never run).

    The words are those a run recorded (``_words``, named by ``words_key``: the run's
    fingerprint, as the cache does not hash them), else those the OCR cache holds.
    """
    return query_image_features(
        view,
        domains,
        ocr_cache=default_cache_dir(),
        ocr_words=_words,
    )
