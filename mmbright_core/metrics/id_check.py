"""Ids of a run that match nothing in the qrels, and those that would after normalisation.

trec_eval matches ids byte for byte, and so does :func:`mmbright_core.metrics.evaluate`:
scores stay exactly trec_eval's. A doc id with a leading U+202E or a query id with a
trailing zero-width space then matches nothing and scores 0 with no word. This module says
so: it counts the run's query ids the qrels do not know, the queries whose ranking holds no
judged document, and the ids that would match once NFKC-normalised with control and
invisible format characters removed, with examples (raw; callers escape them to show).

Two different ids that are equal once normalised are not both printable ASCII, which
normalising leaves as it is. So the check reads every doc id once, in bulk (a table's id
bytes, or a mapping's ids joined per query, scanned by numpy), and normalises only the
distinct ids that are not printable ASCII, each once, and the judged ids that are not, whose
forms the run is then asked for in one look-up: on a run of plain ids it costs that one pass.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Protocol

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import show
from mmbright_core.types import IdCheck

EXAMPLES = 3
"""How many examples each count keeps."""


def plain(text: str) -> bool:
    """Whether ``text`` is printable ASCII, which :func:`normalised` leaves as it is."""
    return text.isascii() and text.isprintable()


def normalised(text: str) -> str:
    """``text`` NFKC-normalised with control and format (bidi, zero-width) characters removed."""
    if plain(text):
        return text
    kept = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf"))
    return unicodedata.normalize("NFKC", kept)


class IdSource(Protocol):
    """A run's ids as the check reads them: every query's, and the doc ids it needs."""

    @property
    def query_ids(self) -> Collection[str]:
        """The run's query ids, in the run's order."""

    def unusual_docs(self) -> Iterator[tuple[str, list[str]]]:
        """``(query id, its doc ids that are not printable ASCII)`` for each query with any."""

    def retrieved(self, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those ``(query id, doc id)`` pairs whose query retrieves the doc."""


def printable_ascii(data: npt.NDArray[np.uint8]) -> bool:
    """Whether UTF-8 bytes are all printable ASCII (0x20-0x7E): two fast reductions."""
    return not data.size or bool(data.min() >= 0x20 and data.max() <= 0x7E)


def all_plain(doc_ids: Iterable[str]) -> bool:
    """Whether every id is printable ASCII: joined in C, their bytes checked by numpy.

    Raises:
        TypeError: An id is not a str.
    """
    text = "".join(doc_ids)
    return text.isascii() and printable_ascii(np.frombuffer(text.encode(), np.uint8))


class MappingIds:
    """A run given as query id -> its doc ids (a mapping's keys), as an :class:`IdSource`."""

    def __init__(
        self, run: Mapping[str, Collection[str]], unusual: Iterable[str] | None = None
    ) -> None:
        """Read ``run``.

        Args:
            run: query id -> its doc ids.
            unusual: The queries whose doc ids are not all printable ASCII
                (:func:`all_plain`), where the caller has found them already.
        """
        self._run = run
        self._unusual = unusual
        self.query_ids = run.keys()

    def unusual_docs(self) -> Iterator[tuple[str, list[str]]]:
        """``(query id, its doc ids that are not printable ASCII)`` for each query with any."""
        unusual = self._unusual
        if unusual is None:
            unusual = (q for q, docs in self._run.items() if not all_plain(docs))
        for query_id in unusual:
            yield query_id, [d for d in self._run[query_id] if not plain(d)]

    def retrieved(self, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those ``(query id, doc id)`` pairs whose query retrieves the doc."""
        return {(q, d) for q, d in pairs if d in self._run[q]}


def check_ids(
    qrels: Mapping[str, Mapping[str, int]], run: IdSource, blind: Iterable[str]
) -> IdCheck:
    """Compare the run's ids with the qrels'.

    Args:
        qrels: The judgments.
        run: The run's ids (:class:`MappingIds` for a mapping).
        blind: The queries whose ranking holds no judged document.
    """
    unknown = sorted(set(run.query_ids) - qrels.keys())
    by_form: dict[str, str] = {}
    if unknown:
        by_form = {normalised(q): q for q in qrels}
    near_queries = [(q, by_form[n]) for q in unknown if (n := normalised(q)) in by_form]
    near_docs = _near_docs(qrels, run)
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


def _near_docs(qrels: Mapping[str, Mapping[str, int]], run: IdSource) -> list[tuple[str, str, str]]:
    """Retrieved docs, not judged, equal to a judged doc of their query once normalised.

    Returns:
        ``(query, doc, judged doc)``, queries in run order, each one's docs sorted; the
        judged doc is the last of the query's judgments with the doc's normalised form.

    Either the retrieved id is not printable ASCII (the run lists those), or it is and a
    judged id that is not normalises to it (the run is asked whether it retrieves that form).
    """
    unusual = dict(run.unusual_docs())
    odd_judged = {
        q: judged for q in run.query_ids if (judged := qrels.get(q)) and not plain("".join(judged))
    }
    forms_of = {d: normalised(d) for d in {d for docs in unusual.values() for d in docs}}
    asked = {
        (q, form)
        for q, judged in odd_judged.items()
        for j in judged
        if not plain(j) and plain(form := normalised(j)) and form not in judged
    }
    as_is: dict[str, set[str]] = {}
    for q, d in run.retrieved(asked):
        as_is.setdefault(q, set()).add(d)
    near: list[tuple[str, str, str]] = []
    for query_id in run.query_ids:
        judged = qrels.get(query_id)
        if not judged or (query_id not in unusual and query_id not in as_is):
            continue
        forms = {normalised(j): j for j in judged}
        found = as_is.get(query_id, set())
        found.update(
            d for d in unusual.get(query_id, ()) if d not in judged and forms_of[d] in forms
        )
        near += [(query_id, d, forms[forms_of.get(d, d)]) for d in sorted(found)]
    return near


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
