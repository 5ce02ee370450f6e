"""Rebuilding a run's retriever from its recorded configuration, or saying why it cannot be.

A run written by ``mmbright run`` keeps its :class:`~mmbright_core.retrieval.base.RunConfig`
in ``config.json``: the retriever's name and what its ``settings()`` reported. Each
retriever declares, in its backend record (:mod:`~mmbright_core.retrieval.backend_table`), a
:data:`~mmbright_core.retrieval.base.Rebuild` recipe that maps its settings back to the
options the factory takes; the rebuilt retriever's own settings must then equal the recorded
ones field by field (the analyzer's fingerprint, the weights, the OCR engine's version...), or
nothing is built and :class:`~mmbright_core.retrieval.base.NotRebuildable` says why: an
explanation computed with another model would be a guess. A plugin (``MODULE:FACTORY`` or
an installed name) is rebuilt by importing its factory again and calling it with the
recorded ``plugin_options`` (:func:`~mmbright_core.retrieval.plugins.rebuild_plugin`).

A run folder never chooses code to run: the module a ``MODULE:FACTORY`` spec names is
imported only when the caller lists that spec in ``import_modules`` (the user said yes to
it); otherwise :class:`ImportNotAllowed` names the module. Built-in retrievers and installed
entry-point plugins, which the installation itself provides, need no such consent
(docs/safety.md).

The OCR retrievers also need the words read from each query image. A run records them
(``<domain>/ocr.json``): given those, the rebuilt retriever answers from them and reports the
engine settings they were read with, so no OCR engine is needed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import Any

from mmbright_core.errors import InputError, MissingDependencyError
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.recorded import config_differences, describe_differences
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.retrieval.base import NotRebuildable as NotRebuildable
from mmbright_core.retrieval.base import Rebuild as Rebuild
from mmbright_core.retrieval.base import RebuildContext as RebuildContext
from mmbright_core.retrieval.base import Retriever, RunConfig
from mmbright_core.retrieval.catalogue.preset_run import set_score_scale
from mmbright_core.retrieval.plugins import is_spec
from mmbright_core.retrieval.registry import get_retriever, rebuild_recipe
from mmbright_core.retrieval.runner.rewritten import is_set_setting


class ImportNotAllowed(NotRebuildable):
    """The run names a plugin module (``MODULE:FACTORY``) the caller did not allow to import.

    Attributes:
        spec: The ``MODULE:FACTORY`` spec the run's configuration names.
    """

    def __init__(self, spec: str) -> None:
        self.spec = spec
        super().__init__(
            f"the run was made by the plugin {spec!r}: rebuilding it imports the module "
            f"{spec.partition(':')[0]!r} and runs its code, which is done only when you "
            "allow that module"
        )


def plugin_module(config: RunConfig | Mapping[str, Any]) -> str | None:
    """The ``MODULE:FACTORY`` spec that rebuilding a run would import.

    None when the run needs nothing outside the installed package and its entry points.
    """
    name = as_config(config).retriever
    return name if is_spec(name) else None


def rebuild_retriever(
    config: RunConfig | Mapping[str, Any],
    *,
    cache_dir: str | None = None,
    device: str | None = None,
    ocr_words: OcrWords | None = None,
    rewrites: Mapping[tuple[str, str], Rewrite] | None = None,
    import_modules: Collection[str] = (),
) -> Retriever:
    """Rebuild the retriever that made a run, exactly as configured.

    Args:
        config: The run's configuration: a :class:`RunConfig`, its ``to_dict()`` form, or
            the whole ``config.json`` of a run folder (``{"config": ..., "domains": ...}``).
        cache_dir: Where the retriever keeps its indexes and embeddings (default: its own).
        device: Torch device for the encoders (``dense``, ``clip``, ``hf``).
        ocr_words: The words the run recorded from its query images, for ``ocr-*``.
        rewrites: The rewritten queries a run on a rewritten set recorded.
        import_modules: The ``MODULE:FACTORY`` specs that may be imported (see
            :func:`plugin_module`); a run naming another one is refused.

    Returns:
        The retriever.

    Raises:
        InputError: ``config`` is not a run configuration.
        NotRebuildable: An unknown retriever, settings not recorded, a model, analyzer or
            package version that now gives other settings, a missing optional package, OCR
            words neither recorded nor readable.
        ImportNotAllowed: The run names a plugin module not in ``import_modules``.
    """
    config = as_config(config)
    if is_spec(config.retriever) and config.retriever not in import_modules:
        raise ImportNotAllowed(config.retriever)
    context = RebuildContext(cache_dir, device, ocr_words)
    if dict(config.options).get("trust_remote_code"):
        # Rebuilding would run the hub code a loaded folder names: never without the user's
        # own opt-in for that run (docs/safety.md).
        raise NotRebuildable(
            f"the run's {config.retriever!r} ran the model's own code from the hub "
            "(trust_remote_code), which is not run again to explain it"
        )
    if any(is_set_setting(name) for name, _ in config.options):
        return _rewritten(config, rewrites, context, import_modules)
    recipe = rebuild_recipe(config.retriever)
    if recipe is None:
        raise NotRebuildable(
            f"no recipe to rebuild retriever {config.retriever!r} from its configuration: "
            "pass the retriever itself"
        )
    try:
        options = recipe(config, dict(config.options), context)
    except KeyError as err:
        raise NotRebuildable(
            f"the run's configuration does not record {err.args[0]!r}, which rebuilding "
            f"{config.retriever!r} needs (read the run folder's config.json, not a summary)"
        ) from err
    retriever, rebuilt = _built(config, options)
    differences = config_differences(_compared(config), _compared(rebuilt))
    if differences:
        raise NotRebuildable(
            f"the rebuilt {config.retriever!r} differs from the run's: "
            + describe_differences(differences)
        )
    return retriever


def _built(config: RunConfig, options: dict[str, Any]) -> tuple[Retriever, RunConfig]:
    """The retriever the recipe's options build, and the configuration it now reports."""
    try:
        retriever = get_retriever(config.retriever, **options)
        scale = dict(config.options).get("score_scale")
        if scale is not None:  # a preset that writes the plain cosine (docs/protocol.md)
            set_score_scale(retriever, scale)
        rebuilt = RunConfig.build(
            retriever,
            task=config.task,
            protocol=config.protocol,
            source=config.source,
            k=config.k,
            negatives=config.negatives,
        )
    except (MissingDependencyError, InputError) as err:
        raise NotRebuildable(f"cannot rebuild {config.retriever!r}: {err}") from err
    return retriever, rebuilt


