"""``mmbright explain``: why a run scored an item so, or where in the image the score came from."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

from mmbright_core.cli.options import (
    Command,
    add_command,
    add_protocol,
    add_source,
    add_task,
    declare_later,
)

EXPLAIN_COMMAND = Command(
    "explain",
    "explain one item's score in a run: its parts, or the image regions behind it",
    """Rebuild the retriever that made RUN (an outputs folder of `mmbright run`, with its
    config.json) and explain the score of --doc for --query: its parts (BM25 terms, the
    query text's and image's parts of a fused score, dense with and without OCR), or with
    --regions where in the query image (or, with --side document, the item's image) it came
    from: occlusion over a grid of cells, each cell's change in the score, or with --versus
    in the margin of --doc over the other item. Positive (red in the PNG): the region raised
    --doc over --versus. Results are cached by content.""",
)


def register(subparsers: Any) -> None:
    """Add the ``explain`` subcommand."""
    parser = add_command(subparsers, EXPLAIN_COMMAND)
    add_source(parser)
    add_task(parser)
    add_protocol(parser)
    parser.add_argument("--run", required=True, help="the run's outputs folder")
    parser.add_argument("--query", required=True, metavar="Q", help="the query id")
    parser.add_argument("--doc", required=True, metavar="D", help="the item explained")
    parser.add_argument(
        "--versus", metavar="D2", help="--regions: a second item (a relevant one below --doc)"
    )
    parser.add_argument("--domain", help="the query's domain (default: the run's that has it)")
    parser.add_argument("--regions", action="store_true", help="occlusion over a grid")
    declare_later(parser, _region_options)
    parser.add_argument("--format", choices=("json", "png"), default="json")
    parser.add_argument(
        "--out",
        help="the file to write (json: instead of printing; png: several images get -2, -3...)",
    )
    parser.add_argument(
        "--allow-import",
        action="append",
        default=[],
        metavar="MODULE:FACTORY",
        help="a plugin the run names, which rebuilding it imports and runs",
    )
    parser.add_argument("--device", help="torch device of the encoders (cpu, cuda)")
    parser.add_argument(
        "--cache-dir", help="cache root (default: $MMBRIGHT_CACHE or ~/.cache/mmbright)"
    )
    parser.set_defaults(handler=handle)


def _region_options(parser: argparse.ArgumentParser) -> None:
    from mmbright_core.retrieval.explanation import FILLS, GRID, MAX_GRID, SIDES

    parser.add_argument(
        "--grid", type=int, default=GRID, help=f"cells per side, 1 to {MAX_GRID} (default {GRID})"
    )
    parser.add_argument(
        "--fill", choices=FILLS, default="mean", help="what fills a cell (default: mean colour)"
    )
    parser.add_argument(
        "--side", choices=SIDES, default="query", help="whose image is occluded (tasks 3-4)"
    )


def handle(args: argparse.Namespace) -> int:
    """Explain, then print JSON or write the PNG overlay."""
    from mmbright_core.errors import InputError

    if args.format == "png" and not args.regions:
        raise InputError("--format png draws the regions grid", hint="Add --regions")
    if args.format == "png" and not args.out:
        raise InputError("--format png writes a file", hint="Give --out FILE.png")
    if args.versus is not None and not args.regions:
        raise InputError("--versus compares two items' regions", hint="Add --regions")
    if args.out:
        from mmbright_core.io.atomic import check_destination

        check_destination(args.out)  # before the work, not after it
    retriever, data, source = _rebuilt(args)
    if not args.regions:
        _print_json(_attributions(retriever, data, source, args), args.out)
        return 0
    from mmbright_core.retrieval.dual.regions import explain_regions
    from mmbright_core.retrieval.explanation import Unavailable

    result = explain_regions(
        retriever,
        data,
        source,
        args.query,
        args.doc,
        versus=args.versus,
        side=args.side,
        grid=args.grid,
        fill=args.fill,
        cache_dir=args.cache_dir,
    )
    if isinstance(result, Unavailable):
        raise InputError(f"no regions to show: {result.reason}")
    if args.format == "json":
        _print_json({**result.to_dict(), "run": str(args.run)}, args.out)
        return 0
    from mmbright_core.io.atomic import atomic_write_bytes
    from mmbright_core.present.region_overlay import legend, overlay, png_info, sentence

    for index, regions in enumerate(result.images):
        path = Path(args.out)
        if index:
            path = path.with_name(f"{path.stem}-{index + 1}{path.suffix}")
        encoded = io.BytesIO()
        overlay(regions).save(encoded, format="PNG", pnginfo=png_info(result, index))
        atomic_write_bytes(path, encoded.getvalue())  # a kill or a full disk leaves no half PNG
        print(f"wrote {path}: {sentence(result, index)} {legend(result)}")
    return 0


def _print_json(value: Any, out: str | None) -> None:
    """Print ``value`` as JSON, or write it to ``out`` and say so."""
    text = json.dumps(value, indent=2)
    if out is None:
        print(text)
        return
    from mmbright_core.io.atomic import atomic_write_text

    atomic_write_text(Path(out), text + "\n")
    print(f"wrote {out}")


def _rebuilt(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The run's retriever (or why not), the query's domain data, and the source."""
    from mmbright_core.analysis.attribution import Unavailable, retriever_from_config
    from mmbright_core.data.sources import open_source
    from mmbright_core.errors import InputError
    from mmbright_core.task_runs import read_task_outputs

    outputs = read_task_outputs(args.run, args.task)
    if not outputs.run_config:
        raise InputError(
            "the run records no configuration to rebuild its retriever from",
            source=str(args.run),
            hint="Explain a run made by `mmbright run` (its folder holds config.json)",
        )
    domain = args.domain or _domain_of(outputs.runs, args.query, str(args.run))
    source = open_source(args.source)
    data = source.task(args.task, domain, args.protocol)
    _check_in_corpus(data, args, outputs.runs.get(domain, {}).get(args.query, {}))
    retriever = retriever_from_config(
        outputs.run_config,
        cache_dir=args.cache_dir,
        device=args.device,
        ocr_words=outputs.ocr_words,
        rewrites=outputs.rewrites or None,
        import_modules=tuple(args.allow_import),
    )
    if isinstance(retriever, Unavailable):
        hint = (
            "Give --allow-import with the plugin it names" if "allow" in retriever.reason else None
        )
        raise InputError(f"cannot explain this run: {retriever.reason}", hint=hint)
    return retriever, data, source


def _check_in_corpus(data: Any, args: argparse.Namespace, ranked: dict[str, float]) -> None:
    """Refuse a --doc (or --versus) the query's corpus lacks, naming the items the run ranks."""
    from mmbright_core.errors import InputError

    if all(query.query_id != args.query for query in data.queries):
        return  # the explanation says the query is not in the task's data
    known = {doc.doc_id for doc in data.corpus}
    for doc in (args.doc, args.versus):
        if doc is None or doc in known:
            continue
        top = sorted(ranked, key=ranked.__getitem__, reverse=True)[:5]
        raise InputError(
            f"item {doc!r} is not in the corpus of query {args.query!r} "
            f"(task {data.task}, domain {data.domain})",
            source=str(args.run),
            hint=f"The run ranks first for it: {', '.join(top)}"
            if top
            else "Check the item id (as the run's files write it)",
        )


def _domain_of(runs: dict[str, dict[str, Any]], query_id: str, where: str) -> str:
    from mmbright_core.errors import InputError

    found = [domain for domain, run in runs.items() if query_id in run]
    if not found:
        raise InputError(
            f"query {query_id!r} is in none of the run's domains",
            source=where,
            hint="Check the query id (as the run's files write it), or name its domain with "
            "--domain",
        )
    if len(found) > 1:
        raise InputError(
            f"query {query_id!r} is in {len(found)} of the run's domains",
            source=where,
            found=", ".join(found),
            hint="Name its domain with --domain",
        )
    return found[0]


def _attributions(retriever: Any, data: Any, source: Any, args: argparse.Namespace) -> Any:
    """The attribution of --doc as JSON-ready values (images named by path, not drawn)."""
    import dataclasses

    from mmbright_core.analysis.attribution import explain

    found = explain(retriever, data, source, args.query, [args.doc])[args.doc]
    fields = {
        f.name: getattr(found, f.name) for f in dataclasses.fields(found) if f.name != "pictures"
    }
    return json.loads(json.dumps({"kind": found.kind, **fields}, default=_plain))


def _plain(value: Any) -> Any:
    if dataclasses_like := getattr(value, "__dataclass_fields__", None):
        return {name: getattr(value, name) for name in dataclasses_like}
    raise TypeError(f"{type(value).__name__} is not JSON")
