"""``mmbright rewrite``: one LLM answer per query, written as a rewritten query set.

Each query of the chosen domains is rendered into the prompt (:mod:`.prompts`), sent after
the prompt's system message (if it has one) with the query's images after the text on
tasks 2-4 (:mod:`.images`; ``first`` or ``all`` of those that decode), and
the answers are gathered by the chat client: concurrent, retried, budgeted and cached, so
a rerun (after a kill, a spent budget, a network failure) asks only what is not cached and
writes the same bytes. A query whose answer was unusable keeps its original text and says
why (``problem``), and when every answer was, the job warns (an ``InputWarning``); a
``caption`` prompt for a query without a decodable image asks nothing.
The set's format is :mod:`mmbright_core.io.rewrites`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mmbright_core.data.images import images_taken
from mmbright_core.data.sources import Source
from mmbright_core.errors import InputError, InputWarning, cut
from mmbright_core.llm.chat import ChatClient, Message, Reply
from mmbright_core.llm.images import DEFAULT_SIDE, data_url, user_message
from mmbright_core.llm.prompts import Prompt
from mmbright_core.retrieval.cache.store import content_key
from mmbright_core.task_table import task_info
from mmbright_core.types import Query

REWRITE_POLICIES = ("first", "all")


@dataclass(frozen=True)
class Asked:
    """One query as the LLM is asked about it.

    Attributes:
        domain: The query's domain.
        query: The query.
        images: ``(path, sha256 of the file's bytes)`` of each image sent.
        messages: The request's messages (None: nothing to ask, e.g. a caption prompt
            for a query without images).
    """

    domain: str
    query: Query
    images: tuple[tuple[str, str], ...]
    messages: tuple[Message, ...] | None


def rewrite_settings(
    source: Source, task: int, prompt: Prompt, client: ChatClient, image_policy: str, side: int
) -> dict[str, Any]:
    """The fields every record of the set shares: source, task, prompt and LLM."""
    return {
        "source": source.name,
        "task": task,
        "prompt": {
            "name": prompt.name,
            "template": prompt.template,
            "system": prompt.system,
            "query_newlines": prompt.query_newlines,
            "combine": prompt.combine,
            "image_policy": image_policy,
            "image_side": side,
        },
        "llm": {
            "model": client.model,
            "endpoint": client.endpoint,
            "parameters": client.parameters,
        },
    }


def rewrite_task(
    source: Source,
    task: int,
    client: ChatClient,
    prompt: Prompt,
    *,
    domains: Sequence[str] | None = None,
    image_policy: str = "all",
    side: int = DEFAULT_SIDE,
) -> list[dict[str, Any]]:
    """Ask the LLM about every query of ``task`` in ``domains``; return the set's records.

    Raises:
        InputError: An unknown image policy.
        EndpointError: The endpoint cannot be used.
        RequestBudgetError: A budget was spent (the answers so far are cached).
    """
    if image_policy not in REWRITE_POLICIES:
        raise InputError(
            "unknown image policy for rewriting",
            expected=" or ".join(REWRITE_POLICIES),
            found=repr(image_policy),
        )
    if prompt.name == "caption" and task_info(task).text_only:
        raise InputError(
            "the caption prompt describes the query images, and Task 1 sends none",
            found="--prompt caption --task 1",
            hint="Caption the queries of tasks 2-4 (they share their queries and images)",
        )
    chosen = tuple(source.check_domain(d) for d in domains) if domains else source.domains()
    asked = [
        ask(source, task, domain, query, prompt, image_policy, side)
        for domain in chosen
        for query in source.judgments(task, domain).queries
    ]
    sent = [a for a in asked if a.messages is not None]
    replies = iter(client.complete_all([a.messages or () for a in sent], desc="rewrite"))
    answers = {id(a): next(replies) for a in sent}
    problems = [reply.problem for reply in answers.values()]
    if problems and None not in problems:
        warnings.warn(
            f"every answer of {client.endpoint} (model {client.model!r}) was unusable: the "
            f"{len(problems)} queries asked keep their own text; the first: "
            + cut(str(problems[0])),
            InputWarning,
            stacklevel=2,
        )
    shared = rewrite_settings(source, task, prompt, client, image_policy, side)
    return [_record(shared, a, prompt, answers.get(id(a))) for a in asked]


def ask(
    source: Source, task: int, domain: str, query: Query, prompt: Prompt, policy: str, side: int
) -> Asked:
    """The request for one query (its images on tasks 2-4)."""
    taken = images_taken(source, query, policy) if not task_info(task).text_only else []
    images = tuple(
        (path, content_key(source.query_image_bytes(domain, path) or b"")) for path, _ in taken
    )
    if prompt.name == "caption" and not taken:
        return Asked(domain, query, images, None)
    text = prompt.render(query.text, domain)
    message = user_message(text, [data_url(image, side) for _, image in taken])
    system = () if prompt.system is None else ({"role": "system", "content": prompt.system},)
    return Asked(domain, query, images, (*system, message))


def _record(
    shared: dict[str, Any], asked: Asked, prompt: Prompt, reply: Reply | None
) -> dict[str, Any]:
    original = asked.query.text
    answer = None if reply is None else reply.text
    problem = None if reply is None else reply.problem
    if reply is None:
        problem = "no image to describe" if prompt.name == "caption" else "nothing asked"
    used = reply.answer if reply is not None else None
    return {
        **shared,
        "domain": asked.domain,
        "query_id": asked.query.query_id,
        "original": original,
        "images": [{"path": p, "sha256": s} for p, s in asked.images],
        "answer": answer,
        "problem": problem,
        "tokens": {
            "prompt": 0 if used is None else used.prompt_tokens,
            "completion": 0 if used is None else used.completion_tokens,
        },
        "query": original if answer is None else prompt.combined(original, answer),
    }
