"""``mmbright pipeline run FILE``: run the stages of a pipeline file, each one command."""

from __future__ import annotations

import argparse
from typing import Any

from mmbright_core.cli.options import Command, add_command, add_wait

PIPELINE_COMMAND = Command(
    "pipeline",
    "run a pipeline file: rewrite, run, rerank and fuse stages, each reused once it ran",
    """Run the stages of a pipeline file (TOML) in order, each as its own mmbright command
    (rewrite, run, rerank, fuse) writing its folder in the output folder, in the official
    layout. A stage that already ran with the same command line and inputs is reused; a
    stopped pipeline run again resumes where it stopped and writes the same bytes.""",
)


def register(subparsers: Any) -> None:
    """Add the ``pipeline`` subcommand and its ``run`` action."""
    parser = add_command(subparsers, PIPELINE_COMMAND)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    run = actions.add_parser("run", help="run the stages of FILE", description=parser.description)
    run.add_argument("file", metavar="FILE", help="the pipeline file (TOML)")
    run.add_argument("--out", help="the output folder (default: the file's [pipeline] out)")
    run.add_argument(
        "--rerun-changed",
        action="store_true",
        help="a stage that ran with other options or inputs: delete its folder and run it "
        "again (default: refuse)",
    )
    add_wait(run)
    run.set_defaults(
        handler=handle, interrupted="finished stages are kept; run the pipeline again to resume"
    )


def handle(args: argparse.Namespace) -> int:
    """Check the whole file, then run its stages."""
    from mmbright_core.cli import build_parser, main
    from mmbright_core.cli.options import claimant
    from mmbright_core.pipeline.plan import read_plan
    from mmbright_core.pipeline.stages import run_plan

    plan = read_plan(args.file, _parsers(build_parser()), args.out)
    ran = run_plan(plan, main, claimant=claimant(args), rerun_changed=args.rerun_changed)
    print("stage\tcommand\toutputs")
    for stage in ran:
        note = " (reused)" if stage.reused else ""
        print(f"{stage.stage.name}\t{stage.stage.command}\t{stage.outputs[:12]}{note}")
    print(f"wrote {plan.out}")
    return 0


def _parsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parsers of the commands a stage may run, from ``mmbright``'s own parser."""
    from mmbright_core.pipeline.plan import SLOTS

    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: commands.choices[name] for name in SLOTS}
