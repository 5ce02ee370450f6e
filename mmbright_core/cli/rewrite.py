"""``mmbright rewrite``: let an LLM rewrite a task's queries into a query set file."""

from __future__ import annotations

import argparse
from typing import Any

from mmbright_core.cli.options import (
    Command,
    add_command,
    add_domains,
    add_source,
    add_task,
    add_wait,
    claimant,
)

REWRITE_COMMAND = Command(
    "rewrite",
    "rewrite a task's queries with an LLM (reasoning, captions, a template)",
    """Ask an OpenAI-compatible chat endpoint about every query of a task (with its images on
    tasks 2-4) and write a query set, one record per query, for `mmbright run --queries`.
    Answers are cached by their whole request: a rerun, or a killed job run again, asks only
    what is not cached and writes the same file.""",
)


def register(subparsers: Any) -> None:
    """Add the ``rewrite`` subcommand."""
    parser = add_command(subparsers, REWRITE_COMMAND)
    add_source(parser)
    add_task(parser)
    add_domains(parser)
    parser.add_argument("--llm", required=True, metavar="MODEL", help="the chat model's name")
    parser.add_argument(
        "--endpoint",
        help="the API's base URL, e.g. http://localhost:8000/v1 (default: OpenAI's); the key "
        "is read from $OPENAI_API_KEY (--option api_key_env=NAME for another variable)",
    )
    parser.add_argument(
        "--prompt",
        default="reason",
        help="reason (BRIGHT's reason.py: its system message, prompt and sampling; the "
        "answer replaces the query), reason-images (the package's own wording, told to look "
        "at the images; replaces), caption (the images described; appended) or a template "
        "file with {query} and {domain} (appended)",
    )
    parser.add_argument("--combine", choices=("append", "replace"), help="override the prompt's")
    parser.add_argument(
        "--image-policy",
        choices=("first", "all"),
        default="all",
        help="query images sent on tasks 2-4: all that decode (default) or the first",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="temperature, top_p, max_tokens, seed (sent, over the prompt's own; they key "
        "the cache); concurrency, "
        "timeout, retries, backoff, max_requests, token_budget, api_key_env, image_side",
    )
    parser.add_argument(
        "--cache-dir", help="answer cache root (default: $MMBRIGHT_CACHE or ~/.cache/mmbright)"
    )
    parser.add_argument("--out", required=True, metavar="Q", help="the query set file to write")
    add_wait(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Rewrite the queries and write the set."""
    from mmbright_core.cli.run import parse_options
    from mmbright_core.data.sources import open_source
    from mmbright_core.io.atomic import atomic_write_text
    from mmbright_core.io.claims import claimed
    from mmbright_core.io.rewrites import query_set_text
    from mmbright_core.llm.images import DEFAULT_SIDE
    from mmbright_core.llm.options import chat_client
    from mmbright_core.llm.prompts import get_prompt
    from mmbright_core.llm.rewrite import rewrite_task

    options = parse_options(args.option)
    prompt = get_prompt(args.prompt, args.combine)
    client = chat_client(args.llm, args.endpoint, options, args.cache_dir, prompt.parameters)
    side = int(options.get("image_side", DEFAULT_SIDE))
    # The set is claimed for the whole job: two jobs writing it at once would each say
    # "wrote" while the file held one of them (mmbright_core.io.claims).
    with claimed(args.out, claimant(args)):
        records = rewrite_task(
            open_source(args.source),
            args.task,
            client,
            prompt,
            domains=args.domains,
            image_policy=args.image_policy,
            side=side,
        )
        atomic_write_text(args.out, query_set_text(records))
    problems = sum(1 for r in records if r["problem"] is not None)
    print(
        f"{len(records)} queries, {client.answered} asked, {client.from_cache} from the cache, "
        f"{client.tokens:,} tokens, {problems} without an answer ({client.empty} of them "
        "empty answers; each query without one keeps its own text)"
    )
    print(f"wrote {args.out}")
    return 0
