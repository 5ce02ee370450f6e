"""``mmbright fuse``: fuse runs of one task (RRF, CombSUM, CombMNZ, weighted sum) into a new run."""

from __future__ import annotations

import argparse
from typing import Any

from mmbright_core.cli.options import Command, add_command, add_task_options, add_wait
from mmbright_core.fusion import DEFAULT_K, METHODS, NORMS

FUSE_COMMAND = Command(
    "fuse",
    "fuse runs of one task (RRF, CombSUM, CombMNZ, weighted sum) into a new run",
    """Fuse two runs or more of one task (outputs folders or run files) and write a run in the
    official layout whose config.json records the method, its parameters and, as lineage,
    each input (its path, the sha256 of its scores, its retriever and model). The scores are
    ranx's fusion's; ties are ranked by doc id.""",
)


def register(subparsers: Any) -> None:
    """Add the ``fuse`` subcommand."""
    parser = add_command(subparsers, FUSE_COMMAND)
    parser.add_argument("runs", nargs="+", metavar="RUN", help="a run: a folder or a file")
    add_task_options(parser, domains="those any run covers")
    parser.add_argument("--method", default="rrf", help=f"one of {', '.join(METHODS)}")
    parser.add_argument("--k", type=int, default=DEFAULT_K, help="RRF's constant (rrf)")
    parser.add_argument(
        "--norm",
        default="min-max",
        help=f"the score normalisation of combsum, combmnz and wsum: {', '.join(NORMS)} or none",
    )
    parser.add_argument(
        "--weights", type=float, nargs="+", metavar="W", help="wsum: one weight per RUN, in order"
    )
    parser.add_argument("--out", required=True, help="output root folder")
    add_wait(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Fuse, then print each domain's nDCG@10."""
    from mmbright_core.analysis.fused_run import fuse_task
    from mmbright_core.cli.options import claimant
    from mmbright_core.data.sources import open_source
    from mmbright_core.data.view import TaskView
    from mmbright_core.fusion import check_fusion
    from mmbright_core.rerank.first_stage import load_first_stage

    norm = None if args.norm == "none" else args.norm
    fusion = {"method": args.method, "k": args.k, "norm": norm, "weights": args.weights}
    check_fusion(len(args.runs), **fusion)  # before any run is read
    source = open_source(args.source)
    view = TaskView(source, args.task, args.protocol)
    inputs = [load_first_stage(view, run, domains=args.domains) for run in args.runs]
    outcome = fuse_task(
        view,
        inputs,
        args.out,
        claimant=claimant(args),
        domains=args.domains,
        negatives=args.negatives,
        **fusion,
    )
    print("domain\tfused")
    for domain in [*outcome.domains, *outcome.kept]:
        note = " (reused)" if domain.reused else ""
        print(f"{domain.domain}\tnDCG@10 {100 * domain.metrics['NDCG@10']:.1f}{note}")
    print(f"wrote {outcome.task_dir}")
    return 0
