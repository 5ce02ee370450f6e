"""``mmbright eval``: score a run against qrels, like ``trec_eval -q``, with exact values.

The run and qrels are read by ``mmbright_core.io`` (any supported format, gzip included),
so malformed files fail with one message naming the file and line. Values are printed at
full precision (``repr``) so they can be compared with pytrec_eval to the last bit, and
the counts (evaluated, dropped, missing, extra queries) are always printed: docs/protocol.md,
Scoring requires coverage to be shown whichever averaging rule is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from mmbright_core.cli.options import Command, add_command, add_task_options
from mmbright_core.errors import InputError, InputWarning
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.types import EvalResult, IdCheck, Qrels, Run

if TYPE_CHECKING:
    from mmbright_core.benchmark import TaskScores
    from mmbright_core.io.runs import RunColumns

DEFAULT_MEASURES = (MAIN_SCORE,)


EVAL_COMMAND = Command(
    "eval",
    "score a run against qrels (trec_eval-compatible)",
    """Score a run against qrels and print per-measure means, optionally per query, as TSV rows
    (measure, query_id or 'all', value) or JSON.""",
)


def register(subparsers: Any) -> None:
    """Add the ``eval`` subcommand to the ``mmbright`` parser."""
    parser = add_command(subparsers, EVAL_COMMAND)
    inputs = parser.add_argument_group("inputs")
    inputs.add_argument(
        "--qrels", metavar="FILE", help="qrels: TREC (qid 0 docid rel) or JSON; '-' for stdin"
    )
    inputs.add_argument(
        "--run",
        metavar="PATH",
        help="run: TREC, JSON (scores.json) or parquet; '-' for stdin; with --source also an "
        "official outputs folder (<subdir>/<domain>/scores.json)",
    )
    bench = parser.add_argument_group(
        "benchmark task (instead of --qrels: judgments, exclusions and the top-1000 cut "
        "come from the task's protocol; prints per-domain scores and their macro average)"
    )
    add_task_options(
        bench, required=False, task_help="required with --source", domains="those the run covers"
    )
    parser.add_argument(
        "--measure",
        "-m",
        dest="measures",
        metavar="M",
        nargs="+",
        action="extend",
        help="measures such as nDCG@10 AP R@100 RR (repeatable; default: nDCG@10)",
    )
    parser.add_argument(
        "--missing",
        choices=("skip", "zero"),
        default="skip",
        help="judged queries absent from the run: skip them (pytrec_eval, the default) "
        "or count them as 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--per-query",
        action="store_true",
        help="also print one row per query and measure (JSON output always includes them)",
    )
    parser.add_argument("--format", choices=("tsv", "json"), default="tsv", help="output format")
    parser.set_defaults(handler=run_eval)


def load_inputs(args: argparse.Namespace) -> tuple[Qrels, Run | RunColumns]:
    """Build the (qrels, run) pair to score from the parsed options.

    A parquet run stays columns, which ``evaluate`` scores without building the mapping.

    Raises:
        InputError: An input is missing or malformed.
    """
    from mmbright_core.io.qrels import read_qrels
    from mmbright_core.io.runs import read_run_to_score

    if args.qrels is None or args.run is None or args.source is not None:
        raise InputError(
            "nothing to score",
            expected="both --qrels FILE and --run FILE, or --source S --task N --run PATH",
            found=f"--qrels {args.qrels or '(none)'}, --run {args.run or '(none)'}",
        )
    if args.qrels == "-" and args.run == "-":
        raise InputError("only one of --qrels and --run can read standard input")
    return read_qrels(_source(args.qrels)), read_run_to_score(_source(args.run))


def _source(value: str) -> Path | IO[bytes]:
    # A ``Path``, not the bare string, which readers would also accept as inline
    # content: an option names a file, so a missing one must be reported as missing.
    return sys.stdin.buffer if value == "-" else Path(value)


def score_benchmark(args: argparse.Namespace) -> TaskScores:
    """Score ``--run`` on ``--task`` of ``--source``, one run per domain.

    Raises:
        InputError: Options are missing or contradictory, or the run is malformed.
    """
    from mmbright_core.benchmark import score_task
    from mmbright_core.data.sources import open_source
    from mmbright_core.data.view import TaskView
    from mmbright_core.task_runs import Scope, load_task_runs, read_task_file

    if args.task is None or args.run is None or args.qrels is not None:
        raise InputError(
            "a benchmark task needs its source, task number and run",
            expected="--source S --task N --run PATH (and no --qrels)",
            found=f"--task {args.task}, --run {args.run}, --qrels {args.qrels}",
        )
    source = open_source(args.source)
    # The policy scoring uses: the judgments read to file the queries are those it scores.
    scope = Scope(args.task, args.domains, args.protocol, args.negatives)
    if args.run == "-":
        runs = read_task_file(source, scope, sys.stdin.buffer, "<stdin>").runs
    else:
        runs = load_task_runs(source, scope, args.run)
    return score_task(
        TaskView(source, args.task, args.protocol),
        runs,
        domains=args.domains,
        measures=tuple(args.measures or DEFAULT_MEASURES),
        missing=args.missing,
        run_name=str(args.run),
        negatives=args.negatives,
    )


def format_benchmark_tsv(scores: TaskScores) -> str:
    """Render one row per domain (values x100, one decimal) and the macro average."""
    names = list(scores.macro)
    counts = ("evaluated", "dropped_empty_qrels", "missing_from_run", "extra_in_run")
    rows = ["\t".join(["domain", *names, *counts])]
    for domain, result in scores.per_domain.items():
        values = [f"{100 * result.aggregate[name]:.1f}" for name in names]
        numbers = [str(getattr(result.counts, key)) for key in counts]
        rows.append("\t".join([domain, *values, *numbers]))
    macro = [f"{100 * scores.macro[name]:.1f}" for name in names]
    rows.append("\t".join([f"macro({len(scores.scored_domains)} domains)", *macro]))
    rows.append(
        f"# task {scores.task}, protocol {scores.protocol}, negatives={scores.negatives}, "
        f"missing={scores.missing}"
    )
    return "".join(row + "\n" for row in rows)


def format_benchmark_json(scores: TaskScores) -> str:
    """Render per-domain results and the macro average at full precision."""
    data = {
        "task": scores.task,
        "protocol": scores.protocol,
        "negatives": scores.negatives,
        "missing": scores.missing,
        "macro": scores.macro,
        "scored_domains": list(scores.scored_domains),
        "domains": {
            domain: {
                "aggregate": result.aggregate,
                "counts": dataclasses.asdict(result.counts),
                "per_query": result.per_query,
            }
            for domain, result in scores.per_domain.items()
        },
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def run_eval(args: argparse.Namespace) -> int:
    """Score and print; the return value is the exit status."""
    from mmbright_core.metrics import evaluate

    if args.source is not None:
        scores = score_benchmark(args)
        if not scores.scored_domains:
            raise InputError(
                "no query of the run can be evaluated in any domain",
                expected="query ids of the task's judged queries",
                found=f"domains {', '.join(scores.per_domain) or '(none)'} with no evaluated query",
                hint="Check the task number and that the run's query ids are the benchmark's",
            )
        for domain, result in scores.per_domain.items():
            _warn_ids(result.ids, f"{domain}: ")
        format_scores = format_benchmark_json if args.format == "json" else format_benchmark_tsv
        sys.stdout.write(format_scores(scores))
        return 0
    qrels, run = load_inputs(args)
    measures = tuple(args.measures or DEFAULT_MEASURES)
    result = evaluate(qrels, run, measures=measures, missing=args.missing)
    _warn_ids(result.ids)
    if result.counts.evaluated == 0:
        # Every mean would be NaN: almost always a run and qrels of different tasks.
        raise InputError(
            "no query can be evaluated",
            expected="judged queries that the run ranks",
            found=", ".join(f"{k} {v}" for k, v in dataclasses.asdict(result.counts).items()),
            hint=_query_id_hint(qrels, run),
        )
    if args.format == "json":
        sys.stdout.write(format_json(result))
    else:
        sys.stdout.write(format_tsv(result, per_query=args.per_query))
    return 0


def _warn_ids(check: IdCheck, where: str = "") -> None:
    # Scores match ids exactly, as trec_eval does; ids that match nothing are said, not fixed.
    from mmbright_core.metrics.id_check import id_warnings  # numpy loads only to score

    for line in id_warnings(check):
        warnings.warn(where + line, InputWarning, stacklevel=2)


def _query_id_hint(qrels: Qrels, run: Run | RunColumns) -> str:
    # mmbright qrels and run.trec write <domain>/<query id>; a domain's scores.json the bare id.
    def qualified(ids: Any) -> bool:
        return bool(ids) and all("/" in i for i in ids)

    run_ids = run if isinstance(run, Mapping) else run.query_ids
    if qualified(qrels) != qualified(run_ids):
        return (
            "The qrels and the run write query ids in different forms (<domain>/<query id> in "
            "mmbright qrels and run.trec, bare in a domain's scores.json); score an outputs "
            "folder with --source S --task N --run FOLDER"
        )
    return "Check that the run and the qrels use the same query ids"


def format_tsv(result: EvalResult, per_query: bool = False) -> str:
    """Render ``trec_eval -q``-style rows: ``measure<TAB>query_id|all<TAB>value``.

    Per-query rows (queries in sorted order) come first, then the means, then the counts.
    """
    names = list(result.aggregate)
    rows: list[str] = []
    if per_query:
        query_ids = sorted({q for name in names for q in result.per_query.get(name, {})})
        for query_id in query_ids:
            for name in names:
                value = result.per_query.get(name, {}).get(query_id)
                if value is not None:
                    rows.append(f"{name}\t{query_id}\t{float(value)!r}")
    rows += [f"{name}\tall\t{float(result.aggregate[name])!r}" for name in names]
    rows += [f"{key}\tall\t{value}" for key, value in dataclasses.asdict(result.counts).items()]
    return "".join(row + "\n" for row in rows)


def format_json(result: EvalResult) -> str:
    """Render ``{"per_query": ..., "aggregate": ..., "counts": ...}`` at full precision."""
    data = {
        "per_query": result.per_query,
        "aggregate": result.aggregate,
        "counts": dataclasses.asdict(result.counts),
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
