"""``mmbright run``: run a retriever on a task and write the official output folders."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmbright_core.cli.options import (
    Command,
    add_command,
    add_task_options,
    add_wait,
    claimant,
    declare_later,
)
from mmbright_core.data.choices import POLICIES
from mmbright_core.errors import InputError, printable

if TYPE_CHECKING:
    from mmbright_core.data.sources import Source
    from mmbright_core.io.claims import Claimant
    from mmbright_core.retrieval.base import Retriever
    from mmbright_core.retrieval.catalogue.preset_run import Resolved
    from mmbright_core.retrieval.runner.folders import Guard
    from mmbright_core.retrieval.runner.task_run import ProgressHook, RunOutcome


RUN_COMMAND = Command(
    "run",
    "run a retriever on a task and write scores, metrics and a summary",
    """Run a retriever on one task of MM-BRIGHT, domain by domain, and write
    <out>/<subdir>/<domain>/{scores,metrics,config}.json, summary.json, run.trec and
    config.json. A domain whose stored configuration equals the new one is reused; a folder
    holding another configuration (or outputs without one) is refused, and nothing in it is
    touched.""",
)


def register(subparsers: Any) -> None:
    """Add the ``run`` subcommand."""
    parser = add_command(subparsers, RUN_COMMAND)
    add_task_options(parser, domains="all")
    declare_later(parser, declare_backend)
    parser.set_defaults(handler=handle, interrupted="finished domains are kept")


def declare_backend(parser: argparse.ArgumentParser) -> None:
    """Add the retriever, its options and the engine; on first use (they import retrieval)."""
    from mmbright_core.cli.engine_options import add_engine_arguments
    from mmbright_core.task_table import RUN_DEPTH

    _declare_model(parser)
    parser.add_argument("--k", type=int, default=RUN_DEPTH, help="documents kept per query")
    parser.add_argument(
        "--cache-dir", help="embedding cache root (default: $MMBRIGHT_CACHE or ~/.cache/mmbright)"
    )
    parser.add_argument("--device", help="torch device for model backends (cpu, cuda)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another backend option, e.g. k1=1.2 or query_prefix='search_query: '",
    )
    parser.add_argument(
        "--queries",
        metavar="Q",
        help="run on a rewritten query set (`mmbright rewrite --out Q`): each query's text "
        "is the set's; the set's hash and rewriting settings are recorded in config.json",
    )
    parser.add_argument("--out", required=True, help="output root folder")
    add_wait(parser)
    parser.add_argument(
        "--mteb",
        action="store_true",
        help="also write MTEB's <TaskName>_predictions.json beside summary.json",
    )
    add_engine_arguments(parser)


def _declare_model(parser: argparse.ArgumentParser) -> None:
    """Add the retriever or preset, the model and the settings that choose its vectors."""
    from mmbright_core.retrieval.backend_table import BACKENDS
    from mmbright_core.retrieval.backends.instructions import INSTRUCTION_SETS
    from mmbright_core.retrieval.registry import available_retrievers

    parser.add_argument("--retriever", help=f"one of: {', '.join(available_retrievers())}")
    parser.add_argument(
        "--model-preset",
        metavar="NAME",
        help="run a model of the catalogue as the official harness does (see `mmbright "
        "models`); flags given beside it override the preset's settings",
    )
    parser.add_argument(
        "--instructions",
        choices=INSTRUCTION_SETS,
        help="instruction set: official (the default with --model-preset: what the released "
        "harness passes, empty for every instruction-tuned model), bright (BRIGHT's per-domain "
        "instructions), mteb (MTEB's prompts, through the mteb backend) or none",
    )
    with_model = (name for name, backend in BACKENDS.items() if backend.takes_model)
    parser.add_argument("--model", help=f"model name or local path ({', '.join(with_model)})")
    parser.add_argument(
        "--revision",
        metavar="COMMIT",
        help="the hub commit of the model to load (dense, hf, gritlm, hub-code; mteb: its "
        "registry's), over a preset's pin; recorded in config.json. A run of a hub model "
        "without one warns: the hub's main may hold other weights next year",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="run the model's own code from the hub (transformers' trust_remote_code), which "
        "gte-Qwen, Nomic, Jina-CLIP, Nomic-Vision, BGE-VL and GME need; recorded in "
        "config.json. MMBRIGHT_ALLOW_REMOTE_CODE=0 forbids it",
    )
    parser.add_argument(
        "--pretrained",
        help='open_clip pretrained tag (default: openai), checkpoint file, or "none" (random '
        "weights); a local-dir: model uses its own weights",
    )
    parser.add_argument(
        "--endpoint",
        help="api: an OpenAI-compatible API's base URL, e.g. http://localhost:8000/v1 "
        "(default: OpenAI's); the key is read from $OPENAI_API_KEY",
    )
    parser.add_argument(
        "--score-scale",
        type=_scale,
        metavar="{1,100}",
        help="what the cosine is multiplied by in the scores written: 1 (plain cosine) or 100 "
        "(default: the preset's official scale, else 100); ranks and metrics do not change, "
        "recorded in config.json when not 100",
    )
    parser.add_argument(
        "--image-policy",
        choices=POLICIES,
        help="several query images: first (default: the released code's images[0], which "
        "made the published runs), concat (the paper, MTEB) or all",
    )


def _scale(text: str) -> float:
    """``--score-scale``'s value: 1 or 100, the two scales the official code writes."""
    if text.strip() not in ("1", "100"):
        raise argparse.ArgumentTypeError(f"expected 1 or 100, found {text!r}")
    return float(text)


