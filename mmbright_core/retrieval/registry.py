"""The registry of retrievers by name: built-ins, registered factories and plugins.

:func:`get_retriever` builds a retriever from its name and keyword options;
:func:`register_retriever` adds a factory (and its rebuild recipe) under a name;
``MODULE:FACTORY`` specs and installed ``mmbright.retrievers`` entry points are found through
:mod:`~mmbright_core.retrieval.plugins`. A built-in's module is imported on first use only, so
a backend's heavy dependencies load only when that backend is asked for.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import Retriever

if TYPE_CHECKING:
    from mmbright_core.retrieval.rebuild import Rebuild

# name -> (module, factory attribute, rebuild recipe attribute or None). Modules are imported
# on first use only, so a backend's heavy dependencies load only when that backend is asked for.
# The recipe sits beside the factory in the backend's module (retrieval/rebuild.py).
_BUILTIN: dict[str, tuple[str, str, str | None]] = {
    "bm25": ("mmbright_core.retrieval.bm25", "BM25Retriever", "rebuild"),
    "dense": ("mmbright_core.retrieval.dense", "DenseRetriever", "rebuild"),
    "clip": ("mmbright_core.retrieval.clip", "ClipRetriever", "rebuild"),
    "hf": ("mmbright_core.retrieval.hf", "hf_retriever", "rebuild"),
    "mteb": ("mmbright_core.retrieval.mteb_models", "mteb_retriever", None),
    "ocr-bm25": ("mmbright_core.retrieval.ocr", "ocr_bm25", "rebuild_ocr_bm25"),
    "ocr-dense": ("mmbright_core.retrieval.ocr", "ocr_dense", "rebuild_ocr_dense"),
    "random": ("mmbright_core.retrieval.random_rank", "RandomRetriever", "rebuild"),
    "api": ("mmbright_core.retrieval.api", "ApiRetriever", None),
    "remote": ("mmbright_core.retrieval.remote", "remote_retriever", None),
    "gritlm": ("mmbright_core.retrieval.gritlm_model", "gritlm_retriever", None),
}
#: Built-in retrievers without a rebuild recipe, and why: their runs are explained only by
#: passing the retriever itself.
NOT_REBUILDABLE: dict[str, str] = {
    "mteb": "its model loads through MTEB's registry; its settings map back to no options",
    "api": "its vectors come from a remote endpoint, with a key and request budget of its own",
    "remote": "its models run their own hub code, which is not run again to explain a run",
    "gritlm": "gritlm loads its model with the hub's code, which is not run again to explain",
}
_EXTRA: dict[str, Callable[..., Retriever]] = {}
_EXTRA_REBUILD: dict[str, Rebuild] = {}


def register_retriever(
    name: str, factory: Callable[..., Retriever], rebuild: Rebuild | None = None
) -> None:
    """Register a retriever factory under ``name`` (replacing a previous one of that name).

    Args:
        name: The name ``get_retriever`` will answer to.
        factory: A callable taking keyword options and returning a :class:`Retriever`.
        rebuild: Its recipe to rebuild a run's retriever from ``config.json``
            (:data:`~mmbright_core.retrieval.rebuild.Rebuild`); None: its runs cannot be.
    """
    _EXTRA[name] = factory
    _EXTRA_REBUILD.pop(name, None)
    if rebuild is not None:
        _EXTRA_REBUILD[name] = rebuild


def rebuild_recipe(name: str) -> Rebuild | None:
    """Return the recipe that rebuilds retriever ``name`` from a run's configuration, or None.

    A plugin's (a ``MODULE:FACTORY`` spec or an installed name) calls its factory again with
    the recorded ``plugin_options``; its module is imported only when the recipe's options
    are built into a retriever.
    """
    if name in _EXTRA:
        return _EXTRA_REBUILD.get(name)
    if name in _BUILTIN:
        module, _, attribute = _BUILTIN[name]
        if attribute is None:
            return None
        recipe: Rebuild = getattr(importlib.import_module(module), attribute)
        return recipe
    from mmbright_core.retrieval.plugins import entry_points, is_spec, rebuild_plugin

    return rebuild_plugin if is_spec(name) or name in entry_points() else None


def available_retrievers() -> tuple[str, ...]:
    """Return every registered retriever name, installed plugins included, sorted."""
    from mmbright_core.retrieval.plugins import entry_points

    return tuple(sorted({*_BUILTIN, *_EXTRA, *entry_points()}))


def declared_tasks(name: str) -> frozenset[int] | None:
    """Return the tasks retriever ``name`` runs, known before it is built, or None.

    A retriever class declares its ``tasks`` on itself (``bm25``, ``clip``), or a factory
    names such a class as its return type (``ocr-bm25``). None where the tasks depend on
    the model the factory loads (``hf``, ``mteb``: tasks 1-2 for a text model, 1-4 with
    images) or a plugin declares none: building it says.

    Raises:
        UnknownNameError: ``name`` is not registered.
    """
    factory = _factory(name)
    made = factory if isinstance(factory, type) else _returned_class(factory)
    tasks = getattr(made, "tasks", None)
    return tasks if isinstance(tasks, frozenset) else None


def _returned_class(factory: Callable[..., Retriever]) -> type | None:
    try:
        made = typing.get_type_hints(factory).get("return")
    except (NameError, TypeError):  # a plugin's annotation that names what is not imported
        return None
    return made if isinstance(made, type) else None


def _factory(name: str) -> Callable[..., Retriever]:
    if name in _EXTRA:
        return _EXTRA[name]
    if name not in _BUILTIN:
        from mmbright_core.retrieval.plugins import plugin_factory

        plugin = plugin_factory(name)  # MODULE:FACTORY, or an installed entry point
        if plugin is None:
            raise UnknownNameError("retriever", name, available_retrievers())
        return plugin
    module, attribute, _ = _BUILTIN[name]
    factory: Callable[..., Retriever] = getattr(importlib.import_module(module), attribute)
    return factory


def get_retriever(name: str, **options: Any) -> Retriever:
    """Build the retriever registered as ``name`` with the given options.

    Args:
        name: A registered name (see :func:`available_retrievers`), an installed plugin's
            name, or ``MODULE:FACTORY`` (:mod:`~mmbright_core.retrieval.plugins`).
        **options: Backend options (``model``, ``pretrained``, ``k1``...); None values are
            dropped so that unset command-line flags keep the backend's defaults.

    Returns:
        The retriever.

    Raises:
        UnknownNameError: ``name`` is not registered (with close matches).
        InputError: An option the backend does not accept.
        MissingDependencyError: The backend's optional packages are not installed.
    """
    factory = _factory(name)
    given = {key: value for key, value in options.items() if value is not None}
    accepted = _accepted_options(factory)
    unknown = sorted(set(given) - accepted) if accepted is not None else []
    if unknown:
        raise InputError(
            f"retriever {name!r} does not take option(s) {', '.join(unknown)}",
            expected=f"some of: {', '.join(sorted(accepted or ()))}",
            found=", ".join(f"{key}={given[key]!r}" for key in unknown),
        )
    return factory(**given)


def _accepted_options(factory: Callable[..., Retriever]) -> set[str] | None:
    # None means "anything goes" (a factory that takes **kwargs validates by itself).
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
