"""Building a reranker from its spec: ``KIND:NAME`` or a researcher's ``MODULE:FACTORY``.

``cross-encoder:NAME`` (sentence-transformers), ``mteb:NAME`` (MTEB's cross-encoder
protocol) and ``llm:MODEL`` (an OpenAI-compatible chat endpoint) are the package's own,
each imported only when asked for, so a missing extra fails only the spec that needs it.
Any other ``MODULE:FACTORY`` is imported as retriever plugins are
(:func:`mmbright_core.retrieval.plugins.import_factory`) and called with the options.
"""

from __future__ import annotations

import importlib
import inspect
import numbers
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.rerank.base import (
    Asked,
    BatchReranker,
    Candidate,
    ImageStore,
    Reranked,
    Reranker,
    RerankQuery,
    answers,
)

# kind -> (module, factory attribute); the factory takes the NAME part first.
_BUILTIN: dict[str, tuple[str, str]] = {
    "cross-encoder": ("mmbright_core.rerank.cross_encoder", "CrossEncoderReranker"),
    "mteb": ("mmbright_core.rerank.mteb_reranker", "MtebReranker"),
    "llm": ("mmbright_core.rerank.llm", "llm_reranker"),
}
#: Options that change where or how fast scores are made, never which: not recorded.
UNRECORDED = frozenset({"device", "cache_dir", "batch_size"})

SPEC_FORMS = "cross-encoder:NAME, mteb:NAME, llm:MODEL or MODULE:FACTORY"


def builtin_kinds() -> tuple[str, ...]:
    """Return the package's own reranker kinds (the part before the first ``:``)."""
    return tuple(_BUILTIN)


def build(spec: str, **options: Any) -> Reranker:
    """Build the reranker ``spec`` names with ``options`` (None values dropped).

    Args:
        spec: ``cross-encoder:NAME``, ``mteb:NAME``, ``llm:MODEL`` or ``MODULE:FACTORY``.
        **options: The reranker's options (``device``, ``batch_size``, ``endpoint``...).

    Raises:
        InputError: A spec of neither form, an option the factory does not take, or a
            factory returning no reranker.
        MissingDependencyError: The reranker's optional packages are not installed.
    """
    kind, sep, name = spec.partition(":")
    if not sep or not kind or not name:
        raise InputError("malformed reranker spec", expected=SPEC_FORMS, found=repr(spec))
    given = {key: value for key, value in options.items() if value is not None}
    if kind in _BUILTIN:
        module, attribute = _BUILTIN[kind]
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except ModuleNotFoundError as err:
            if err.name != module:
                raise  # a package the reranker needs: its own error (or require's) says which
            raise InputError(
                f"this installation has no {kind}: reranker",
                expected=f"one of {', '.join(k + ':' for k in _BUILTIN if k != kind)}",
                found=spec,
            ) from err
        made: Reranker = _checked(spec, _call(spec, factory, given, name))
        return made
    from mmbright_core.retrieval.plugins import import_factory, plugin_code

    factory = import_factory(spec)
    with plugin_code(spec, "making its reranker"):
        made = _call(spec, factory, given)
    return PluginReranker(spec, _checked(spec, made), given)


def _checked(spec: str, made: Any) -> Any:
    missing = [m for m in ("label", "settings", "rerank") if not callable(getattr(made, m, None))]
    if missing:
        raise InputError(
            f"reranker factory {spec!r} returned {type(made).__name__}: {made!r:.80}",
            expected="a Reranker (label, settings, rerank)",
            found=f"{type(made).__name__} without {', '.join(missing)}",
        )
    return made


def _call(spec: str, factory: Callable[..., Any], given: dict[str, Any], *first: Any) -> Any:
    params = list(inspect.signature(factory).parameters.values())[len(first) :]
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        accepted = {p.name for p in params}
        unknown = sorted(set(given) - accepted)
        if unknown:
            raise InputError(
                f"reranker {spec!r} does not take option(s) {', '.join(unknown)}",
                expected=f"some of: {', '.join(sorted(accepted)) or 'none'}",
                found=", ".join(f"{key}={given[key]!r}" for key in unknown),
            )
    return factory(*first, **given)


