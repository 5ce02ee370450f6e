"""Rebuilding a run's retriever from its recorded configuration, or saying why it cannot be.

A run written by ``mmbright run`` keeps its :class:`~mmbright_core.retrieval.base.RunConfig`
in ``config.json``: the retriever's name and what its ``settings()`` reported. Each
retriever's settings are mapped back to the options its factory takes; the rebuilt
retriever's own settings must then equal the recorded ones field by field (the analyzer's
fingerprint, the weights, the OCR engine's version...), or nothing is returned but the
reason: an explanation computed with another model would be a guess. A plugin
(``MODULE:FACTORY`` or an installed name) is rebuilt by importing its factory again and
calling it with the recorded ``plugin_options``.

The OCR retrievers also need the words read from each query image. A run records them
(``<domain>/ocr.json``): given those, the rebuilt retriever answers from them and reports the
engine settings they were read with, so no OCR engine is needed. Without them (a run made
before they were recorded) the engine must read the images again, and where it is not
installed the answer says which extra to install.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any

from mmbright_core.analysis.attribution_records import Unavailable
from mmbright_core.errors import InputError, MissingDependencyError
from mmbright_core.io.ocr_words import OcrWords
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.retrieval.base import Retriever, RunConfig, get_retriever
from mmbright_core.retrieval.rewritten import is_set_setting

Recipe = Callable[[RunConfig, dict[str, Any]], dict[str, Any]]
_RANDOM_WEIGHTS = re.compile(r"random:seed=(-?\d+):")


def _bm25(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
    return {"k1": options["k1"], "b": options["b"], "scoring": options["scoring"]}


def _dense(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
    from mmbright_core.retrieval.dense import default_text_model

    try:
        default = str(default_text_model())
    except MissingDependencyError:
        default = None
    return {
        # The packaged default model is recorded by its folder: ask for the default again.
        "model": None if config.model == default else config.model,
        "revision": config.revision,
        "max_length": config.truncation,
        "query_prefix": options["query_prefix"],
        "document_prefix": options["document_prefix"],
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
    }


def _clip(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
    seed = _RANDOM_WEIGHTS.match(str(options["weights"]))
    return {
        "model": config.model,
        "pretrained": config.revision or "none",  # None was recorded for random weights
        "seed": int(seed.group(1)) if seed else 0,
        "image_policy": config.image_policy,
        "no_image": config.no_image,
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
    }


def _ocr(inner: Recipe) -> Recipe:
    def recipe(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
        return {
            **inner(config, options),
            "image_policy": config.image_policy,
            "min_score": options["ocr_min_score"],
        }

    return recipe


def _hf(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
    rebuilt = {
        "model": config.model,
        "revision": config.revision,
        "max_length": config.truncation,
        "dtype": options["dtype"],
        "index": options["index"],
        "cache_dtype": options["cache_dtype"],
    }
    if "pooling" not in options:  # CLIP or SigLIP: the query image counts
        return {**rebuilt, "image_policy": config.image_policy}
    return {
        **rebuilt,
        "pooling": options["pooling"],
        "query_instruction": options["query_instruction"],
        "document_instruction": options["document_instruction"],
        "append_eos": options.get("append_eos", False),
        "document_char_limit": options.get("document_char_limit"),
    }


_RECIPES: dict[str, Recipe] = {
    "bm25": _bm25,
    "ocr-bm25": _ocr(_bm25),
    "dense": _dense,
    "ocr-dense": _ocr(_dense),
    "clip": _clip,
    "hf": _hf,
    "random": lambda config, options: {"seed": options["seed"]},
}
# Where the recipe's retriever takes them: where the caches are, which device encodes.
_CACHED = frozenset({"bm25", "ocr-bm25", "dense", "ocr-dense", "clip", "hf"})
_DEVICE = frozenset({"dense", "clip", "hf"})
_OCR = frozenset({"ocr-bm25", "ocr-dense"})


def _plugin(config: RunConfig, options: dict[str, Any]) -> dict[str, Any]:
    # A plugin is rebuilt by calling its factory again with the options it was given.
    return dict(options["plugin_options"])


def _plugin_recipe(name: str) -> Recipe | None:
    from mmbright_core.retrieval.plugins import entry_points, is_spec

    return _plugin if is_spec(name) or name in entry_points() else None


def retriever_from_config(
    config: RunConfig | Mapping[str, Any],
    *,
    cache_dir: str | None = None,
    device: str | None = None,
    ocr_words: OcrWords | None = None,
    rewrites: Mapping[tuple[str, str], Rewrite] | None = None,
) -> Retriever | Unavailable:
    """Rebuild the retriever that made a run, exactly as configured, or say why not.

    Args:
        config: The run's configuration: a :class:`RunConfig`, its ``to_dict()`` form, or
            the whole ``config.json`` of a run folder (``{"config": ..., "domains": ...}``).
        cache_dir: Where the retriever keeps its indexes and embeddings (default: its own).
        device: Torch device for the encoders (``dense``, ``clip``).
        ocr_words: The words the run recorded from its query images
            (:attr:`~mmbright_core.io.official.OfficialOutputs.ocr_words`), for ``ocr-*``.
        rewrites: The rewritten queries a run on a rewritten set recorded
            (:attr:`~mmbright_core.io.official.OfficialOutputs.rewrites`).

    Returns:
        The retriever, or :class:`Unavailable` with the reason it cannot be rebuilt
        faithfully (an unknown retriever, settings not recorded, a model, analyzer or
        package version that now gives other settings, a missing optional package, OCR
        words neither recorded nor readable).

    Raises:
        InputError: ``config`` is not a run configuration.
    """
    config = _as_config(config)
    if dict(config.options).get("trust_remote_code"):
        # Rebuilding would run the hub code a loaded folder names: never without the user's
        # own opt-in for that run (docs/safety.md).
        return Unavailable(
            f"the run's {config.retriever!r} ran the model's own code from the hub "
            "(trust_remote_code), which is not run again to explain it"
        )
    if any(is_set_setting(name) for name, _ in config.options):
        return _rewritten(config, rewrites, cache_dir=cache_dir, device=device, ocr_words=ocr_words)
    recipe = _RECIPES.get(config.retriever) or _plugin_recipe(config.retriever)
    if recipe is None:
        return Unavailable(
            f"no recipe to rebuild retriever {config.retriever!r} from its configuration: "
            "pass the retriever itself"
        )
    try:
        options = recipe(config, dict(config.options))
    except KeyError as err:
        return Unavailable(
            f"the run's configuration does not record {err.args[0]!r}, which rebuilding "
            f"{config.retriever!r} needs (read the run folder's config.json, not a summary)"
        )
    if config.retriever in _CACHED or recipe is _plugin:
        options["cache_dir"] = cache_dir
    if config.retriever in _DEVICE:
        options["device"] = device
    if config.retriever in _OCR:
        unreadable = _ocr_unavailable(config, ocr_words)
        if unreadable is not None:
            return unreadable
        options["recorded"] = ocr_words
    try:
        retriever = get_retriever(config.retriever, **options)
        rebuilt = RunConfig.build(
            retriever,
            task=config.task,
            protocol=config.protocol,
            source=config.source,
            k=config.k,
            negatives=config.negatives,
        )
    except (MissingDependencyError, InputError) as err:
        return Unavailable(f"cannot rebuild {config.retriever!r}: {err}")
    differences = _differences(config, rebuilt)
    if differences:
        return Unavailable(
            f"the rebuilt {config.retriever!r} differs from the run's: " + "; ".join(differences)
        )
    return retriever


def _rewritten(
    config: RunConfig,
    rewrites: Mapping[tuple[str, str], Rewrite] | None,
    **given: Any,
) -> Retriever | Unavailable:
    """A run on rewritten queries: its first retriever rebuilt, on the recorded rewrites."""
    from mmbright_core.retrieval.rewritten import Rewritten

    if not rewrites:
        return Unavailable(
            "the run ran rewritten queries but records none (no rewrites.json beside its "
            "scores.json): run it again with --queries"
        )
    record = {name: value for name, value in config.options if is_set_setting(name)}
    options = tuple((name, value) for name, value in config.options if name not in record)
    inner = retriever_from_config(dataclasses.replace(config, options=options), **given)
    if isinstance(inner, Unavailable):
        return inner
    return Rewritten(inner, rewrites, record, config.task, "the run's rewrites.json")


def _ocr_unavailable(config: RunConfig, words: OcrWords | None) -> Unavailable | None:
    """Why an OCR run's image words can be neither taken from its record nor read, if so."""
    from mmbright_core.retrieval.ocr import engine_installed

    if words is not None:
        if words.image_policy != config.image_policy:
            return Unavailable(
                f"the run's ocr.json records image policy {words.image_policy!r}, its "
                f"configuration {config.image_policy!r}: run the retriever again"
            )
        return None
    if engine_installed():
        return None
    return Unavailable(
        "the run records no words read from its query images (no ocr.json beside its "
        "scores.json), and reading them again needs the OCR engine, which is not installed: "
        "pip install 'mmbright[ocr]', or run the retriever again to record them"
    )


def _as_config(config: RunConfig | Mapping[str, Any]) -> RunConfig:
    if isinstance(config, RunConfig):
        return config
    fields = config.get("config", config) if "retriever" not in config else config
    if not isinstance(fields, Mapping):
        raise InputError("not a run configuration", expected="a mapping", found=repr(fields))
    try:
        return RunConfig.from_dict(fields)
    except TypeError as err:  # a required field is missing
        raise InputError(
            "not a run configuration",
            expected="retriever, task, protocol, source and k at least",
            found=", ".join(sorted(fields)) or "nothing",
        ) from err


def _differences(recorded: RunConfig, rebuilt: RunConfig) -> list[str]:
    """Return ``name: recorded X, now Y`` for every setting that differs (version aside)."""
    old, new = recorded.to_dict(), rebuilt.to_dict()
    for side in (old, new):
        side.pop("package_version")
        for label in ("preset", "instructions"):  # where the settings came from, not settings
            side.pop(label)
        side.update({f"options.{k}": v for k, v in side.pop("options").items()})
    return [
        f"{key}: recorded {old.get(key)!r}, now {new.get(key)!r}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]
