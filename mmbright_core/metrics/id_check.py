"""Ids of a run that match nothing in the qrels, and those that would after normalisation.

trec_eval matches ids byte for byte, and so does :func:`mmbright_core.metrics.evaluate`:
scores stay exactly trec_eval's. A doc id with a leading U+202E or a query id with a
trailing zero-width space then matches nothing and scores 0 with no word. This module says
so: it counts the run's query ids the qrels do not know, the queries whose ranking holds no
judged document, and the ids that would match once NFKC-normalised with control and
invisible format characters removed, with examples (raw; callers escape them to show).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Mapping, Set

from mmbright_core.errors import show
from mmbright_core.types import IdCheck

EXAMPLES = 3
"""How many examples each count keeps."""


def normalised(text: str) -> str:
    """``text`` NFKC-normalised with control and format (bidi, zero-width) characters removed."""
    if text.isascii() and text.isprintable():
        return text
    kept = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf"))
    return unicodedata.normalize("NFKC", kept)


def check_ids(
    qrels: Mapping[str, Mapping[str, int]],
    query_ids: Collection[str],
    rankings: Iterable[tuple[str, Collection[str]]],
    blind: Iterable[str],
) -> IdCheck:
    """Compare the run's ids with the qrels'.

    Args:
        qrels: The judgments.
        query_ids: The run's query ids.
        rankings: ``(query id, its doc ids)`` of the run's queries (those whose ids are all
            plain printable ASCII may be left out: they need no normalising).
        blind: The queries whose ranking holds no judged document.
    """
    unknown = sorted(set(query_ids) - qrels.keys())
    by_form: dict[str, str] = {}
    if unknown:
        by_form = {normalised(q): q for q in qrels}
    near_queries = [(q, by_form[n]) for q in unknown if (n := normalised(q)) in by_form]
    near_docs: list[tuple[str, str, str]] = []
    for query_id, docs in rankings:
        judged = qrels.get(query_id)
        if judged:
            near_docs += _near_docs(query_id, set(docs), judged.keys())
    blind_ids = sorted(blind)
    return IdCheck(
        len(unknown),
        tuple(unknown[:EXAMPLES]),
        len(blind_ids),
        tuple(blind_ids[:EXAMPLES]),
        len(near_queries),
        tuple(near_queries[:EXAMPLES]),
        len(near_docs),
        tuple(near_docs[:EXAMPLES]),
    )


def _near_docs(query_id: str, docs: Set[str], judged: Set[str]) -> list[tuple[str, str, str]]:
    # One join tells in C whether any id needs normalising: almost every run has none.
    plain = "".join(docs) + "".join(judged)
    if plain.isascii() and plain.isprintable():
        return []
    forms = {normalised(j): j for j in judged}
    return [
        (query_id, d, forms[n]) for d in docs if d not in judged and (n := normalised(d)) in forms
    ]


def id_warnings(check: IdCheck) -> list[str]:
    """One line per finding of ``check``, ids quoted with invisible characters escaped."""
    lines = []
    if check.unknown_queries:
        lines.append(
            f"{check.unknown_queries:,} query id(s) of the run match no query of the qrels, "
            f"e.g. {_listed(check.unknown_query_examples)}"
        )
    if check.near_query_count:
        pairs = ", ".join(f"{show(a)} ~ {show(b)}" for a, b in check.near_queries)
        lines.append(
            f"{check.near_query_count:,} of them match a qrels query only once normalised "
            f"(NFKC, invisible characters removed), e.g. {pairs}: ids are matched exactly"
        )
    if check.blind_queries:
        lines.append(
            f"{check.blind_queries:,} scored queries retrieve no judged document, "
            f"e.g. {_listed(check.blind_query_examples)}"
        )
    if check.near_doc_count:
        triples = ", ".join(
            f"{show(d)} ~ {show(j)} (query {show(q)})" for q, d, j in check.near_docs
        )
        lines.append(
            f"{check.near_doc_count:,} retrieved doc id(s) match a judged doc only once "
            f"normalised (NFKC, invisible characters removed), e.g. {triples}: they score as "
            "unjudged"
        )
    return lines


def _listed(ids: Iterable[str]) -> str:
    return ", ".join(map(show, ids))
