"""BM25 scores split into per-term contributions, with the passage snippet to highlight.

:meth:`~mmbright_core.retrieval.lexical.bm25.BM25Retriever.explain_scores` hands over its analyzer,
its scoring and its index; the formula needs nothing else of the retriever.

A BM25 score here is ``sum over query terms r of weights[r] * postings[r, passage]``
(:meth:`~mmbright_core.retrieval.lexical.bm25_index.BM25Index.query_weights`), so each term's
product is its exact share. ``ocr-bm25`` scores the query text with the OCR text appended
(:meth:`~mmbright_core.retrieval.backends.ocr.OcrAugmented.augment`, one line per image read): the
augmented query is scored as the run scored it, and the original text and the words read
from the images are analysed apart to tell each term's origin. A run on rewritten queries
(``mmbright run --queries``) scores the rewritten text: a term of the original text keeps
the origin ``text``, one only the LLM wrote is ``llm``.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mmbright_core.ranking import ranked
from mmbright_core.retrieval.base import passage_id
from mmbright_core.retrieval.explanation import (
    Attribution,
    LexicalAttribution,
    Origin,
    Question,
    Span,
    TermContribution,
)
from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer
from mmbright_core.retrieval.lexical.bm25_index import BM25Index
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import TaskData

#: Characters of passage text shown around the strongest matches.
SNIPPET_WIDTH = 300


def explain_lexical(
    analyzer: EnglishAnalyzer,
    scoring: str,
    index_of: Callable[[Sequence[str]], BM25Index],
    question: Question,
) -> dict[str, Attribution]:
    """Split the BM25 score of each document of ``question`` into its query terms' shares.

    One index look-up and one slice of the postings serve every document.

    Args:
        analyzer: The analyzer the run's index and queries were analysed with.
        scoring: The query weighting (``gensim`` or ``lucene``).
        index_of: The run's index of the texts given (the retriever's cached index).
        question: What to explain.
    """
    texts, unit_of = _units(question.data)
    index = index_of(texts)
    query = _QueryTerms.of(analyzer, scoring, index, question)
    units = [unit_of(p) for p in question.positions.values()]
    rows = query.rows
    passage = index.postings[rows][:, units].toarray() if len(rows) else np.zeros((0, len(units)))
    return {
        doc_id: _attribution(analyzer, doc_id, texts[unit], query, passage[:, column])
        for column, (doc_id, unit) in enumerate(zip(question.positions, units, strict=True))
    }


@dataclass(frozen=True)
class _QueryTerms:
    """The scored query's side of the formula: its known terms, their weights and origins."""

    rows: npt.NDArray[np.intp]
    weights: npt.NDArray[np.float64]
    terms: list[str]
    query_tf: Counter[str]
    origins: defaultdict[str, Origin]
    surface: defaultdict[str, tuple[str, ...]]

    @classmethod
    def of(
        cls, analyzer: EnglishAnalyzer, scoring: str, index: BM25Index, question: Question
    ) -> _QueryTerms:
        """Analyse the query as the run scored it (``question.scored``) against ``index``."""
        tokens = analyzer.analyze(question.scored.text)
        rows, weights = index.query_weights(tokens, scoring)
        term_of = {index.terms[t]: t for t in set(tokens) if t in index.terms}
        original, added = question.rewrite or (question.query.text, "")
        images = "\n".join(question.image_words)
        origins, surface = _origins(analyzer, original, images, added)
        terms = [term_of[int(r)] for r in rows]
        return cls(rows, weights, terms, Counter(tokens), origins, surface)


def _attribution(
    analyzer: EnglishAnalyzer,
    doc_id: str,
    text: str,
    query: _QueryTerms,
    passage: npt.NDArray[np.float64],
) -> LexicalAttribution:
    """One passage's attribution: each term's share, and the snippet that shows the most."""
    spans = analyzer.analyze_spans(text)
    passage_tf = Counter(term for term, _, _ in spans)
    parts = {}
    for row, term in enumerate(query.terms):
        value, weight = float(passage[row]), float(query.weights[row])
        parts[term] = TermContribution(
            term=term,
            surface=query.surface[term],
            query_tf=query.query_tf[term],
            passage_tf=passage_tf[term],
            query_weight=weight,
            passage_weight=value,
            contribution=weight * value,
            origin=query.origins[term],
        )
    order = ranked({term: part.contribution for term, part in parts.items()})
    strength = {t: p.contribution for t, p in parts.items() if p.contribution > 0}
    start, end = snippet_window(text, spans, strength)
    return LexicalAttribution(
        doc_id=doc_id,
        score=float(sum(parts[term].contribution for term, _ in order)),
        terms=tuple(parts[term] for term, _ in order),
        snippet=text[start:end],
        snippet_start=start,
        spans=tuple(
            Span(term, s - start, e - start)
            for term, s, e in spans
            if term in strength and start <= s and e <= end
        ),
    )


