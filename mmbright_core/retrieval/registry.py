"""The registry of retrievers by name: built-ins, registered factories and plugins.

:func:`get_retriever` builds a retriever from its name and keyword options;
:func:`register_retriever` adds a factory (and its rebuild recipe) under a name;
``MODULE:FACTORY`` specs and installed ``mmbright.retrievers`` entry points are found through
:mod:`~mmbright_core.retrieval.plugins`. The built-ins are the records of
:mod:`~mmbright_core.retrieval.backend_table`; a built-in's module is imported on first use
only, so a backend's heavy dependencies load only when that backend is asked for.
"""

from __future__ import annotations

import importlib
import inspect
import math
import typing
from collections.abc import Callable
from typing import Any

from mmbright_core.errors import InputError, UnknownNameError, cut
from mmbright_core.retrieval.backend_table import BACKENDS, canonical_name
from mmbright_core.retrieval.base import Rebuild, Retriever

#: Built-in retrievers without a rebuild recipe, and why: their runs are explained only by
#: passing the retriever itself.
NOT_REBUILDABLE: dict[str, str] = {
    name: backend.not_rebuildable
    for name, backend in BACKENDS.items()
    if backend.not_rebuildable is not None
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
            (:data:`~mmbright_core.retrieval.base.Rebuild`); None: its runs cannot be.
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
    name = canonical_name(name)
    if name in BACKENDS:
        backend = BACKENDS[name]
        if backend.rebuild is None:
            return None
        recipe: Rebuild = getattr(importlib.import_module(backend.module), backend.rebuild)
        return recipe
    from mmbright_core.retrieval.plugins import entry_points, is_spec, rebuild_plugin

    return rebuild_plugin if is_spec(name) or name in entry_points() else None


def available_retrievers() -> tuple[str, ...]:
    """Return every registered retriever name, installed plugins included, sorted."""
    from mmbright_core.retrieval.plugins import entry_points

    return tuple(sorted({*BACKENDS, *_EXTRA, *entry_points()}))


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
    name = canonical_name(name)
    if name not in BACKENDS:
        from mmbright_core.retrieval.plugins import plugin_factory

        plugin = plugin_factory(name)  # MODULE:FACTORY, or an installed entry point
        if plugin is None:
            raise UnknownNameError("retriever", name, available_retrievers())
        return plugin
    backend = BACKENDS[name]
    factory: Callable[..., Retriever] = getattr(
        importlib.import_module(backend.module), backend.factory
    )
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
    if name in BACKENDS:  # a plugin's factory checks its own options
        _check_numbers(factory, given)
    return factory(**given)


def _check_numbers(factory: Callable[..., Retriever], given: dict[str, Any]) -> None:
    """Refuse a value that is not the number an option of ``factory`` is declared as.

    ``--option k1=abc`` reaches a built-in backend as the text ``'abc'``: it failed inside
    the backend with a traceback, and ``k1=NaN`` was used as given. (Options declared
    ``int`` are each checked by their backend, with their least value.)

    Raises:
        InputError: A text, a boolean, NaN or an infinity for an option declared ``float``.
    """
    for param in inspect.signature(factory).parameters.values():
        kinds = set(str(param.annotation).replace(" ", "").split("|")) - {"None"}
        if param.name not in given or kinds != {"float"}:
            continue
        value = given[param.name]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value)):
            raise InputError(
                f"option {param.name} is not valid",
                expected="a finite number",
                found=cut(repr(value), 60),
            )


def takes_option(name: str, option: str) -> bool:
    """Whether retriever ``name``'s factory names ``option`` among its parameters.

    False for a factory that takes any keyword (``**kwargs``): it checks its options itself.

    Raises:
        UnknownNameError: ``name`` is not registered.
    """
    accepted = _accepted_options(_factory(name))
    return accepted is not None and option in accepted


def _accepted_options(factory: Callable[..., Retriever]) -> set[str] | None:
    # None means "anything goes" (a factory that takes **kwargs validates by itself).
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}
