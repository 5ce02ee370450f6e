"""A pipeline file read, checked and turned into each stage's command line.

A pipeline file (TOML, docs/commands.md "Pipelines") holds a ``[pipeline]`` table (the
source, task, domains, protocol and negatives policy every stage shares, and the output
folder) and a ``[stages.NAME]`` table per stage: ``command`` (``rewrite``, ``run``,
``rerank`` or ``fuse``), the input it reads (``queries``, ``run`` or ``runs``: names of
other stages) and the command's own options, named as its flags are (``--image-policy`` as
``image_policy``). Every stage is one ``mmbright <command>`` command line, checked here by
that command's own parser before anything runs: an unknown command, an input naming no
stage, a cycle, or an option the command does not take is refused in one line naming the
file and the stage.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from mmbright_core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class Slot:
    """An input a stage's command reads from earlier stages.

    Attributes:
        key: Its key in the stage's table (and the command's argument).
        reads: The commands whose stages it may name.
        several: Whether it names a list of stages (else one).
        flag: Given as ``--key PATH`` (else as a positional argument).
    """

    key: str
    reads: tuple[str, ...]
    several: bool = False
    flag: bool = False


_RUNS = ("run", "rerank", "fuse")
SLOTS: dict[str, tuple[Slot, ...]] = {
    "rewrite": (),
    "run": (Slot("queries", ("rewrite",), flag=True),),
    "rerank": (Slot("run", _RUNS),),
    "fuse": (Slot("runs", _RUNS, several=True),),
}
"""The commands a stage may run, and the inputs each reads."""
REQUIRED = {"rerank": "run", "fuse": "runs"}
"""The input a command cannot run without."""
QUERY_SET = "queries.jsonl"
"""The file a ``rewrite`` stage writes in its folder."""
SHARED = ("source", "task", "domain", "protocol", "negatives")
"""The ``[pipeline]`` settings every stage that takes them is given."""
_OWN = (*SHARED, "out", "wait", "help")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True)
class Stage:
    """One stage of a pipeline, ready to run.

    Attributes:
        name: Its name, which is also its folder in the output folder.
        command: The ``mmbright`` subcommand it runs.
        inputs: The stages it reads, in the order its command line names them.
        argv: Its command line (without ``mmbright``), run in the output folder.
    """

    name: str
    command: str
    inputs: tuple[str, ...]
    argv: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    """A checked pipeline: its stages in an order where each comes after its inputs.

    Attributes:
        file: The pipeline file.
        out: The output folder: one folder per stage, and each stage's record beside it.
        stages: The stages, inputs first.
    """

    file: Path
    out: Path
    stages: tuple[Stage, ...]


def read_plan(
    path: str | Path, parsers: Mapping[str, argparse.ArgumentParser], out: str | None = None
) -> Plan:
    """Read the pipeline file at ``path`` and check every stage against its command's parser.

    Args:
        path: The pipeline file.
        parsers: Each command's parser (``mmbright <command>``), by command name.
        out: The output folder, over the file's ``out``.

    Raises:
        InputError: The file does not parse, or a stage cannot run (the message names the
            file and the stage).
    """
    file = Path(path)
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise InputError(f"not a TOML file: {err}", source=str(file)) from None
    except UnicodeDecodeError:
        raise InputError("not a UTF-8 text file", source=str(file)) from None
    settings = _table(data, "pipeline", file)
    stages = _table(data, "stages", file)
    unknown = sorted(set(data) - {"pipeline", "stages"})
    if unknown:
        _refuse(file, f"unknown table [{unknown[0]}]", hint="Use [pipeline] and [stages.NAME]")
    extra = sorted(set(settings) - {*SHARED, "out"})
    if extra:
        _refuse(file, f"[pipeline] has no setting {extra[0]!r}", expected=", ".join(SHARED))
    for needed in ("source", "task"):
        if needed not in settings:
            _refuse(file, f"[pipeline] lacks {needed!r}", hint=f"Add {needed} = ...")
    folder = out if out is not None else settings.get("out")
    if not isinstance(folder, str) or not folder:
        _refuse(file, "no output folder", hint="Set out = 'FOLDER' in [pipeline], or pass --out")
    if not stages:
        _refuse(file, "no stage", hint="Add a [stages.NAME] table with command = 'run'")
    shared = {**settings, "source": _source(settings["source"], file)}
    order = _ordered(file, stages)
    base = file.parent
    built = tuple(
        _stage(file, name, stages[name], stages, shared, parsers[stages[name]["command"]], base)
        for name in order
    )
    return Plan(file, _resolved(folder, base if out is None else Path.cwd()), built)


def _table(data: Mapping[str, Any], key: str, file: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        _refuse(file, f"{key!r} is not a table", hint=f"Write it as [{key}]")
    return value


def _source(value: Any, file: Path) -> str:
    if not isinstance(value, str):
        _refuse(file, "[pipeline] source is not a string", expected="'demo', 'hf' or a folder")
    if value in ("demo", "hf") or value.startswith("hf@"):
        return value
    return str(_resolved(value, file.parent))


def _resolved(value: str, base: Path) -> Path:
    """A path of the file: relative ones are read from the file's folder."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).absolute()


