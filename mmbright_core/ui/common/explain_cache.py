"""Cached explanations of one query's scores in a run, for the inspector.

The retriever a run's ``config.json`` rebuilds is kept as a shared resource, and each
query's attributions and image words are computed once per run and query. Every cache is
keyed by the query (a :class:`~mmbright_core.data.view.QueryRef`: its task view, domain and
id) and the run's name and fingerprint, so opening another query computes only that query;
the run itself goes under an ``_``-prefixed argument that the cache does not hash.

A run folder never chooses code to run. A run made by a ``MODULE:FACTORY`` plugin is rebuilt
by importing that module: a shared server (``MMBRIGHT_DATA_ROOT`` set) never does, and a
dashboard run locally does only once the user has allowed that very call in this session,
the factory and the arguments the run recorded (:func:`pending_import`, :func:`allow_import`):
the same module called with other arguments asks again. Built-in retrievers and installed
entry-point plugins need no consent (docs/safety.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from mmbright_core.analysis.attribution import (
    Attribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.data.view import QueryRef, TaskView
from mmbright_core.errors import MissingDependencyError
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.retrieval.backends.ocr import OcrAugmented
from mmbright_core.retrieval.base import Retriever, RunConfig
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.retrieval.runner.rebuild import ImportNotAllowed, plugin_module
from mmbright_core.types import TaskData
from mmbright_core.ui.common.confine import data_root
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.loaders import VIEWS
from mmbright_core.ui.common.state import RunEntry

#: Session state: the plugin calls (``MODULE:FACTORY(arguments)``) the user allowed to run.
ALLOWED_KEY = "explain_allowed_modules"


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=VIEWS)
def task_data(view: TaskView, domain: str) -> TaskData:
    """The task's data for one domain, corpus included (what an explanation scores against)."""
    return view.data(domain)


@st.cache_resource(max_entries=8, show_spinner="Rebuilding the run's retriever…")
def retriever_for(
    config: RunConfig,
    key: str = "",
    _words: OcrWords | None = None,
    _rewrites: Mapping[tuple[str, str], Rewrite] | None = None,
    modules: tuple[str, ...] = (),
) -> Retriever | Unavailable:
    """The retriever a run's configuration rebuilds, or why not.

    ``key`` names the run's content (its fingerprint) when its recorded OCR words
    (``_words``) or rewritten queries (``_rewrites``) are handed over, which the cache does
    not hash; ``modules`` are the plugin specs the rebuild may import.
    """
    return retriever_from_config(
        config, ocr_words=_words, rewrites=_rewrites, import_modules=modules
    )


def pending_import(entry: RunEntry) -> str | None:
    """The plugin call a locally run dashboard must be allowed to run to explain ``entry``.

    None when the run needs no import, when that call was allowed already, or on a shared
    server, which never imports one (:func:`entry_retriever` says so instead).
    """
    call = plugin_call(entry)
    if call is None or data_root() is not None or _allowed(call):
        return None
    return call


def plugin_call(entry: RunEntry) -> str | None:
    """The call rebuilding ``entry`` makes: ``MODULE:FACTORY(name=value, ...)``, or None.

    Its arguments are the ``plugin_options`` the run recorded, which the rebuild passes to the
    factory again (docs/plugins.md); None: the run imports nothing.
    """
    spec = _plugin_spec(entry)
    if spec is None or entry.config is None:
        return None
    given = dict(entry.config.options).get("plugin_options") or {}
    if not isinstance(given, Mapping):
        return f"{spec}(**{given!r})"
    return f"{spec}({', '.join(f'{name}={value!r}' for name, value in given.items())})"


def ask_import(call: str, name: str, key: str) -> None:
    """Warn that explaining run ``name`` makes plugin ``call``; a button allows that call."""
    module = call.partition(":")[0]
    st.warning(
        f"Run {literal(name)} was made by a plugin: explaining its scores calls "
        f"{literal(call)}, which imports the module {literal(module)} and runs its code. "
        "Allow it only if you trust the folder the run came from.",
        icon=":material/gpp_maybe:",
    )
    st.button(f"Call {literal(call)} and explain", key=key, on_click=allow_import, args=(call,))