def _rewritten(
    config: RunConfig,
    rewrites: Mapping[tuple[str, str], Rewrite] | None,
    context: RebuildContext,
    import_modules: Collection[str],
) -> Retriever:
    """A run on rewritten queries: its first retriever rebuilt, on the recorded rewrites."""
    from mmbright_core.retrieval.runner.rewritten import Rewritten

    if not rewrites:
        raise NotRebuildable(
            "the run ran rewritten queries but records none (no rewrites.json beside its "
            "scores.json): run it again with --queries"
        )
    record = {name: value for name, value in config.options if is_set_setting(name)}
    options = tuple((name, value) for name, value in config.options if name not in record)
    inner = rebuild_retriever(
        dataclasses.replace(config, options=options),
        cache_dir=context.cache_dir,
        device=context.device,
        ocr_words=context.ocr_words,
        import_modules=import_modules,
    )
    return Rewritten(inner, rewrites, record, config.task, "the run's rewrites.json")


def as_config(config: RunConfig | Mapping[str, Any]) -> RunConfig:
    """Return ``config`` as a :class:`RunConfig` (given one, a dict, or a whole config.json).

    Raises:
        InputError: Not a run configuration.
    """
    if isinstance(config, RunConfig):
        return config
    return RunConfig.from_dict(
        config.get("config", config) if "retriever" not in config else config
    )


def _compared(config: RunConfig) -> dict[str, Any]:
    """The configuration as :func:`~mmbright_core.io.recorded.config_differences` compares it.

    Where the settings came from (the preset, the instruction set) are not settings: a
    rebuilt retriever need not report them.
    """
    return {k: v for k, v in config.to_dict().items() if k not in ("preset", "instructions")}