def _units(data: TaskData) -> tuple[list[str], Callable[[int], int]]:
    """Return the texts BM25 indexed for ``data`` and corpus position -> unit of that list.

    Task 4 pairs share their passage's text, indexed once (``rank_by_text_scores``); in the
    other tasks every document is its own unit, which spares grouping a large corpus.
    """
    if TASK_TABLE[data.task].corpus != "pairs":
        return [d.text for d in data.corpus], int
    groups = Groups.from_keys([passage_id(d.doc_id) for d in data.corpus])
    texts = [data.corpus[i].text for i in groups.members[groups.offsets[:-1]]]
    return texts, lambda position: int(groups.unit_of_doc[position])


def _origins(
    analyzer: EnglishAnalyzer, text: str, image_text: str, added: str = ""
) -> tuple[defaultdict[str, Origin], defaultdict[str, tuple[str, ...]]]:
    """Return term -> origin and term -> raw surface forms.

    From the text, the OCR words and what an LLM added (a term of the text or the images
    keeps that origin; one only the LLM wrote is ``llm``).
    """
    origins: defaultdict[str, Origin] = defaultdict(lambda: "text")
    surface: dict[str, dict[str, None]] = defaultdict(dict)  # ordered set
    parts: tuple[tuple[Origin, str], ...] = (("text", text), ("image", image_text))
    for where, part in parts:
        for term, start, end in analyzer.analyze_spans(part):
            surface[term][part[start:end]] = None
            seen = origins.get(term)
            origins[term] = where if seen in (None, where) else "both"
    for term, start, end in analyzer.analyze_spans(added):
        surface[term][added[start:end]] = None
        origins.setdefault(term, "llm")
    forms: defaultdict[str, tuple[str, ...]] = defaultdict(tuple)
    forms.update({term: tuple(found) for term, found in surface.items()})
    return origins, forms


def snippet_window(
    text: str, spans: Sequence[tuple[str, int, int]], strength: dict[str, float]
) -> tuple[int, int]:
    """Return ``(start, end)``: the passage window that shows the most of the score.

    The window is about ``SNIPPET_WIDTH`` characters; of all windows it holds the matched
    terms (each counted once) whose contributions add up to the most.

    Args:
        text: The passage.
        spans: ``(term, start, end)`` of every term of ``text`` (``analyze_spans``).
        strength: term -> contribution, for the matched terms only.

    Returns:
        The window, widened to whole words where the text allows.
    """
    hits = [(term, s, e) for term, s, e in spans if term in strength]
    if not hits:
        return _widen(text, 0, 0)
    best, best_at, inside = -1.0, (0, 0), Counter[str]()
    total, right = 0.0, 0
    for left, (_, start, _) in enumerate(hits):
        if right == left:  # a token longer than the window still gets one
            inside[hits[left][0]] += 1
            total += strength[hits[left][0]]
            right += 1
        while right < len(hits) and hits[right][2] - start <= SNIPPET_WIDTH:
            term = hits[right][0]
            total += strength[term] if inside[term] == 0 else 0.0
            inside[term] += 1
            right += 1
        if total > best:
            best, best_at = total, (start, hits[right - 1][2])
        term = hits[left][0]
        inside[term] -= 1
        total -= strength[term] if inside[term] == 0 else 0.0
    return _widen(text, *best_at)


def _widen(text: str, start: int, end: int) -> tuple[int, int]:
    """Pad ``[start, end)`` evenly to the snippet width, then trim broken words at the edges."""
    spare = max(SNIPPET_WIDTH - (end - start), 0)
    low = max(start - spare // 2, 0)
    high = min(low + max(SNIPPET_WIDTH, end - start), len(text))
    low = max(min(low, high - SNIPPET_WIDTH), 0)
    if low > 0 and not text[low - 1].isspace():
        cut = next((i for i in range(low, start) if text[i].isspace()), None)
        low = low if cut is None else cut + 1
    if high < len(text) and not text[high].isspace():
        cut = next((i for i in range(high - 1, end - 1, -1) if text[i].isspace()), None)
        high = high if cut is None else cut
    return low, high