class PluginReranker:
    """A researcher's reranker, answering to its spec and recording its factory's options.

    Args:
        spec: The ``MODULE:FACTORY`` it was built from.
        inner: What the factory returned.
        options: The options the factory was called with.
    """

    def __init__(self, spec: str, inner: Any, options: dict[str, Any]) -> None:
        self.name, self.inner = spec, inner
        self.options = {k: v for k, v in sorted(options.items()) if k not in UNRECORDED}

    def label(self) -> str:
        """Return the plugin's label."""
        return str(self.inner.label())

    def settings(self) -> dict[str, Any]:
        """Return the plugin's settings, its spec and the options its factory was given."""
        return {**self.inner.settings(), "plugin": self.name, "plugin_options": self.options}

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Rerank with the plugin's reranker, checking that it answers with a :class:`Reranked`.

        Raises:
            InputError: The plugin answered something else (None, a list, a text), or a
                Reranked holding what is not positions, scores or a problem's text.
        """
        from mmbright_core.retrieval.plugins import plugin_code

        with plugin_code(self.name, f"reranking query {query.query_id!r} ({query.domain})"):
            answer = self.inner.rerank(query, candidates, images)
        return self._checked(query, answer)

    def rerank_many(
        self, asked: Asked, images: ImageStore | None, known: Collection[int] = ()
    ) -> Iterator[tuple[int, Reranked]]:
        """Answer as the plugin does (many queries at once where it can), each answer checked.

        Raises:
            InputError: As :meth:`rerank`.
        """
        from mmbright_core.retrieval.plugins import plugin_code

        if not isinstance(self.inner, BatchReranker):  # one query at a time, each named
            for position, (query, candidates) in enumerate(asked):
                if position not in known:
                    yield position, self.rerank(query, candidates, images)
            return
        with plugin_code(self.name, f"reranking {len(asked)} queries"):
            for position, answer in answers(self.inner, asked, images, known):
                yield position, self._checked(asked[position][0], answer)

    def _checked(self, query: RerankQuery, answer: Any) -> Reranked:
        found = _not_an_answer(answer)
        if found is not None:
            raise InputError(
                f"the reranker plugin {self.name!r} answered query {query.query_id!r} "
                f"({query.domain}) with what is not a reranker's answer",
                expected="a Reranked (Reranked.from_order, from_scores, from_ranked or failed)",
                found=found,
                hint="Fix the plugin's rerank method (docs/plugins.md, Your own reranker)",
            )
        return answer

    def __getattr__(self, attribute: str) -> Any:
        # Optional capabilities (``tasks``) are the plugin's own.
        if attribute.startswith("__") or attribute == "inner":
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)


def _not_an_answer(answer: Any) -> str | None:
    # What checked_order cannot read (it judges the values: a permutation, finite scores).
    if not isinstance(answer, Reranked):
        return "None" if answer is None else f"a {type(answer).__name__}: {answer!r:.80}"
    fields: list[tuple[str, Any, Callable[[Any], bool]]] = [
        ("an order", answer.order, _position),
        ("scores", answer.scores, _score),
        ("ranked", answer.ranked, _ranked_pair),
    ]
    for what, values, fits in fields:
        if values is None:
            continue
        if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
            return f"{what} that is a {type(values).__name__}: {values!r:.80}"
        bad = [value for value in values if not fits(value)]
        if bad:
            return f"{what} holding a {type(bad[0]).__name__}: {bad[0]!r:.80}"
    if answer.problem is not None and not isinstance(answer.problem, str):
        return f"a problem that is a {type(answer.problem).__name__}: {answer.problem!r:.80}"
    return None


def _position(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _score(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _ranked_pair(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == 2
        and _position(value[0])
        and _score(value[1])
    )
