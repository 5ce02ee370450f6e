"""A run's rewritten queries: the ``rewrites.json`` each domain folder of such a run holds.

A run on a rewritten query set (:mod:`mmbright_core.io.rewrites`) records, per domain, each
query's original text, the LLM's answer and the text the retriever was given, so that the
dashboard can show them beside the ranking without the set itself.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from mmbright_core.errors import InputError, show
from mmbright_core.io.json_shapes import object_pairs, parse_json
from mmbright_core.io.reading import Readable, decode, load
from mmbright_core.io.rewrites import Rewrite, plain

REWRITES_FILE = "rewrites.json"
"""The file a run on a rewritten set writes in each domain folder."""
DOMAIN_FORMAT = "mmbright-rewritten-run/1"


def domain_rewrites_json(record: Mapping[str, Any], rewrites: Iterable[Rewrite]) -> str:
    """The ``rewrites.json`` of one domain of a run: each query's original and new text.

    ``{"format", "queries_sha256", "prompt", "combine", "model", "queries": {query id:
    {"original", "answer", "problem", "query"}}}``: what the dashboard needs to show, beside
    the query, the text the retriever was given and the words the LLM added.

    Args:
        record: What the run records of its set (``queries_sha256``, ``rewrite_*``).
        rewrites: The domain's rewrites, in query order.
    """
    body = {
        "format": DOMAIN_FORMAT,
        "queries_sha256": record["queries_sha256"],
        "prompt": record["rewrite_prompt"],
        "combine": record["rewrite_combine"],
        "model": record["rewrite_model"],
        "queries": {
            r.query_id: {
                "original": r.original,
                "answer": r.answer,
                "problem": r.problem,
                "query": r.query,
            }
            for r in rewrites
        },
    }
    return json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def read_run_rewrites(path: Readable, domain: str) -> dict[tuple[str, str], Rewrite]:
    """Read one domain's ``rewrites.json``: ``(domain, query_id)`` -> the query's rewrite.

    Raises:
        InputError: Not this format, or an entry without its texts (naming the JSON path).
    """
    loaded = load(path)
    top = object_pairs(parse_json(decode(loaded), loaded.name), loaded.name, (), "(rewrites)")
    if top.get("format") != DOMAIN_FORMAT:
        raise InputError(
            "not a run's rewritten queries",
            source=loaded.name,
            expected=f"format {DOMAIN_FORMAT!r}",
            found=show(str(top.get("format"))),
        )
    queries = object_pairs(top.get("queries"), loaded.name, ("queries",), "of query ids")
    out: dict[tuple[str, str], Rewrite] = {}
    for query_id, raw in queries.items():
        entry = plain(raw)
        texts = [entry.get(k) if isinstance(entry, dict) else None for k in ("original", "query")]
        answer = entry.get("answer") if isinstance(entry, dict) else None
        if not all(isinstance(t, str) for t in texts) or not isinstance(answer, (str, type(None))):
            raise InputError(
                f'wrong JSON shape at $["queries"][{json.dumps(query_id)}]',
                source=loaded.name,
                expected='{"original": "...", "answer": "..." or null, "query": "..."}',
                found=show(json.dumps(entry)),
            )
        problem = entry.get("problem")
        out[(domain, query_id)] = Rewrite(
            domain, query_id, str(texts[0]), (), answer,
            problem if isinstance(problem, str) else None, 0, 0, str(texts[1]),
        )  # fmt: skip
    return out