def allow_import(call: str) -> None:
    """Let this session's explanations make plugin ``call`` (its module, its arguments)."""
    st.session_state[ALLOWED_KEY] = {*st.session_state.get(ALLOWED_KEY, ()), call}


def _allowed(call: str) -> bool:
    return call in st.session_state.get(ALLOWED_KEY, ())


def _plugin_spec(entry: RunEntry) -> str | None:
    # A folder's configuration was read and checked when it was loaded (ui/common/workspace.py).
    return None if entry.config is None else plugin_module(entry.config)


def entry_retriever(entry: RunEntry) -> Retriever | Unavailable:
    """The retriever that made a run, or :class:`Unavailable` saying what is missing."""
    config = entry.config
    if config is None:
        return Unavailable(
            "attribution needs the retriever that made the run: load the run from its "
            "outputs folder (with its config.json), not as a run file"
        )
    spec = _plugin_spec(entry)
    if spec is not None and data_root() is not None:
        return Unavailable(
            f"{ImportNotAllowed(spec)}; this shared server never imports a module a run "
            "folder names (built-in retrievers and installed plugins only): open the run in "
            "a dashboard on your own machine to explain it"
        )
    call = plugin_call(entry)
    if spec is not None and call is not None and not _allowed(call):
        return Unavailable(f"{ImportNotAllowed(spec)}: allow it above to explain this run")
    words = entry.ocr_words
    key = "" if words is None and not entry.rewrites else entry.fingerprint
    modules = () if spec is None else (spec,)
    return retriever_for(config, key, words, entry.rewrites or None, modules)


def explanations(ref: QueryRef, entry: RunEntry, doc_ids: Sequence[str]) -> dict[str, Attribution]:
    """Each shown document's attribution in one run for one query, computed once and cached.

    Keyed by the run's fingerprint and the query: opening another query computes only that
    query's top documents.
    """
    return _explanations(ref, entry.name, entry.fingerprint, tuple(doc_ids), _consent(entry), entry)


def _consent(entry: RunEntry) -> bool:
    """Whether the plugin call the run needs is allowed.

    Part of each cache key, so that allowing it computes what was refused before.
    """
    call = plugin_call(entry)
    return call is not None and _allowed(call)


@st.cache_resource(max_entries=64, show_spinner="Explaining the scores…", hash_funcs=VIEWS)
def _explanations(
    ref: QueryRef,
    name: str,
    fingerprint: str,
    doc_ids: tuple[str, ...],
    allowed: bool,
    _entry: RunEntry,
) -> dict[str, Attribution]:
    retriever = entry_retriever(_entry)
    if isinstance(retriever, Unavailable):
        return dict.fromkeys(doc_ids, retriever)
    data = task_data(ref.view, ref.domain)
    return explain(retriever, data, ref.view.source, ref.query_id, list(doc_ids))


def image_words(ref: QueryRef, entry: RunEntry) -> dict[str, str] | None:
    """Query image path -> the words an OCR run read from it (None for a run without OCR).

    The words the run recorded come first (those of an image whose bytes still match);
    a run that recorded none has its images read again, where its retriever rebuilds.
    With the ``concat`` policy the words are read from the images joined into one: they are
    filed under the first image.
    """
    domain = ref.domain
    recorded = entry.ocr_words.images_read(domain, ref.query_id) if entry.ocr_words else None
    if recorded is not None:
        source = ref.view.source
        return {
            read.path: read.text
            for read in recorded
            if content_key(source.query_image_bytes(domain, read.path) or b"") == read.sha256
        }
    retriever = entry_retriever(entry)
    if not isinstance(retriever, OcrAugmented):
        return None
    return _image_words(ref, entry.name, entry.fingerprint, _consent(entry), entry)


@st.cache_resource(max_entries=64, show_spinner="Reading the query images…", hash_funcs=VIEWS)
def _image_words(
    ref: QueryRef, name: str, fingerprint: str, allowed: bool, _entry: RunEntry
) -> dict[str, str]:
    retriever = entry_retriever(_entry)
    query = ref.query
    if not isinstance(retriever, OcrAugmented):
        return {}
    try:
        read = retriever.read_images(query, ref.view.source)
    except MissingDependencyError:
        return {}  # the hits' explanations say which extra to install
    return {image.path: image.text for image in read}
