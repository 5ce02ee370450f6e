"""Retrievers from outside the package: ``MODULE:FACTORY`` specs and installed entry points.

``mmbright run --retriever mypkg.models:make`` imports ``mypkg.models`` (from ``sys.path``
or the current folder) and calls ``make(**options)`` with the ``--option`` values. The
factory returns a :class:`~mmbright_core.retrieval.base.Retriever`, or an
:class:`~mmbright_core.retrieval.dual.embedder.Embedder` which the package runs as a
:class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever` (fusion, cache, exclusions,
cut, Ray and attribution included). Installed packages register names in the entry-point
group ``mmbright.retrievers`` (``name = "pkg.module:factory"``).

A plugin's run records the spec as its ``retriever`` and the factory's options as
``plugin_options`` (``config.json``), so the run can be rebuilt by importing the factory
again with the same options (docs/plugins.md).

A plugin's code runs inside :func:`plugin_code` (its import, its factory, its ranking and
the encoding of its Embedder, a reranker plugin's factory and answers): a ``SystemExit`` it
raises (``sys.exit()``, ``exit()``) would end the command with exit status 0 and nothing
written, and becomes one :class:`~mmbright_core.errors.InputError` line naming the plugin.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mmbright_core.errors import InputError, cut
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.dual.embedder import Embedder

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RebuildContext, RunConfig

#: The entry-point group installed packages register retriever names in.
ENTRY_POINT_GROUP = "mmbright.retrievers"
#: Options the wrapper of an Embedder takes (when the factory does not take them itself).
WRAPPER_OPTIONS = ("image_policy", "no_image", "cache_dir", "index", "cache_dtype", "batch_size")
# What no ranking holds: the sentinel of a plugin answer found well formed.
_NO_ANSWER = object()
# Options that change where or how fast vectors are made, never which: not recorded.
_UNRECORDED = frozenset({"cache_dir", "device"})


def is_spec(name: str) -> bool:
    """Return whether ``name`` is a ``MODULE:FACTORY`` spec rather than a registered name."""
    return ":" in name


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """Return the installed plugins: name -> entry point of group ``mmbright.retrievers``."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


@contextmanager
def plugin_code(name: str, doing: str) -> Iterator[None]:
    """Run a plugin's own code, ``doing`` something: a ``SystemExit`` it raises is one line.

    Raises:
        InputError: The plugin raised ``SystemExit`` (``sys.exit()``, ``exit()``), naming
            the plugin, what it was doing and the exit code.
    """
    try:
        yield
    except SystemExit as err:
        raise InputError(
            f"the plugin {name!r} tried to end the program while {doing}",
            expected="an answer, or an exception saying what is wrong",
            found=f"SystemExit({err.code!r})",
            hint="A plugin must not call sys.exit() or exit(): raise an exception instead "
            "(docs/plugins.md).",
        ) from err


def import_factory(spec: str) -> Callable[..., Any]:
    """Import the factory a ``MODULE:FACTORY`` spec names.

    Raises:
        InputError: A malformed spec, a module that cannot be found, an attribute it lacks
            or one that is not callable (each said in one line, with the fix).
    """
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InputError(
            "malformed plugin spec", expected="MODULE:FACTORY (mypkg.models:make)", found=spec
        )
    here = os.getcwd()
    if here not in sys.path:  # the console script does not put the current folder there
        sys.path.append(here)
    try:
        with plugin_code(spec, "being imported"):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or not module_name.startswith(err.name):
            raise  # the plugin imports something missing: its own error says what
        raise InputError(
            f"cannot import plugin module {module_name!r}",
            found=f"no module named {err.name!r} on sys.path or in {here}",
            hint="Run from the folder holding it, add it to PYTHONPATH, or pip install it.",
        ) from err
    factory = getattr(module, attribute, None)
    if factory is None or not callable(factory):
        public = sorted(n for n, v in vars(module).items() if callable(v) and n[0] != "_")
        raise InputError(
            f"plugin module {module_name!r} has no callable {attribute!r}",
            expected=f"one of: {', '.join(public) or 'none defined'}",
            found=attribute if factory is None else f"{attribute} = {factory!r}",
        )
    return factory


def rebuild_plugin(
    config: RunConfig, options: dict[str, Any], context: RebuildContext
) -> dict[str, Any]:
    """Return the options that rebuild a plugin's run: those its factory was given.

    A plugin's run records them as ``plugin_options`` (its factory's and the wrapper's), so
    calling the factory again with them rebuilds the retriever (docs/plugins.md).
    """
    return {**options["plugin_options"], "cache_dir": context.cache_dir}


def plugin_factory(name: str) -> Callable[..., Retriever] | None:
    """Return the factory of a spec or of an installed plugin name (None: neither)."""
    if is_spec(name):
        return PluginFactory(name, import_factory(name))
    found = entry_points().get(name)
    if found is None:
        return None
    with plugin_code(name, "being imported"):
        return PluginFactory(name, found.load())


