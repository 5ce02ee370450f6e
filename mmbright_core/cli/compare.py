"""``mmbright compare``: paired comparison of two runs of one task, per domain and pooled.

Both runs are scored the benchmark's way (exclusions before the top-1000 cut, docs/protocol.md,
Per-task protocol) with per-query nDCG@10, paired on the queries both were scored on, and tested
(randomisation test with a fixed seed, t-test, bootstrap interval, Holm over domains). The most-hurt
queries of B against A are listed; ``--report`` also writes a self-contained HTML report with their
query images and rank diffs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmbright_core.cli.options import Command, add_command, add_task_options, declare_later
from mmbright_core.task_table import MAIN_SCORE, RUN_DEPTH

if TYPE_CHECKING:
    import pandas as pd

    from mmbright_core.analysis.compare import Comparison
    from mmbright_core.analysis.rewrite_stage import RewriteStage
    from mmbright_core.analysis.two_stage import TwoStage
    from mmbright_core.data.sources import Source
    from mmbright_core.io.ocr_words import OcrWords
    from mmbright_core.present.report import QueryDetail
    from mmbright_core.types import Run

MEASURE = MAIN_SCORE
# The names of ``analysis.slices.SLICES``, written out so that ``--help`` needs no pandas
# (a test checks that the two agree).
_SLICES = ("domain", "images", "decodable", "length", "ocr-words", "image-size", "aspect", "tag")
_IMAGE_SLICES = ("ocr-words", "image-size", "aspect")


COMPARE_COMMAND = Command(
    "compare",
    "paired comparison of two runs (delta, CI, p-values, most-hurt queries)",
    f"""Compare run B against run A on one task: per-domain and pooled mean {MEASURE} delta
    (B - A), bootstrap 95% CI, randomisation and t-test p-values (raw and Holm over domains),
    wins/ties/losses, and the queries B lost most on.""",
)


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand to the ``mmbright`` parser."""
    parser = add_command(subparsers, COMPARE_COMMAND)
    parser.add_argument(
        "run_a", metavar="RUN_A", help="baseline: run file or official outputs folder"
    )
    parser.add_argument("run_b", metavar="RUN_B", help="compared run: run file or outputs folder")
    add_task_options(parser, domains="every domain of the runs")
    parser.add_argument("--format", choices=("tsv", "json"), default="tsv")
    parser.add_argument("--report", metavar="HTML", help="also write a self-contained HTML report")
    parser.add_argument(
        "--by",
        choices=_SLICES,
        help="also print the image effect (mean delta, CI, wins/ties/losses) per group of "
        "this slice of the queries",
    )
    declare_later(parser, declare_tests)
    parser.set_defaults(handler=run)


def declare_tests(parser: argparse.ArgumentParser) -> None:
    """Add the test settings; on first use (their defaults live beside numpy)."""
    from mmbright_core.analysis.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    parser.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help=f"seed of the randomisation test and bootstrap (default {DEFAULT_SEED})",
    )
    parser.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"resamples of both (default {DEFAULT_RESAMPLES})",
    )
    parser.add_argument(
        "--top", type=int, default=10, help="most-hurt queries to list (default 10)"
    )


def run(args: argparse.Namespace) -> int:
    """Compare the two runs and print the result; return the exit status."""
    from mmbright_core.analysis.compare import compare_runs, most_hurt
    from mmbright_core.analysis.slices import with_tags
    from mmbright_core.analysis.table import source_results_table
    from mmbright_core.cli.compare_output import print_json, print_tsv
    from mmbright_core.data.sources import open_source
    from mmbright_core.io.atomic import check_destination
    from mmbright_core.task_runs import Scope, load_task_runs

    if args.report:
        check_destination(args.report)  # before the work and anything printed, not after
    source = open_source(args.source)
    # A domain named twice is compared once: repeating its queries would shrink the CIs.
    domains = list(dict.fromkeys(map(source.check_domain, args.domains))) if args.domains else None
    names = _names(args.run_a, args.run_b)
    scope = Scope(args.task, domains, args.protocol, args.negatives)
    runs = {
        name: load_task_runs(source, scope, path)
        for name, path in zip(names, (args.run_a, args.run_b), strict=True)
    }
    chosen = domains or sorted({d for by_domain in runs.values() for d in by_domain})
    table = source_results_table(
        source,
        args.task,
        runs,
        domains=chosen,
        protocol=args.protocol,
        measures=[MEASURE],
        negatives=args.negatives,
    )
    comparison = compare_runs(
        table, names[0], names[1], MEASURE, seed=args.seed, n_resamples=args.resamples
    )
    tags = _read_tags(args.source, args.task, args.protocol)
    hurt = with_tags(most_hurt(comparison, args.top), tags)
    sliced = _sliced(source, args, comparison, chosen, tags) if args.by else None
    if args.format == "json":
        print_json(comparison, hurt, sys.stdout, sliced)
    else:
        print_tsv(comparison, hurt, sys.stdout, sliced, args.by)
    if args.report:
        stages = _stages(source, args, names, runs, table)
        _write_report(source, args, runs, comparison, hurt, tags, stages)
    return 0


