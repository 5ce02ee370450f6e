"""Cached explanations of one query's scores in a run, for the inspector.

The retriever a run's ``config.json`` rebuilds is kept as a shared resource, and each
query's attributions and image words are computed once per run and query. Every cache is
keyed by one :data:`QueryKey` (the source, task, domain, protocol, the run's name and
fingerprint, and the query), so opening another query computes only that query; the run
itself goes under an ``_``-prefixed argument that the cache does not hash.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import streamlit as st

from mmbright_core.analysis.attribution import (
    Attribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.errors import MissingDependencyError
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.cache import content_key
from mmbright_core.retrieval.ocr import OcrAugmented
from mmbright_core.types import Task, TaskData
from mmbright_core.ui.loaders import get_source, queries
from mmbright_core.ui.state import RunEntry

QueryKey = tuple[str, Task, str, str, str, str, str]
"""What a query's cached results are keyed by: (source spec, task, domain, protocol, run
name, run fingerprint, query id)."""


def query_key(
    spec: str, task: Task, domain: str, protocol: str, entry: RunEntry, query_id: str
) -> QueryKey:
    """The key of one query of one run, for the caches below."""
    return (spec, task, domain, protocol, entry.name, entry.fingerprint, query_id)


@st.cache_resource(max_entries=16, show_spinner=False)
def task_data(spec: str, task: Task, domain: str, protocol: str) -> TaskData:
    """The task's data for one domain, corpus included (what an explanation scores against)."""
    return get_source(spec).task(task, domain, protocol)


@st.cache_resource(max_entries=8, show_spinner="Rebuilding the run's retriever…")
def retriever_for(
    config_text: str,
    key: str = "",
    _words: OcrWords | None = None,
    _rewrites: Mapping[tuple[str, str], Rewrite] | None = None,
) -> Retriever | Unavailable:
    """The retriever a run's configuration (its ``config.json``, as text) rebuilds, or why not.

    ``key`` names the run's content (its fingerprint) when its recorded OCR words
    (``_words``) or rewritten queries (``_rewrites``) are handed over, which the cache does
    not hash.
    """
    return retriever_from_config(json.loads(config_text), ocr_words=_words, rewrites=_rewrites)


def entry_retriever(entry: RunEntry) -> Retriever | Unavailable:
    """The retriever that made a run, or :class:`Unavailable` saying what is missing."""
    config = entry.config
    if config is None:
        return Unavailable(
            "attribution needs the retriever that made the run: load the run from its "
            "outputs folder (with its config.json), not as a run file"
        )
    words = entry.ocr_words
    key = "" if words is None and not entry.rewrites else entry.fingerprint
    return retriever_for(json.dumps(config, sort_keys=True), key, words, entry.rewrites or None)


def explanations(
    spec: str,
    task: Task,
    domain: str,
    protocol: str,
    entry: RunEntry,
    query_id: str,
    doc_ids: Sequence[str],
) -> dict[str, Attribution]:
    """Each shown document's attribution in one run for one query, computed once and cached.

    Keyed by the run's fingerprint and the query: opening another query computes only that
    query's top documents.
    """
    key = query_key(spec, task, domain, protocol, entry, query_id)
    return _explanations(key, tuple(doc_ids), entry)


@st.cache_resource(max_entries=64, show_spinner="Explaining the scores…")
def _explanations(
    key: QueryKey, doc_ids: tuple[str, ...], _entry: RunEntry
) -> dict[str, Attribution]:
    retriever = entry_retriever(_entry)
    if isinstance(retriever, Unavailable):
        return dict.fromkeys(doc_ids, retriever)
    spec, task, domain, protocol, *_, query_id = key
    data = task_data(spec, task, domain, protocol)
    return explain(retriever, data, get_source(spec), query_id, list(doc_ids))


def image_words(
    spec: str, task: Task, domain: str, protocol: str, entry: RunEntry, query_id: str
) -> dict[str, str] | None:
    """Query image path -> the words an OCR run read from it (None for a run without OCR).

    The words the run recorded come first (those of an image whose bytes still match);
    a run that recorded none has its images read again, where its retriever rebuilds.
    With the ``concat`` policy the words are read from the images joined into one: they are
    filed under the first image.
    """
    recorded = entry.ocr_words.images_read(domain, query_id) if entry.ocr_words else None
    if recorded is not None:
        source = get_source(spec)
        return {
            read.path: read.text
            for read in recorded
            if content_key(source.query_image_bytes(domain, read.path) or b"") == read.sha256
        }
    retriever = entry_retriever(entry)
    if not isinstance(retriever, OcrAugmented):
        return None
    return _image_words(query_key(spec, task, domain, protocol, entry, query_id), entry)


@st.cache_resource(max_entries=64, show_spinner="Reading the query images…")
def _image_words(key: QueryKey, _entry: RunEntry) -> dict[str, str]:
    retriever = entry_retriever(_entry)
    spec, task, domain, protocol, *_, query_id = key
    query = queries(spec, task, domain, protocol)[query_id]
    if not isinstance(retriever, OcrAugmented):
        return {}
    try:
        read = retriever.read_images(query, get_source(spec))
    except MissingDependencyError:
        return {}  # the hits' explanations say which extra to install
    return {image.path: image.text for image in read}
