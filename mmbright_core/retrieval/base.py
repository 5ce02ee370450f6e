"""The retriever contract, the registry of retrievers by name, and the run's configuration.

A retriever turns one task's data for one domain into a run cut to the top ``k`` with the
task's exclusions applied before the cut (docs/protocol.md, Per-task protocol). Backends live one
per module and import their heavy packages (torch, open_clip, sentence-transformers, rapidocr) only
when built, so ``import mmbright_core.retrieval`` stays cheap and a missing extra raises
:class:`~mmbright_core.errors.MissingDependencyError` rather than returning zeros.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import json
import typing
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mmbright_core.data.ids import passage_id as passage_id
from mmbright_core.errors import InputError, MissingDependencyError, UnknownNameError
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.rebuild import Rebuild

#: The ``run`` subcommand's default cut (docs/protocol.md, Per-task protocol: runs keep the top
#: 1,000 per query).
DEFAULT_K = 1000


@runtime_checkable
class ImageSource(Protocol):
    """Where a retriever reads image bytes; a data source satisfies it."""

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return a query image's raw file bytes, or None when the data has none."""

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return a corpus image's raw file bytes, or None when the data has none."""


@runtime_checkable
class Retriever(Protocol):
    """A retrieval backend.

    Attributes:
        name: The registered name (``bm25``, ``clip``...).
        tasks: The task numbers the backend can run.
    """

    name: str
    tasks: frozenset[int]

    def label(self) -> str:
        """Return the short model name used in output folder names (docs/protocol.md)."""

    def settings(self) -> dict[str, Any]:
        """Return everything that changes the run: model, revision, checkpoint hash, options."""

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank ``data.corpus`` for every query of ``data``.

        Args:
            data: One task's queries, corpus and exclusions for one domain.
            source: Where image bytes come from (None for text-only backends and tasks).
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> score, at most ``k`` entries per query.
        """


def check_task(retriever: Retriever, task: int) -> None:
    """Raise :class:`InputError` unless ``retriever`` supports ``task``."""
    if task not in retriever.tasks:
        supported = ", ".join(str(t) for t in sorted(retriever.tasks))
        raise InputError(
            f"retriever {retriever.name!r} cannot run task {task}",
            expected=f"one of tasks {supported}",
            found=f"task {task}",
            hint="Pick another retriever (see `mmbright run --help`).",
        )


def check_k(k: int) -> None:
    """Raise :class:`InputError` unless ``k`` is a positive integer."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputError("invalid cut-off k", expected="a positive integer", found=repr(k))


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
}
#: Built-in retrievers without a rebuild recipe, and why: their runs are explained only by
#: passing the retriever itself.
NOT_REBUILDABLE: dict[str, str] = {
    "mteb": "its model loads through MTEB's registry; its settings map back to no options",
    "api": "its vectors come from a remote endpoint, with a key and request budget of its own",
    "remote": "its models run their own hub code, which is not run again to explain a run",
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


def model_label(model: str, local: bool) -> str:
    """Return a model's short name: a local folder's name, or a hub id's last part."""
    return Path(model).name if local else model.rsplit("/", 1)[-1]


def require(module: str, what: str, extra: str) -> Any:
    """Import ``module`` or raise :class:`MissingDependencyError` naming the pip extra.

    Args:
        module: The importable module name (``open_clip``).
        what: What needs it, for the message (``the clip retriever``).
        extra: The ``mmbright`` extra that installs it (``clip``).

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        if err.name is not None and err.name.split(".")[0] != module.split(".")[0]:
            raise  # a real bug inside an installed package, not a missing one
        raise MissingDependencyError(what, extra, module) from err


def package_version() -> str:
    """Return this package's installed version (recorded in every run's configuration)."""
    try:
        return importlib.metadata.version("mmbright")
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run's scores, stored beside its outputs.

    docs/protocol.md, What peer tools do differently, says why.

    Two runs with equal configurations give equal scores; outputs are reused only when the
    stored configuration equals the new one, never because a file exists.

    Attributes:
        retriever: The registered retriever name.
        task: The task number.
        protocol: The Task 4 judgment protocol (``paper`` elsewhere, where it has no effect).
        source: The data source's name (including its revision where it has one).
        k: The per-query cut.
        negatives: ``exclude`` (official) or ``keep`` each query's ``negative_ids`` (tasks
            1-2; ``exclude`` elsewhere, where it has no effect). Configurations written
            before it was recorded read back as ``exclude``, the only policy they could use.
        model: The model name or path, if the backend has one.
        revision: The model's revision or pretrained tag, if any.
        checkpoint_sha256: sha256 of local weight files, if the model was loaded from disk.
        image_policy: How several query images were used (``first``, ``concat``, ``all``).
        no_image: What a query without a decodable image got (``white`` or ``text``).
        truncation: The text truncation (tokens) applied to documents, if any.
        fusion: How text and image embeddings were combined, if they were.
        preset: The catalogue preset the settings came from (``mmbright run --model-preset``).
        instructions: The instruction set chosen (``official``, ``bright``, ``mteb``, ``none``).
        options: Every other setting, as sorted ``(name, value)`` pairs of JSON scalars.
        package_version: The version of this package that made the run.
    """

    retriever: str
    task: int
    protocol: str
    source: str
    k: int
    negatives: str = "exclude"
    model: str | None = None
    revision: str | None = None
    checkpoint_sha256: str | None = None
    image_policy: str | None = None
    no_image: str | None = None
    truncation: int | None = None
    fusion: str | None = None
    preset: str | None = None
    instructions: str | None = None
    options: tuple[tuple[str, Any], ...] = field(default=())
    package_version: str = field(default_factory=package_version)

    @classmethod
    def build(
        cls,
        retriever: Retriever,
        *,
        task: int,
        protocol: str,
        source: str,
        k: int,
        negatives: str = "exclude",
    ) -> RunConfig:
        """Describe a run of ``retriever`` from the settings it reports.

        Args:
            retriever: The retriever.
            task: The task number.
            protocol: The Task 4 protocol.
            source: The data source's name.
            k: The per-query cut.
            negatives: The policy for ``negative_ids``, ``exclude`` or ``keep``.

        Returns:
            The configuration.
        """
        settings = dict(retriever.settings())
        known = {f for f in cls.__dataclass_fields__ if f not in {"options", "package_version"}}
        top = {key: settings.pop(key) for key in list(settings) if key in known}
        options = tuple(sorted(settings.items()))
        return cls(
            retriever=retriever.name,
            task=task,
            protocol=protocol,
            source=source,
            k=k,
            negatives=negatives,
            options=options,
            **top,
        )

    def to_dict(self) -> dict[str, Any]:
        """Return the configuration as a JSON-ready dict (options as an object)."""
        out = asdict(self)
        out["options"] = dict(self.options)
        return out

    def to_json(self) -> str:
        """Return the configuration as indented, key-sorted JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild a configuration written by :meth:`to_dict`.

        Raises:
            InputError: ``data`` has fields a configuration does not.
        """
        fields = dict(data)
        unknown = sorted(set(fields) - set(cls.__dataclass_fields__))
        if unknown:
            raise InputError(
                "not a run configuration",
                expected=f"fields of {cls.__name__}",
                found=", ".join(unknown),
            )
        fields["options"] = tuple(sorted(dict(fields.get("options", {})).items()))
        return cls(**fields)
