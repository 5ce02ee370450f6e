"""The JSON files of an official outputs folder, parsed and checked.

A domain's ``metrics.json`` values, the folder's ``summary.json`` and the runner's
``config.json`` (docs/protocol.md, The official harness's files): each value is checked
where it is read, and a bad one is refused with the file and the JSON path that hold it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.io.json_shapes import (
    JsonObject,
    finite_number,
    json_kind,
    json_path,
    object_pairs,
    parse_json,
)
from mmbright_core.io.reading import decode, load

WARNINGS = "warnings"
"""The key of a ``metrics.json`` that holds the run's warnings, not a metric."""


def read_json_file(path: Path) -> tuple[Any, str]:
    """Return a JSON file's parsed content and the name its messages give it."""
    loaded = load(path)
    return parse_json(decode(loaded), loaded.name), loaded.name


def _refuse_unless(fits: bool, name: str, keys: tuple[str, ...], expected: str, value: Any) -> None:
    """Refuse the value at ``keys`` of the file ``name`` unless it ``fits`` what is expected."""
    if fits:
        return
    where = json_path(*keys)
    raise InputError(
        f"bad value at {where}", source=name, expected=expected, found=json_kind(value)
    )


def metric_values(
    data: Any, name: str, keys: tuple[str, ...], skip: tuple[str, ...] = ()
) -> dict[str, float]:
    """Read an object of metric name -> finite number (the names in ``skip`` left out).

    Raises:
        InputError: ``data`` is no object, or a metric is not a finite number.
    """
    out: dict[str, float] = {}
    for metric, value in object_pairs(data, name, keys, "mapping metric names to values").items():
        if metric in skip:
            continue
        number = finite_number(value)
        if number is None:
            raise InputError(
                f"bad metric value at {json_path(*keys, metric)}",
                source=name,
                expected="a finite number",
                found=json_kind(value),
            )
        out[metric] = number
    return out


def read_metrics(path: str | os.PathLike[str]) -> tuple[dict[str, float], tuple[str, ...]]:
    """Read a domain's ``metrics.json`` (or ``results.json``): its metrics and its warnings.

    Raises:
        InputError: A metric is not a finite number, or ``"warnings"`` not a list of strings.
    """
    data, name = read_json_file(Path(path))
    pairs = object_pairs(data, name, (), "mapping metric names to values")
    said = pairs.get(WARNINGS, [])
    fits = isinstance(said, list) and all(isinstance(w, str) for w in said)
    _refuse_unless(fits, name, (WARNINGS,), "a list of strings", said)
    return metric_values(data, name, (), skip=(WARNINGS,)), tuple(said)


def read_summary(path: Path) -> dict[str, Any]:
    """A ``summary.json``'s ``model``, ``task_type``, ``domains`` and ``aggregated``, or {}.

    Raises:
        InputError: The file is malformed or a value has the wrong type.
    """
    if not path.is_file():
        return {}
    data, name = read_json_file(path)
    top = object_pairs(data, name, (), 'with "model", "task_type", "domains", "aggregated"')
    out: dict[str, Any] = {}
    for key in ("model", "task_type"):
        fits = key not in top or isinstance(top[key], str)  # a null is refused too
        _refuse_unless(fits, name, (key,), "a string", top.get(key))
        out[key] = top.get(key)
    domains = object_pairs(top.get("domains", JsonObject()), name, ("domains",), "of domains")
    out["domains"] = {d: metric_values(m, name, ("domains", d)) for d, m in domains.items()}
    out["aggregated"] = metric_values(top.get("aggregated", JsonObject()), name, ("aggregated",))
    return out


def read_run_config(path: Path) -> dict[str, Any]:
    """The runner's ``config.json`` (its ``"config"`` object) as plain data, or {} without one."""
    if not path.is_file():
        return {}
    data, name = read_json_file(path)
    top = object_pairs(data, name, (), 'with a "config" object')
    settings = object_pairs(top.get("config", JsonObject()), name, ("config",), "of settings")
    return {key: _plain(value) for key, value in settings.items()}


def _plain(value: Any) -> Any:
    """A parsed JSON value with its objects as dicts (duplicate keys were refused above)."""
    if isinstance(value, JsonObject):
        return {key: _plain(item) for key, item in value}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
