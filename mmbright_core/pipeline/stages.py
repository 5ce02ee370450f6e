"""Run a checked pipeline stage by stage, each stage reused when it already ran as asked.

Each stage runs its command line (:mod:`.plan`) in the output folder, writing the folder
named after it, and then its record ``<name>.stage.json`` beside that folder: the command
line, the sha256 of each input stage's outputs, and the sha256 of its own outputs. A stage
whose record holds the same command line and inputs, and whose folder still holds what the
record says, is reused without running. A stage with no record (a pipeline stopped during
it) runs again, and its command resumes what it finished (docs/commands.md, "Output
folders"). A stage whose record differs (its options, or an input that changed) is refused,
or, when told to, its folder and record are deleted and it runs afresh: a folder never
mixes two configurations. The whole output folder is claimed for the run
(:mod:`mmbright_core.io.claims`), so two pipelines never write one folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, MMBrightError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.io.claims import Claimant, claimed
from mmbright_core.pipeline.plan import Plan, Stage

INTERRUPTED = 130
"""A command's exit status after Ctrl-C."""
RECORD_FORMAT = 1


@dataclass(frozen=True)
class Ran:
    """What became of one stage.

    Attributes:
        stage: The stage.
        reused: Whether its outputs were reused without running it.
        outputs: The sha256 of its outputs.
    """

    stage: Stage
    reused: bool
    outputs: str


def record_path(out: Path, name: str) -> Path:
    """The record of stage ``name``: ``<name>.stage.json`` beside its folder."""
    return out / f"{name}.stage.json"


def outputs_digest(folder: Path) -> str:
    """The sha256 of every file under ``folder`` (its path and bytes; hidden files aside)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        relative = path.relative_to(folder)
        if any(part.startswith(".") for part in relative.parts):
            continue  # lock files and the atomic writes' temporary files
        digest.update(relative.as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def run_plan(
    plan: Plan,
    command: Callable[[Sequence[str]], int],
    *,
    claimant: Claimant,
    rerun_changed: bool = False,
    say: Callable[[str], None] = print,
) -> list[Ran]:
    """Run the stages of ``plan`` in order, each through ``command`` (``mmbright``'s own entry).

    Args:
        plan: The checked pipeline.
        command: Runs one command line (without ``mmbright``) and returns its exit status.
        claimant: Who claims the output folder while the pipeline runs.
        rerun_changed: Run afresh a stage whose record differs, instead of refusing.
        say: Told one line as each stage starts or is reused.

    Raises:
        InputError: A stage's record differs from the file and ``rerun_changed`` is off.
        MMBrightError: A stage's command failed (it said why on stderr).
        KeyboardInterrupt: A stage was interrupted.
    """
    plan.out.mkdir(parents=True, exist_ok=True)
    done: dict[str, str] = {}
    ran: list[Ran] = []
    with claimed(plan.out, claimant), _inside(plan.out):
        for stage in plan.stages:
            spec = _spec(stage, done)
            recorded = _read_record(record_path(plan.out, stage.name))
            folder = plan.out / stage.name
            if recorded is not None and _reusable(plan, stage, spec, recorded, rerun_changed):
                say(f"stage {stage.name}: reused ({stage.name}/)")
                done[stage.name] = recorded["outputs"]
                ran.append(Ran(stage, True, recorded["outputs"]))
                continue
            if recorded is not None:  # told to run it afresh: nothing of the old run stays
                record_path(plan.out, stage.name).unlink()
                shutil.rmtree(folder, ignore_errors=True)
            say(f"stage {stage.name}: mmbright {shlex.join(stage.argv)}")
            status = command(list(stage.argv))
            if status == INTERRUPTED:
                raise KeyboardInterrupt
            if status != 0:
                raise MMBrightError(
                    f"stage {stage.name!r} stopped (exit status {status}); the stages before it "
                    "are kept, and running the pipeline again reuses them"
                )
            digest = outputs_digest(folder)
            record = {**spec, "format": RECORD_FORMAT, "outputs": digest}
            text = json.dumps(record, indent=2, sort_keys=True) + "\n"
            atomic_write_text(record_path(plan.out, stage.name), text)
            done[stage.name] = digest
            ran.append(Ran(stage, False, digest))
    return ran


@contextlib.contextmanager
def _inside(folder: Path) -> Iterator[None]:
    """Run the ``with`` block in ``folder``: the stages' paths, as recorded, are relative to it.

    A pipeline's outputs then hold no path to where it was written, and two pipelines of one
    file in two folders write the same bytes.
    """
    before = Path.cwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def _spec(stage: Stage, done: Mapping[str, str]) -> dict[str, Any]:
    return {
        "stage": stage.name,
        "argv": ["mmbright", *stage.argv],
        "inputs": {name: done[name] for name in stage.inputs},
    }


def _read_record(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (ValueError, UnicodeDecodeError):
        record = None
    if not isinstance(record, dict) or not isinstance(record.get("outputs"), str):
        raise InputError(
            "not a stage record",
            source=str(path),
            hint="Delete it and its stage's folder, and run the pipeline again",
        )
    return record


def _reusable(
    plan: Plan, stage: Stage, spec: Mapping[str, Any], recorded: Mapping[str, Any], rerun: bool
) -> bool:
    """Whether the recorded stage is this one; raises where it is not and ``rerun`` is off."""
    now = outputs_digest(plan.out / stage.name)
    if all(recorded.get(key) == value for key, value in spec.items()):
        if now == recorded["outputs"]:
            return True
        why = "its outputs changed since it ran"
    else:
        why = "it ran with " + _difference(spec, recorded)
    if rerun:
        return False
    raise InputError(
        f"stage {stage.name!r}: {why}",
        source=str(plan.out / stage.name),
        hint="Pass --rerun-changed to delete its folder and run it again, or choose another "
        "output folder (--out)",
    )


def _difference(spec: Mapping[str, Any], recorded: Mapping[str, Any]) -> str:
    before, now = list(recorded.get("argv") or []), list(spec["argv"])
    if before != now:
        gone = shlex.join(w for w in before if w not in now) or "(nothing)"
        new = shlex.join(w for w in now if w not in before) or "(nothing)"
        return f"another command line (recorded with `{gone}`, now with `{new}`)"
    changed = [
        name
        for name, digest in spec["inputs"].items()
        if (recorded.get("inputs") or {}).get(name) != digest
    ]
    return f"other inputs ({', '.join(changed)} changed since)"
