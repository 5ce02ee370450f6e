"""``mmbright rerank``: rerank the top of a first-stage run and write a new run beside it."""

from __future__ import annotations

import argparse
from typing import Any

from mmbright_core.cli.options import (
    Command,
    add_command,
    add_task_options,
    add_wait,
    claimant,
)

RERANK_COMMAND = Command(
    "rerank",
    "rerank the top of a first-stage run (cross-encoder, MTEB, LLM or plugin)",
    """Rerank the top --depth documents of each query of RUN (an outputs folder or a run file)
    and write a run in the official layout whose config.json records the first stage (its
    fingerprint and configuration), the depth and the reranker. Documents below the depth
    keep their first-stage order beneath the reranked ones. Answers are cached as they come,
    so a killed job resumes without asking again.""",
)


def register(subparsers: Any) -> None:
    """Add the ``rerank`` subcommand."""
    parser = add_command(subparsers, RERANK_COMMAND)
    parser.add_argument("run", metavar="RUN", help="the first-stage run: a folder or a file")
    add_task_options(parser, domains="those the run covers")
    parser.add_argument(
        "--reranker",
        required=True,
        metavar="SPEC",
        help="cross-encoder:NAME (sentence-transformers, hub name or folder), mteb:NAME "
        "(e.g. mteb:mteb/baseline-random-cross-encoder), llm:MODEL (with --endpoint) or "
        "MODULE:FACTORY",
    )
    parser.add_argument("--depth", type=int, default=100, help="documents reranked per query")
    parser.add_argument("--endpoint", help="llm: the OpenAI-compatible API's base URL")
    parser.add_argument("--device", help="torch device of model rerankers (cpu, cuda)")
    parser.add_argument("--batch-size", type=int, help="pairs per forward pass")
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="cross-encoder: and mteb: run the model's own code from the hub, which "
        "config.json records. MMBRIGHT_ALLOW_REMOTE_CODE=0 forbids it",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another reranker option, e.g. max_length=512, mode=listwise, or mode=bright "
        "(BRIGHT's rerank.py) with topk=N (its --k)",
    )
    parser.add_argument(
        "--cache-dir", help="answer cache root (default: $MMBRIGHT_CACHE or ~/.cache/mmbright)"
    )
    parser.add_argument("--out", required=True, help="output root folder")
    add_wait(parser)
    parser.set_defaults(handler=handle)


def reranker_options(args: argparse.Namespace) -> dict[str, Any]:
    """The reranker's options: ``--option`` pairs, then the flags that are set."""
    from mmbright_core.cli.run import parse_options

    options = parse_options(args.option)
    flags = {"endpoint": args.endpoint, "device": args.device, "batch_size": args.batch_size}
    flags["trust_remote_code"] = True if args.trust_remote_code else None
    options.update({name: value for name, value in flags.items() if value is not None})
    if args.reranker.startswith("llm:") and args.cache_dir is not None:
        options.setdefault("cache_dir", args.cache_dir)  # the chat answers' cache too
    return options


def handle(args: argparse.Namespace) -> int:
    """Rerank, then print each domain's nDCG@10 before and after."""
    from mmbright_core.data.sources import open_source
    from mmbright_core.data.view import TaskView
    from mmbright_core.metrics.official import official_metrics
    from mmbright_core.rerank.first_stage import load_first_stage
    from mmbright_core.rerank.registry import build
    from mmbright_core.rerank.stage import check_depth, check_reranker_task, rerank_task

    check_depth(args.depth)
    # The reranker first: a spec that cannot work fails before the run is read.
    reranker = build(args.reranker, **reranker_options(args))
    check_reranker_task(reranker, args.task)
    source = open_source(args.source)
    view = TaskView(source, args.task, args.protocol)
    first = load_first_stage(view, args.run, domains=args.domains)
    outcome = rerank_task(
        view,
        first,
        reranker,
        args.out,
        depth=args.depth,
        domains=args.domains,
        negatives=args.negatives,
        cache_dir=args.cache_dir,
        claimant=claimant(args),
    )
    print("domain\tfirst stage\treranked")
    for domain in [*outcome.domains, *outcome.kept]:
        qrels = source.judgments(args.task, domain.domain, outcome.config.protocol).qrels
        before = official_metrics(qrels, first.runs.get(domain.domain, {}))["NDCG@10"]
        note = " (reused)" if domain.reused else ""
        after = domain.metrics["NDCG@10"]
        print(f"{domain.domain}\tnDCG@10 {100 * before:.1f}\t{100 * after:.1f}{note}")
    print(f"wrote {outcome.task_dir}")
    return 0