def _sliced(
    source: Source,
    args: argparse.Namespace,
    comparison: Comparison,
    domains: list[str],
    tags: Mapping[tuple[str, str], list[str]],
) -> pd.DataFrame:
    """The image effect by ``--by``; the image slices read the query images' features."""
    from mmbright_core.analysis.slices import slice_effect
    from mmbright_core.analysis.table import query_image_features
    from mmbright_core.retrieval.cache.store import default_cache_dir

    features = None
    if args.by in _IMAGE_SLICES:
        features = query_image_features(
            source,
            args.task,
            domains,
            protocol=args.protocol,
            ocr_cache=default_cache_dir(),
            ocr_words=_recorded_words(args.run_b, args.run_a),
        )
    return slice_effect(comparison, args.by, features=features, tags=tags)


def _write_report(
    source: Source,
    args: argparse.Namespace,
    runs: Mapping[str, Mapping[str, Run]],
    comparison: Comparison,
    hurt: pd.DataFrame,
    tags: Mapping[tuple[str, str], list[str]],
    stages: tuple[TwoStage | None, RewriteStage | None],
) -> None:
    """Write ``--report``: the comparison, the most-hurt queries' details and the stages."""
    from mmbright_core.io.atomic import atomic_write_text
    from mmbright_core.present.report import comparison_report

    details = _details(source, args.task, args.protocol, args.negatives, runs, hurt)
    two_stage, rewrite = stages
    page = comparison_report(
        comparison, details=details, top=args.top, tags=tags, two_stage=two_stage, rewrite=rewrite
    )
    atomic_write_text(args.report, page)
    print(f"report written to {args.report}", file=sys.stderr)


def _stages(
    source: Source,
    args: argparse.Namespace,
    names: tuple[str, str],
    runs: Mapping[str, Mapping[str, Run]],
    table: pd.DataFrame,
) -> tuple[TwoStage | None, RewriteStage | None]:
    """The report's stages: a reranked run with its first stage, a rewritten one with its plain.

    Only the two runs compared are loaded: each is found only when it is the other one.
    """
    from mmbright_core.analysis.lineage import Lineage, recorded_config
    from mmbright_core.analysis.rewrite_stage import find_rewrite
    from mmbright_core.analysis.two_stage import find_first_stage
    from mmbright_core.task_runs import read_task_outputs

    paths = (args.run_a, args.run_b)
    configs = {
        n: recorded_config(read_task_outputs(p, args.task)) if Path(p).is_dir() else None
        for n, p in zip(names, paths, strict=True)
    }
    lineages = {n: Lineage.of(c) for n, c in configs.items()}
    stages = find_first_stage(
        names, runs, lineages, lambda d: source.judgments(args.task, d, args.protocol).qrels
    )
    return stages, find_rewrite(names, configs, lambda plain, rewritten: table, stages)


def _recorded_words(*paths: str) -> OcrWords | None:
    """The OCR words the first of ``paths`` that is an OCR run's outputs folder recorded."""
    from mmbright_core.io.official import read_recorded_words

    for path in paths:
        if Path(path).is_dir():
            words = read_recorded_words(path)
            if words is not None:
                return words
    return None


def _names(path_a: str, path_b: str) -> tuple[str, str]:
    a, b = Path(path_a).name or path_a, Path(path_b).name or path_b
    return (f"A:{a}", f"B:{b}") if a == b else (a, b)


def _read_tags(source: str, task: int, protocol: str) -> dict[tuple[str, str], list[str]]:
    """The failure tags of the task's queries, from the notes file when there is one."""
    from mmbright_core.notes import scope_tags

    path, tags = scope_tags(source, task, protocol)
    if path is not None:
        print(f"failure tags read from {path} ({len(tags)} annotated queries)", file=sys.stderr)
    return tags


def _details(
    source: Source,
    task: int,
    protocol: str,
    negatives: str,
    runs: Mapping[str, Mapping[str, Run]],
    hurt: pd.DataFrame,
) -> dict[tuple[str, str], QueryDetail]:
    from mmbright_core.analysis.rankdiff import rank_diff
    from mmbright_core.present.report import QueryDetail
    from mmbright_core.ranking import top_k

    run_a, run_b = runs.values()
    out = {}
    for domain, query_id in zip(hurt["domain"], hurt["query_id"], strict=True):
        data = source.judgments(task, domain, protocol, negatives=negatives)
        query = next(q for q in data.queries if q.query_id == query_id)
        excluded = data.excluded.get(query_id, ())
        a = top_k(run_a.get(domain, {}).get(query_id, {}), RUN_DEPTH, excluded)
        b = top_k(run_b.get(domain, {}).get(query_id, {}), RUN_DEPTH, excluded)
        images = [(i.path, source.query_image_bytes(domain, i.path)) for i in query.images]
        out[(domain, query_id)] = QueryDetail(
            query.text, images, rank_diff(data.qrels.get(query_id, {}), a, b)
        )
    return out
