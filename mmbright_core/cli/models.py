"""``mmbright models``: list the model catalogue's presets (``retrieval/catalogue/``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from mmbright_core.cli.options import Command, add_command, add_task

FORMATS = ("table", "json")
_COLUMNS = (
    "preset",
    "paper",
    "model",
    "revision",
    "backend",
    "pooling",
    "max_len",
    "fusion",
    "images",
    "tasks",
    "published",
    "instructions",
    "batch",
    "upstream_bugs",
)
_REVISIONS = "Revisions (the official harness pins none), where each comes from or why none:"
_DEPARTURES = "Departures from the official harness:"
_BATCHING = "Batching (texts per forward pass; padding moves a vector's last bits):"

MODELS_COMMAND = Command(
    "models",
    "list the model presets: the models of the paper's tables",
    """List every preset of the model catalogue: the checkpoint and its pinned revision, the
    backend that runs it, pooling, truncation, image fusion and preprocessing, the tasks the
    official harness runs it on, its published average (nDCG@10 x100), its instruction sets
    and the tasks on which a defect of the official code changes the published number. Below
    the table: where each revision comes from (or why a model is unpinned), how each batches
    its texts, each departure from the official harness, and each defect.
    Run one with: mmbright run --model-preset NAME --task N.""",
)


def register(subparsers: Any) -> None:
    """Add the ``models`` subcommand."""
    parser = add_command(subparsers, MODELS_COMMAND)
    add_task(parser, required=False, help="only the presets the official harness runs on task N")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Print the presets as a table or as JSON."""
    from mmbright_core.retrieval.catalogue.presets import presets

    chosen = presets(args.task)
    if args.format == "json":
        print(json.dumps([preset_record(p) for p in chosen], indent=2, ensure_ascii=False))
    else:
        print(table([_row(p) for p in chosen]))
        print(f"\n{_REVISIONS}")
        for preset in chosen:
            print(f"{preset.name}: {preset.revision_source}")
        print(f"\n{_BATCHING}")
        for preset in chosen:
            print(f"{preset.name}: {preset.batch_composition}")
        departures = [f"{p.name}: {note}" for p in chosen for note in p.departures]
        if departures:
            print(f"\n{_DEPARTURES}", *departures, sep="\n")
        for preset in chosen:
            for bug in preset.upstream_bugs:
                print(f"\n{preset.name}, Task {bug.task}: {bug.effect}")
    return 0


def preset_record(preset: Any) -> dict[str, Any]:
    """Return a preset as a JSON-ready dict, with the instruction sets it can run with."""
    from mmbright_core.retrieval.catalogue.image_preprocessing import image_preprocessing

    record = dataclasses.asdict(preset)
    record["tasks"] = list(preset.tasks)
    record["instruction_sets"] = list(preset.instruction_sets())
    images = image_preprocessing(preset)
    record["image_preprocessing"] = None if images is None else images.text
    return record


def _row(preset: Any) -> tuple[str, ...]:
    from mmbright_core.retrieval.catalogue.image_preprocessing import image_preprocessing

    published = " ".join(f"T{p.task} {p.value:.1f}" for p in preset.published) or "-"
    images = image_preprocessing(preset)
    return (
        preset.name,
        preset.paper,
        preset.model or "-",
        preset.revision or ("-" if preset.model is None else "unpinned"),
        preset.backend,
        preset.pooling or "-",
        "-" if preset.max_length is None else str(preset.max_length),
        preset.fusion,
        "-" if images is None else images.label,
        ",".join(str(t) for t in preset.tasks),
        published,
        ",".join(preset.instruction_sets()),
        str(preset.options.get("batch_size", "default")),
        ",".join(f"T{b.task}" for b in preset.upstream_bugs) or "-",
    )


def table(rows: list[tuple[str, ...]]) -> str:
    """Format rows under :data:`_COLUMNS` as aligned plain-text columns."""
    every = [_COLUMNS, *rows]
    widths = [max(len(row[i]) for row in every) for i in range(len(_COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in every
    )
