"""The retriever contract and the run's configuration (the registry by name: :mod:`.registry`).

A retriever turns one task's data for one domain into a run cut to the top ``k`` with the
task's exclusions applied before the cut (docs/protocol.md, Per-task protocol). Backends live one
per module and import their heavy packages (torch, open_clip, sentence-transformers, rapidocr) only
when built, so ``import mmbright_core.retrieval`` stays cheap and a missing extra raises
:class:`~mmbright_core.errors.MissingDependencyError` rather than returning zeros.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import math
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from mmbright_core.data.ids import passage_id as passage_id
from mmbright_core.errors import InputError
from mmbright_core.io.json_shapes import json_kind
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from mmbright_core.data.images import ImageSource
    from mmbright_core.io.ocr_words import OcrWords


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


def model_label(model: str, local: bool) -> str:
    """Return a model's short name: a local folder's name, or a hub id's last part."""
    return Path(model).name if local else model.rsplit("/", 1)[-1]


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
        # The first six fields, in their declared order: what the run is, before its settings.
        return cls(retriever.name, task, protocol, source, k, negatives, options=options, **top)

    def to_dict(self) -> dict[str, Any]:
        """Return the configuration as a JSON-ready dict (options as an object)."""
        out = asdict(self)
        out["options"] = dict(self.options)
        return out

    def to_json(self) -> str:
        """Return the configuration as indented, key-sorted JSON."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None) -> RunConfig:
        """Rebuild a configuration written by :meth:`to_dict`, checking every field.

        A field written before it was recorded reads back as its default; anything else
        that is not what :meth:`to_dict` writes (a setting beside the fields instead of
        under ``options``, a list for an object, a string for a number) is refused, so
        that no reader of a run folder meets a configuration of another shape.

        Args:
            data: The fields (``config.json``'s ``"config"`` object).
            source: Where they were read (``…/config.json``), for the message.

        Raises:
            InputError: ``data`` is not an object, lacks one of the fields every
                configuration has, has a field a configuration does not, or one of the
                wrong type.
        """
        if not isinstance(data, Mapping):
            raise _not_a_config("", source, "an object of settings", json_kind(data))
        given = dict(data)
        unknown = sorted(set(given) - set(cls.__dataclass_fields__))
        if unknown:
            raise _not_a_config(
                f"unknown field {unknown[0]!r}",
                source,
                "only the fields of a run configuration; a retriever's own settings go "
                "under options",
                ", ".join(unknown),
            )
        for name, (kinds, required) in _KINDS.items():
            if name not in given:
                if required:
                    raise _not_a_config(
                        f"missing field {name!r}", source, _REQUIRED, "no such field"
                    )
            elif not _is_kind(given[name], kinds):
                raise _not_a_config(
                    f"bad field {name!r}", source, _described(kinds), json_kind(given[name])
                )
        options = given.get("options", {})
        if not isinstance(options, Mapping):
            raise _not_a_config(
                "bad field 'options'",
                source,
                "an object of the retriever's settings",
                json_kind(options),
            )
        scale = options.get("score_scale", 1.0)
        if not _is_kind(scale, (int, float)) or not 0 < scale < math.inf:
            # What the cosine is multiplied by in the scores: 0, a negative number or a
            # text would rebuild a retriever scoring 0, or in reverse, or not at all.
            raise _not_a_config(
                "bad option 'score_scale'", source, "a number above 0", json_kind(scale)
            )
        given["options"] = tuple(sorted(options.items()))
        return cls(**given)


@dataclass(frozen=True)
class RebuildContext:
    """What a rebuild recipe may need beyond the configuration: where and with what it runs.

    Attributes:
        cache_dir: Where the retriever keeps its indexes and embeddings (None: its own).
        device: Torch device for the encoders.
        ocr_words: The words the run recorded from its query images (``ocr-*`` runs).
    """

    cache_dir: str | None = None
    device: str | None = None
    ocr_words: OcrWords | None = None


#: A retriever's rebuild recipe (:mod:`.rebuild`): (recorded configuration, its options,
#: context) -> factory options. It raises :class:`NotRebuildable` to refuse, ``KeyError`` for
#: an option not recorded.
Rebuild = Callable[[RunConfig, dict[str, Any], RebuildContext], dict[str, Any]]


class NotRebuildable(Exception):
    """The run's retriever cannot be rebuilt faithfully; the message says why and what to do."""


def _field_kinds() -> dict[str, tuple[tuple[type, ...], bool]]:
    """Field -> (the JSON types its value may have, whether every configuration has it).

    Read from :class:`RunConfig`'s annotations (``str``, ``int``, ``str | None``...), so
    that a field added there is checked here too; ``options`` is checked on its own.
    """
    hints = typing.get_type_hints(RunConfig)
    kinds: dict[str, tuple[tuple[type, ...], bool]] = {}
    for item in fields(RunConfig):
        if item.name == "options":
            continue
        hint = hints[item.name]
        allowed = typing.get_args(hint) or (hint,)
        required = item.default is MISSING and item.default_factory is MISSING
        kinds[item.name] = (tuple(type(None) if a is None else a for a in allowed), required)
    return kinds


_KINDS = _field_kinds()
_REQUIRED = "the fields every run configuration has: " + ", ".join(
    name for name, (_, required) in _KINDS.items() if required
)
_KIND_NAMES = {str: "a string", int: "an integer", type(None): "null"}


def _is_kind(value: Any, kinds: tuple[type, ...]) -> bool:
    # JSON's true and false are Python ints: never a task, a cut or a truncation.
    return isinstance(value, kinds) and not (isinstance(value, bool) and bool not in kinds)


def _described(kinds: tuple[type, ...]) -> str:
    return " or ".join(_KIND_NAMES[kind] for kind in kinds)


def _not_a_config(problem: str, source: str | None, expected: str, found: str) -> InputError:
    return InputError(
        "not a run configuration" + (f": {problem}" if problem else ""),
        source=source,
        expected=expected,
        found=found,
        hint="It is not what mmbright run writes: correct it, or run the command again into "
        "a new folder",
    )
