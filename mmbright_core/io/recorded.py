"""Run configurations as recorded beside outputs: how two differ, and whether a folder mixes them.

An outputs folder written by ``mmbright run`` records its configuration in ``config.json``
and each domain's in ``<domain>/config.json``. A folder must hold one configuration only
(docs/commands.md, "Output folders"): a domain scored under other settings, or one with
no record beside domains that have one, would give a benchmark figure that answers no
single run, and one that differs from what ``summary.json`` says.

The same comparison says how a retriever rebuilt from a run's configuration differs from it
(:mod:`mmbright_core.retrieval.runner.rebuild`): one rule, and one wording, for both refusals.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError

UNCOMPARED = frozenset({"package_version"})
"""Fields that never make two configurations different: a new release reruns, never refuses."""

_SHOWN = 3  # differing fields named in a message


def config_differences(
    recorded: Mapping[str, Any], now: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    """The fields two configurations disagree on, as ``(field, recorded, now)``, sorted.

    Options are compared one by one (``options.k1``). A top-level field one side lacks
    (``options`` included) is not held against it: configurations written before the
    field existed read back with the default they necessarily used (the runner's
    ``RunConfig.from_dict``), while one option missing from one side's options is a
    difference (a backend reports all its options).

    Args:
        recorded: The configuration found on disk (``config.json``'s ``"config"``).
        now: The other configuration.
    """
    both = "options" in recorded and "options" in now
    left, right = _flat(recorded, both), _flat(now, both)
    out = []
    for name in sorted(left.keys() | right.keys()):
        if name in UNCOMPARED or ("." not in name and not (name in left and name in right)):
            continue
        if left.get(name, _ABSENT) != right.get(name, _ABSENT):
            out.append((name, left.get(name, _ABSENT), right.get(name, _ABSENT)))
    return out


def describe_differences(
    differences: list[tuple[str, Any, Any]], old: str = "recorded", new: str = "now"
) -> str:
    """``k (recorded 1000, now 10), task (recorded 1, now 2)``: the first few differences.

    Args:
        differences: What :func:`config_differences` found.
        old: What the first value is called.
        new: What the second value is called.
    """
    shown = [
        f"{name} ({old} {_show(before)}, {new} {_show(after)})"
        for name, before, after in differences[:_SHOWN]
    ]
    more = len(differences) - _SHOWN
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def check_one_configuration(
    folder: Path,
    run_config: Mapping[str, Any],
    domain_configs: Mapping[str, Mapping[str, Any] | None],
) -> None:
    """Refuse an outputs folder whose domains were not all run with one configuration.

    Outputs with no recorded configuration anywhere (the official harness's) pass.

    Args:
        folder: The ``<subdir>`` folder, for the message.
        run_config: Its ``config.json``'s configuration (empty if it has none).
        domain_configs: domain -> its recorded configuration, None where it has none.

    Raises:
        InputError: Some domains record a configuration and others do not, or two recorded
            configurations differ in more than the package version.
    """
    recorded = {d: c for d, c in domain_configs.items() if c is not None}
    if run_config:
        recorded = {"config.json": run_config, **recorded}
    if not recorded:
        return
    bare = sorted(d for d, c in domain_configs.items() if c is None)
    if bare:
        raise InputError(
            "the folder mixes runs: "
            f"{_names(bare)} {'has' if len(bare) == 1 else 'have'} no config.json, "
            f"beside {_names(sorted(recorded))} that record one",
            source=str(folder),
            hint="A run stopped in that domain: run the same command again to finish it, or "
            "delete the domains without config.json",
        )
    first, reference = next(iter(recorded.items()))
    for name, config in recorded.items():
        differences = config_differences(reference, config)
        if differences:
            raise InputError(
                f"the folder mixes configurations: {name} differs from {first} in "
                + describe_differences(differences, first, name),
                source=str(folder),
                hint="Its scores answer no single run: run again into a new folder, or "
                "delete the domains of the other configuration",
            )


def check_summary(
    folder: Path, summary: Mapping[str, Mapping[str, float]], metrics: Mapping[str, Any]
) -> None:
    """Refuse a ``summary.json`` whose per-domain metrics are not its domains' own.

    A summary written by another run than the domains' files would print one figure while
    the domains' scores give another.

    Args:
        folder: The ``<subdir>`` folder, for the message.
        summary: The summary's ``"domains"``: domain -> metric -> value.
        metrics: domain -> the metrics its ``metrics.json`` holds.

    Raises:
        InputError: A domain's metrics differ from the summary's for it.
    """
    stale = sorted(d for d, values in summary.items() if _disagree(values, metrics.get(d, {})))
    if stale:
        raise InputError(
            "the folder mixes runs: summary.json disagrees with the metrics of "
            + ", ".join(stale[:3])
            + (f" and {len(stale) - 3} more" if len(stale) > 3 else ""),
            source=str(folder),
            hint="The domains were rewritten after the summary: run the same command again "
            "to rewrite it, or delete the folder",
        )


def _disagree(one: Mapping[str, float], other: Mapping[str, float]) -> bool:
    # Only the metrics both name: a summary may list fewer or more of them.
    return any(abs(one[name] - other[name]) > 1e-9 for name in one.keys() & other.keys())


class _Absent:
    def __repr__(self) -> str:
        return "(none)"


_ABSENT = _Absent()


def _flat(config: Mapping[str, Any], options_too: bool) -> dict[str, Any]:
    out = {k: v for k, v in config.items() if k != "options"}
    options = config.get("options")
    if not options_too:
        return out
    if isinstance(options, Mapping):
        out.update({f"options.{k}": v for k, v in options.items()})
    elif options is not None:
        out["options"] = options
    return out


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _names(names: list[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")