def parse_options(pairs: list[str]) -> dict[str, Any]:
    """Parse ``NAME=VALUE`` pairs; values read as JSON when they parse (numbers, booleans).

    Raises:
        InputError: A pair without ``=``.
    """
    options: dict[str, Any] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise InputError("malformed --option", expected="NAME=VALUE", found=repr(pair))
        try:
            options[name.replace("-", "_")] = json.loads(value)
        except ValueError:
            options[name.replace("-", "_")] = value
    return options


def retriever_options(args: argparse.Namespace) -> dict[str, object]:
    """The retriever's options: ``--option NAME=VALUE`` pairs, then the flags that are set.

    A flag left unset must not erase the same setting given with ``--option``.
    """
    options = parse_options(args.option)
    flags = {
        "model": args.model,
        "revision": args.revision,
        "pretrained": args.pretrained,
        "endpoint": args.endpoint,
        "image_policy": args.image_policy,
        "cache_dir": args.cache_dir,
        "device": args.device,
        "trust_remote_code": True if args.trust_remote_code else None,
    }
    options.update({name: value for name, value in flags.items() if value is not None})
    return options


def chosen_retriever(args: argparse.Namespace) -> Resolved:
    """The retriever name and options of ``--retriever`` or ``--model-preset``, flags last.

    The revision (a preset's pin, or ``--revision``) is given as the retriever takes it.

    Raises:
        InputError: Neither or both of ``--retriever`` and ``--model-preset``.
    """
    from mmbright_core.retrieval.catalogue.pinning import with_revision

    chosen = _chosen(args)
    return dataclasses.replace(chosen, options=with_revision(chosen.retriever, chosen.options))


def _chosen(args: argparse.Namespace) -> Resolved:
    from mmbright_core.retrieval.catalogue.preset_run import (
        Resolved,
        instructions_without_preset,
        resolve,
        with_flags,
    )
    from mmbright_core.retrieval.catalogue.presets import get_preset

    if (args.retriever is None) == (args.model_preset is None):
        raise InputError(
            "give one of --retriever and --model-preset",
            found="both" if args.retriever else "neither",
            hint="`mmbright models` lists the presets.",
        )
    flags = retriever_options(args)
    if args.model_preset is not None:
        preset = get_preset(args.model_preset)
        chosen = resolve(preset, args.task, args.instructions or "official", args.trust_remote_code)
        _check_backend(args.model_preset, chosen.retriever)
        return with_flags(chosen, preset, flags)
    if args.instructions is None:
        return Resolved(args.retriever, flags)
    texts = instructions_without_preset(args.retriever, args.model, args.instructions)
    return Resolved(args.retriever, {**texts, **flags}, None, args.instructions)


def _check_backend(preset: str, backend: str) -> None:
    from mmbright_core.retrieval.registry import available_retrievers

    if backend not in available_retrievers():
        raise InputError(
            f"preset {preset!r} runs on the {backend!r} backend, which is not registered here",
            expected=f"one of {', '.join(available_retrievers())}",
            found=backend,
            hint="Install a version of mmbright with that backend.",
        )


def on_rewritten_queries(retriever: Any, path: str, task: int, source: str) -> Any:
    """``retriever`` run on the query set at ``path``, checked against the task and source.

    Raises:
        InputError: The set is unreadable, or was written for another task or source.
    """
    from mmbright_core.io.rewrites import read_query_set
    from mmbright_core.retrieval.runner.rewritten import Rewritten

    queries = read_query_set(path)
    for what, wanted, found in (
        ("task", task, queries.task),
        ("source", source, queries.settings["source"]),
    ):
        if wanted != found:
            raise InputError(
                f"the query set was written for another {what}",
                source=path,
                expected=f"{what} {wanted}",
                found=f"{what} {found}",
                hint=f"Rewrite the queries of this {what} (mmbright rewrite), or run the "
                f"set's {what}",
            )
    return Rewritten.of(retriever, queries)