class PluginFactory:
    """Builds a plugin's retriever from options: the factory's, and the wrapper's.

    Args:
        name: The spec or entry-point name the retriever answers to.
        factory: The plugin's callable.
    """

    def __init__(self, name: str, factory: Callable[..., Any]) -> None:
        self.name, self.factory = name, factory

    def __call__(self, **options: Any) -> Retriever:
        """Call the factory with its options; wrap an Embedder with the wrapper's options.

        Raises:
            InputError: Options neither the factory nor the wrapper takes, or a factory
                returning something that is neither a Retriever nor an Embedder.
        """
        accepted = _accepted(self.factory)
        mine = {k: v for k, v in options.items() if accepted is None or k in accepted}
        rest = {k: v for k, v in options.items() if k not in mine}
        with plugin_code(self.name, "making its retriever"):
            made = self.factory(**mine)
        recorded = {k: v for k, v in mine.items() if k not in _UNRECORDED}
        if isinstance(made, Embedder):
            from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever

            self._check(rest, WRAPPER_OPTIONS, accepted)
            inner: Retriever = DualEncoderRetriever(made, name=self.name, **rest)
            wrapped = {k: v for k, v in rest.items() if k not in _UNRECORDED}
            return PluginRetriever(self.name, inner, recorded, wrapped)
        if isinstance(made, Retriever):
            self._check(rest, (), accepted)
            return PluginRetriever(self.name, made, recorded, {})
        raise InputError(
            f"plugin factory {self.name!r} returned {type(made).__name__}: {made!r:.80}",
            expected="a Retriever (name, tasks, label, settings, retrieve) or an Embedder "
            "(name, modalities, fusion, settings, encode_texts, encode_images)",
            found=type(made).__name__,
        )

    def _check(
        self, rest: Mapping[str, Any], wrapper: tuple[str, ...], accepted: set[str] | None
    ) -> None:
        unknown = sorted(set(rest) - set(wrapper))
        if unknown:
            takes = sorted({*(accepted or ()), *wrapper})
            raise InputError(
                f"plugin {self.name!r} does not take option(s) {', '.join(unknown)}",
                expected=f"some of: {', '.join(takes)}",
                found=", ".join(f"{key}={rest[key]!r}" for key in unknown),
            )


def _accepted(factory: Callable[..., Any]) -> set[str] | None:
    params = inspect.signature(factory).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL}


class PluginRetriever:
    """A plugin's retriever, answering to its spec and recording the options it was built with.

    Everything else (``corpus_jobs`` and ``batch_encoder`` for Ray, ``explain_scores``) is
    the plugin's own, reached through the wrapped retriever.

    Args:
        name: The spec or entry-point name.
        inner: The retriever the factory made (or the dual encoder of its Embedder).
        options: The factory's options, recorded as ``plugin_options``.
        wrapper: The dual encoder's options given on the command line (recorded by its
            settings already; kept to rebuild with them).
    """

    def __init__(
        self,
        name: str,
        inner: Retriever,
        options: Mapping[str, Any],
        wrapper: Mapping[str, Any],
    ) -> None:
        self.name, self.inner, self.tasks = name, inner, inner.tasks
        self.options, self.wrapper = dict(options), dict(wrapper)

    def label(self) -> str:
        """Return the plugin's label."""
        return self.inner.label()

    def settings(self) -> dict[str, Any]:
        """Return the plugin's settings and the options its factory and wrapper were given."""
        return {
            **self.inner.settings(),
            "plugin_options": dict(sorted({**self.options, **self.wrapper}.items())),
        }

    def retrieve(self, data: Any, source: Any, k: int) -> dict[str, dict[str, float]]:
        """Rank with the plugin's retriever (its Embedder encoding, if it made one)."""
        with plugin_code(self.name, f"ranking {data.domain!r}"):
            found = self.inner.retrieve(data, source, k)
        answers = found.values() if isinstance(found, Mapping) else [found]
        wrong = next((v for v in answers if not isinstance(v, Mapping)), _NO_ANSWER)
        if wrong is not _NO_ANSWER:
            kind = "None" if wrong is None else f"a {type(wrong).__name__}"
            raise InputError(
                f"the plugin {self.name!r} answered {kind} from retrieve"
                + ("" if wrong is found else " for a query"),
                expected="a dict of query id -> {doc id: score} (docs/plugins.md)",
                found=cut(repr(wrong), 80),
                hint="Return the ranking of every query it ranks as a dict of dicts.",
            )
        return dict(found)

    def __getattr__(self, attribute: str) -> Any:
        # Optional capabilities (Ray's corpus_jobs/batch_encoder, explain_scores) are the
        # plugin's: present here exactly when the wrapped retriever has them.
        if attribute.startswith("__") or attribute == "inner":
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)
