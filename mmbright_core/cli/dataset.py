"""``mmbright stats`` and ``mmbright qrels``: look into a copy of MM-BRIGHT.

``stats`` counts queries, corpus items, judgments and images per domain and task (docs/protocol.md,
The benchmark); ``qrels`` writes one task's judgments for some domains as TREC qrels, the protocol
named, with query ids ``<domain>/<query id>`` as ``mmbright run`` writes them in ``run.trec``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from mmbright_core.cli.options import (
    Command,
    add_command,
    add_domains,
    add_protocol,
    add_source,
    add_task,
)

STATS_COMMAND = Command(
    "stats",
    "count queries, corpus items, judgments and images per domain and task",
    """Count each task on each domain of a dataset copy, with a total per task.""",
)

QRELS_COMMAND = Command(
    "qrels",
    "write one task's judgments for some domains as TREC qrels",
    """Build a task's qrels under its protocol and write them as TREC qrels, query ids written
    <domain>/<query id> as in the run.trec of mmbright run, so the two score together with
    mmbright eval --qrels --run. Queries with no judgment cannot appear in TREC qrels; their
    count goes to stderr.""",
)


def register(subparsers: Any) -> None:
    """Add the ``stats`` and ``qrels`` subcommands to the ``mmbright`` parser."""
    stats = add_command(subparsers, STATS_COMMAND)
    add_source(stats)
    add_task(stats, required=False, several=True, help="default: all")
    add_domains(stats, default="every domain of the source")
    add_protocol(stats)
    stats.add_argument(
        "--format",
        choices=("tsv", "json", "table"),
        default="tsv",
        help="tsv/json: a row per task and domain; table: the paper's per-domain layout",
    )
    stats.set_defaults(handler=run_stats)

    qrels = add_command(subparsers, QRELS_COMMAND)
    add_source(qrels)
    add_task(qrels)
    add_domains(qrels, required=True)
    add_protocol(qrels)
    qrels.add_argument("--out", metavar="FILE", help="destination (default: standard output)")
    qrels.set_defaults(handler=run_qrels)


def run_stats(args: argparse.Namespace) -> int:
    """Print the counts of ``mmbright stats``."""
    from mmbright_core.data.sources import open_source
    from mmbright_core.data.stats import STATS_COLUMNS, TASKS, collect_stats, spec_table

    source = open_source(args.source)
    tasks = args.task or TASKS  # all by default: those a partial copy holds
    rows = collect_stats(source, tasks, args.domains, args.protocol, held_only=not args.task)
    if args.format == "json":
        json.dump([asdict(r) for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if args.format == "table":
        table = spec_table(rows)
        columns = list(dict.fromkeys(k for line in table for k in line))
        lines = [[str(line.get(c, "")) for c in columns] for line in table]
    else:
        columns = list(STATS_COLUMNS)
        lines = [[str(v) for v in asdict(r).values()] for r in rows]
    for line in [columns, *lines]:
        sys.stdout.write("\t".join(line) + "\n")
    return 0


def run_qrels(args: argparse.Namespace) -> int:
    """Write the qrels of ``mmbright qrels``."""
    from mmbright_core.data.ids import domain_query_id
    from mmbright_core.data.sources import open_source
    from mmbright_core.io.qrels import write_qrels

    source = open_source(args.source)
    qrels: dict[str, dict[str, int]] = {}
    empty = 0
    chosen = [source.check_domain(d) for d in dict.fromkeys(args.domains)]  # each once
    for domain in chosen:
        data = source.judgments(args.task, domain, args.protocol)
        qrels.update((domain_query_id(domain, q), docs) for q, docs in data.qrels.items())
        empty += len(data.report.empty_qrels)
    if args.out:
        write_qrels(args.out, qrels, format="trec")
    else:
        # write_qrels owns the TREC format and its checks; stream its file to stdout.
        with tempfile.TemporaryDirectory() as folder:
            written = write_qrels(Path(folder) / "qrels.txt", qrels, format="trec")
            sys.stdout.write(written.read_text(encoding="utf-8"))
    if empty:
        print(f"{empty} queries have no judgment and are not in the qrels", file=sys.stderr)
    return 0