def _ordered(file: Path, stages: Mapping[str, Any]) -> list[str]:
    """The stage names, each after the stages it reads (file order otherwise)."""
    for name, table in stages.items():
        if not _NAME.match(name):
            _refuse(file, f"stage name {name!r} cannot name a folder", expected="[A-Za-z0-9_.-]")
        if not isinstance(table, dict):
            _refuse(file, f"stage {name!r} is not a table", hint=f"Write it as [stages.{name}]")
        command = table.get("command")
        if command not in SLOTS:
            _refuse(
                file,
                f"stage {name!r} runs no known command",
                expected=f"command = one of {', '.join(SLOTS)}",
                found=repr(command),
            )
        for slot in SLOTS[command]:
            for read in _inputs(file, name, slot, table.get(slot.key)):
                other = stages.get(read)
                if not isinstance(other, dict):
                    _refuse(file, f"stage {name!r}: {slot.key} names no stage", found=repr(read))
                if other.get("command") not in slot.reads:
                    _refuse(
                        file,
                        f"stage {name!r}: {slot.key} reads the output of {_either(slot.reads)}",
                        found=f"{read!r} ({other.get('command')})",
                    )
        if command in REQUIRED and REQUIRED[command] not in table:
            _refuse(file, f"stage {name!r} ({command}) names no {REQUIRED[command]!r}")
    done: list[str] = []
    visiting: list[str] = []

    def visit(name: str) -> None:
        if name in done:
            return
        if name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(name) :], name])
            _refuse(file, f"stage {name!r} reads its own output", found=cycle)
        visiting.append(name)
        table = stages[name]
        for slot in SLOTS[table["command"]]:
            for read in _inputs(file, name, slot, table.get(slot.key)):
                visit(read)
        visiting.pop()
        done.append(name)

    for name in stages:
        visit(name)
    return done


def _inputs(file: Path, name: str, slot: Slot, value: Any) -> list[str]:
    if value is None:
        return []
    if slot.several:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            _refuse(file, f"stage {name!r}: {slot.key} is not a list of stage names")
        return list(value)
    if not isinstance(value, str):
        _refuse(file, f"stage {name!r}: {slot.key} is not a stage name", found=repr(value))
    return [value]


def output_path(stage: str, command: str) -> str:
    """Where a stage's command writes, relative to the output folder."""
    return f"{stage}/{QUERY_SET}" if command == "rewrite" else stage


def _stage(
    file: Path,
    name: str,
    table: Mapping[str, Any],
    stages: Mapping[str, Any],
    shared: Mapping[str, Any],
    parser: argparse.ArgumentParser,
    base: Path,
) -> Stage:
    command = table["command"]
    slots = {slot.key: slot for slot in SLOTS[command]}
    actions = _actions(parser)
    positional: list[str] = []
    flags: list[str] = []
    inputs: list[str] = []
    for slot in SLOTS[command]:
        reads = _inputs(file, name, slot, table.get(slot.key))
        inputs += reads
        paths = [output_path(read, stages[read]["command"]) for read in reads]
        if slot.flag and paths:
            flags += [f"--{slot.key}", *paths]
        else:
            positional += paths
    for key, value in shared.items():
        if key in SHARED and f"--{key}" in actions:
            flags += _rendered(file, name, key, value, actions[f"--{key}"], base)
    for key, value in table.items():
        if key == "command" or key in slots:
            continue
        flag = f"--{key.replace('_', '-')}"
        if key in _OWN or flag not in actions:
            hint = "It is set in [pipeline] for every stage" if key in _OWN else None
            _refuse(
                file,
                f"stage {name!r}: `mmbright {command}` takes no option {key!r}",
                hint=hint or f"`mmbright {command} --help` lists its options",
            )
        flags += _rendered(file, name, key, value, actions[flag], base)
    argv = (command, *positional, *flags, "--out", output_path(name, command))
    _check(file, name, parser, argv)
    return Stage(name, command, tuple(inputs), argv)


def _actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    parser.format_usage()  # declares what a parser leaves for later
    return {flag: action for action in parser._actions for flag in action.option_strings}


def _rendered(
    file: Path, name: str, key: str, value: Any, action: argparse.Action, base: Path
) -> list[str]:
    """``key = value`` as the command's flag and its words."""
    flag = action.option_strings[-1]
    if isinstance(action, argparse._StoreTrueAction):
        if not isinstance(value, bool):
            _refuse(file, f"stage {name!r}: {key} is a switch", expected="true or false")
        return [flag] if value else []
    if isinstance(value, dict):
        if not isinstance(action, argparse._AppendAction):
            _refuse(file, f"stage {name!r}: {key} takes no table", found=repr(value))
        return [w for k, v in value.items() for w in (flag, f"{k}={_word(file, name, v, base)}")]
    if isinstance(value, list):
        words = [_word(file, name, v, base) for v in value]
        if action.nargs in ("+", "*"):
            return [flag, *words]
        if not isinstance(action, argparse._AppendAction):
            _refuse(file, f"stage {name!r}: {key} takes one value", found=repr(value))
        return [w for word in words for w in (flag, word)]
    return [flag, _word(file, name, value, base)]


def _word(file: Path, name: str, value: Any, base: Path) -> str:
    """A value as the command line writes it; ``./`` and ``../`` paths from the file's folder."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and (value.startswith("./") or value.startswith("../")):
        return str((base / value).absolute())
    if isinstance(value, (dict, list)):
        _refuse(file, f"stage {name!r}: a nested table or list is no option value")
    return str(value)


def _check(file: Path, name: str, parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Parse the stage's command line with its command's parser; its error in one line."""
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(list(argv[1:]))
    except SystemExit:
        lines = said.getvalue().strip().splitlines()
        reason = lines[-1].split(" error: ", 1)[-1] if lines else "refused"
        _refuse(file, f"stage {name!r}: {reason}", hint=f"`mmbright {argv[0]} --help`")


def _either(commands: Sequence[str]) -> str:
    return " or ".join(commands)


def _refuse(
    file: Path,
    problem: str,
    *,
    expected: str | None = None,
    found: str | None = None,
    hint: str | None = None,
) -> NoReturn:
    raise InputError(problem, source=str(file), expected=expected, found=found, hint=hint)