@dataclasses.dataclass(frozen=True)
class Executed:
    """What one ``mmbright run`` did: the retriever and preset it ran, what it wrote.

    Attributes:
        chosen: The retriever (or preset) and options the command chose.
        retriever: The retriever run (its ``label()`` names the run).
        outcome: What the runner wrote.
        written: Other files written beside the outputs (MTEB's predictions).
    """

    chosen: Resolved
    retriever: Retriever
    outcome: RunOutcome
    written: tuple[Path, ...] = ()


def execute(
    args: argparse.Namespace,
    *,
    claimant: Claimant,
    source: Source | None = None,
    build: Callable[[str, dict[str, Any]], Retriever] | None = None,
    warn: Callable[[str], None] | None = None,
    progress: ProgressHook | None = None,
    guard: Guard | None = None,
    new_folder: bool = False,
) -> Executed:
    """Run ``mmbright run`` as parsed into ``args``: the one path of the command and the Run page.

    Args:
        args: The parsed command line.
        claimant: Who claims the output folder while it is written.
        source: The data source ``--source`` names, when it is open already.
        build: How the retriever is built from its name and options (default: for the
            engine of ``--engine``).
        warn: Told the warning for a hub model no commit pins, before the run starts.
        progress: The runner's progress hook.
        guard: Shown every folder and file before it is read or written.
        new_folder: Write beside a folder holding another configuration, not refuse it.
    """
    from mmbright_core.cli.engine_options import with_engine
    from mmbright_core.data.sources import open_source
    from mmbright_core.data.view import TaskView
    from mmbright_core.retrieval.catalogue.pinning import unpinned
    from mmbright_core.retrieval.catalogue.preset_run import Chosen, set_score_scale
    from mmbright_core.retrieval.runner.task_run import run_task

    chosen = chosen_retriever(args)
    if build is None:
        retriever = with_engine(chosen.retriever, chosen.options, args)
    else:
        retriever = build(chosen.retriever, chosen.options)
    if chosen.preset is not None or chosen.instructions is not None:
        retriever = Chosen(retriever, chosen.preset, chosen.instructions)
    if args.score_scale is not None:  # over the preset's own
        set_score_scale(retriever, args.score_scale)
    warning = unpinned(chosen.retriever, retriever.settings())
    if warning is not None and warn is not None:  # recorded as it is: null, or the moving name
        warn(warning)
    source = source if source is not None else open_source(args.source)
    if args.queries is not None:
        retriever = on_rewritten_queries(retriever, args.queries, args.task, source.name)
    written: list[Path] = []
    outcome = run_task(
        TaskView(source, args.task, args.protocol),
        retriever,
        args.out,
        domains=args.domains,
        negatives=args.negatives,
        k=args.k,
        claimant=claimant,
        finish=_mteb_writer(args.task, written) if args.mteb else None,
        progress=progress,
        guard=guard,
        new_folder=new_folder,
    )
    return Executed(chosen, retriever, outcome, tuple(written))


def handle(args: argparse.Namespace) -> int:
    """Run the subcommand and print each domain's nDCG@10."""
    done = execute(args, claimant=claimant(args), warn=_warn)
    outcome = done.outcome
    for domain in outcome.domains:
        note = " (reused)" if domain.reused else ""
        print(f"{domain.domain}\tnDCG@10 {100 * domain.metrics['NDCG@10']:.1f}{note}")
    for domain in outcome.kept:  # in summary.json too: the Avg. below is the summary's
        print(f"{domain.domain}\tnDCG@10 {100 * domain.metrics['NDCG@10']:.1f} (kept)")
    every = [*outcome.domains, *outcome.kept]
    for domain in every:  # no silent zeros: what lowered a domain's score goes to stderr
        for warning in domain.warnings:
            print(
                f"mmbright run: warning: {printable(f'{domain.domain}: {warning}')}",
                file=sys.stderr,
            )
    if every:
        mean = sum(d.metrics["NDCG@10"] for d in every) / len(every)
        print(f"Avg.\tnDCG@10 {100 * mean:.1f}")
    print(f"wrote {outcome.task_dir}")
    for path in done.written:
        print(f"wrote {path}")
    return 0


def _warn(text: str) -> None:
    print(f"mmbright run: warning: {printable(text)}", file=sys.stderr)


def _mteb_writer(task: int, written: list[Path]) -> Callable[[RunOutcome], None]:
    """Write MTEB's predictions beside summary.json, while the run still claims the folder."""

    def write(outcome: RunOutcome) -> None:
        from mmbright_core.io.mteb import write_mteb_predictions

        runs = {d.domain: d.run for d in outcome.domains}
        config = outcome.config.to_dict()
        written.append(write_mteb_predictions(outcome.task_dir, task, runs, config))

    return write
