"""``evaluate``: trec_eval's measures over qrels and a run.

Every measure of a query depends only on where its judged documents sit in the ranking,
so this module finds the rank of each judged document (never sorting a whole ranking)
and computes all measures from those ranks with numpy. The semantics are trec_eval's
(docs/protocol.md, Scoring), checked against pytrec_eval to 1e-9 in the tests:

- Ranking: score descending, ties by doc id descending (:mod:`mmbright_core.ranking`).
- Relevant means a label of 1 or more. Gains are linear (the label itself); labels below
  1 add nothing, negative ones included (pytrec_eval gives them gain 0 as well).
- The ideal DCG comes from all the query's judgments, not from the retrieved list.
- A query with no judgment at all is dropped and counted (pytrec_eval's output is
  nondeterministic there); one whose judgments are all 0 scores 0 and is kept.
- ``missing="skip"`` averages over queries in both qrels and run (pytrec_eval and the
  official harness); ``"zero"`` also counts judged queries absent from the run as 0
  (trec_eval ``-c``, ir_measures). A query present with an empty ranking scores 0 in both.
- Scores are read as 64-bit floats and compared at float32 precision, as trec_eval holds
  them (:func:`mmbright_core.ranking.ranking_scores`): 1.0 and 1.0 + 1e-9 tie and the doc
  id decides, exactly as in trec_eval and pytrec_eval. docs/protocol.md, Scoring's "compared as
  64-bit floats" would rank such near-ties differently from the reference these scores must equal.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Mapping
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.errors import InputError, show
from mmbright_core.measures import FAMILIES, Measure, parse_measures
from mmbright_core.metrics._oracle import oracle_hits
from mmbright_core.metrics._ranks import DictRun, FloatArray, IntArray
from mmbright_core.metrics.id_check import MappingIds, check_ids
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.types import EvalCounts, EvalResult, Missing, Qrels

if TYPE_CHECKING:
    from mmbright_core.metrics._table import TableRun

RELEVANT = 1
"""The smallest label that counts as relevant for P, R, AP and RR (trec_eval's default)."""

_WHOLE_RANKING = np.iinfo(np.int64).max  # the cutoff of AP and RR written without one


def evaluate(
    qrels: Qrels,
    run: Any,
    measures: Iterable[str | Measure] | str | Measure = (MAIN_SCORE,),
    missing: Missing = "skip",
) -> EvalResult:
    """Score a run against qrels with trec_eval's semantics.

    Args:
        qrels: query_id -> doc_id -> integer label.
        run: query_id -> doc_id -> score, or a pandas DataFrame / pyarrow Table with the
            columns ``query_id``, ``doc_id`` and ``score``, which is validated and scored on
            its columns (each query's documents in row order), never turned into a mapping;
            or such a table already validated (``io.runs.read_run_to_score``).
        measures: Measure names or :class:`~mmbright_core.measures.Measure` values, or one.
        missing: ``"skip"`` or ``"zero"``: how judged queries absent from the run count.

    Returns:
        Per-query values, their means (NaN when no query was evaluated), the counts, and
        the run's ids that match nothing or only after normalisation (ids match exactly,
        as in trec_eval; :mod:`mmbright_core.metrics.id_check` only reports).

    Raises:
        InputError: Bad labels, scores (NaN, infinite, not numbers), duplicate rows, a
            bad ``missing`` or a malformed measure; the message names query and doc.
        UnknownNameError: An unknown measure name.
    """
    wanted = parse_measures(measures)
    if missing not in ("skip", "zero"):
        raise InputError("bad missing rule", expected="'skip' or 'zero'", found=repr(missing))
    _check_qrels(qrels)
    # pandas and pyarrow load only for a table.
    source: DictRun | TableRun = DictRun(run) if isinstance(run, Mapping) else _table_run(run)
    in_run = source.query_ids
    judged = [q for q, docs in qrels.items() if docs]
    evaluated = [q for q in judged if q in in_run or missing == "zero"]
    index = {q: i for i, q in enumerate(evaluated)}
    present = {q: qrels[q] for q in evaluated if q in in_run}
    found = _Found(evaluated, qrels, *source.hits(present, index))
    found.oracle = functools.partial(oracle_hits, source, present, index)
    per_query: dict[str, dict[str, float]] = {}
    aggregate: dict[str, float] = {}
    for measure in wanted:
        values = _COMPUTE[measure.family](found, measure.cutoff or _WHOLE_RANKING)
        per_query[str(measure)] = dict(zip(evaluated, values.tolist(), strict=True))
        aggregate[str(measure)] = float(values.mean()) if values.size else math.nan
    counts = EvalCounts(
        evaluated=len(evaluated),
        dropped_empty_qrels=len(qrels) - len(judged),
        missing_from_run=sum(q not in in_run for q in judged),
        extra_in_run=len(in_run - qrels.keys()),
    )
    hit = set(np.unique(found.query).tolist())
    blind = (q for q in present if index[q] not in hit)
    ids = check_ids(
        qrels, MappingIds(run, source.unusual) if isinstance(source, DictRun) else source, blind
    )
    return EvalResult(per_query, aggregate, counts, missing, tuple(map(str, wanted)), ids)


def _table_run(run: Any) -> TableRun:
    from mmbright_core.io._columns import RunColumns, run_columns
    from mmbright_core.metrics._table import TableRun

    columns = run if isinstance(run, RunColumns) else run_columns(run, "run", "scorer")
    return TableRun(columns)


def _check_qrels(qrels: Qrels) -> None:
    """Reject qrels that trec_eval would: non-string ids, labels that are not integers."""
    if not isinstance(qrels, Mapping):
        raise InputError(
            "qrels must be a mapping",
            expected="query_id -> doc_id -> label",
            found=type(qrels).__name__,
        )
    for query_id, docs in qrels.items():
        # type() first: ABC isinstance checks (Mapping, Integral) cost a microsecond each.
        if not isinstance(query_id, str) or not (type(docs) is dict or isinstance(docs, Mapping)):
            raise InputError(
                "malformed qrels entry",
                source="qrels",
                expected="str query_id -> mapping of doc_id -> label",
                found=f"{query_id!r} -> {type(docs).__name__}",
            )
        for doc_id, label in docs.items():
            if not isinstance(doc_id, str) or (type(label) is not int and not _is_integer(label)):
                raise InputError(
                    f"bad judgment for query {show(query_id)}, doc {show(str(doc_id))}",
                    source="qrels",
                    expected="a str doc id and an integer label",
                    found=f"{doc_id!r}: {label!r}",
                    hint="Labels are integers, as in trec_eval qrels (cast with int())",
                )


def _is_integer(label: object) -> bool:
    return isinstance(label, Integral) and not isinstance(label, bool)


class _Found:
    """Judged documents' ranks, and the judgments, as arrays over the evaluated queries.

    Attributes:
        n: The number of evaluated queries.
        query: For each judged document the run retrieved, its query's index.
        rank: Its 0-based rank.
        label: Its label. The three are sorted by query, then rank (trec_eval's order of
            summation).
        num_relevant: Per query, how many judgments are relevant.
        oracle: Computes the relevant documents' (query, rank, label) in the official
            oracle run (:mod:`mmbright_core.metrics._oracle`); asked once, when needed.
    """

    oracle: Callable[[], tuple[IntArray, IntArray, IntArray]]

    def __init__(
        self, evaluated: list[str], qrels: Qrels, query: IntArray, rank: IntArray, label: IntArray
    ) -> None:
        self.n = len(evaluated)
        order = np.lexsort((rank, query))
        self.query, self.rank, self.label = query[order], rank[order], label[order]
        sizes = [len(qrels[q]) for q in evaluated]
        labels = np.fromiter(
            (v for q in evaluated for v in qrels[q].values()), np.int64, sum(sizes)
        )
        owner = np.repeat(np.arange(self.n), sizes)
        self.num_relevant = _sum_by(owner, (labels >= RELEVANT).astype(np.float64), self.n)
        # The ideal ranking: every judgment of the query, best label first (docs/protocol.md,
        # Scoring).
        self._ideal = _best_first(owner, labels)

    @functools.cached_property
    def oracle_hits(self) -> tuple[IntArray, IntArray, IntArray]:
        return self.oracle()

    def relevant_hits(self) -> tuple[IntArray, IntArray]:
        keep = self.label >= RELEVANT
        return self.query[keep], self.rank[keep]

    def ideal(self, k: int) -> FloatArray:
        """Ideal DCG@k of each query."""
        return _dcg_at(*self._ideal, k, self.n)


def _best_first(query: IntArray, label: IntArray) -> tuple[IntArray, IntArray, IntArray]:
    """Sort (query, label) pairs by query, then label descending; add positions in query."""
    order = np.lexsort((-label, query))
    query, label = query[order], label[order]
    return query, np.arange(query.size) - np.searchsorted(query, query), label


def _dcg_at(query: IntArray, position: IntArray, gain: IntArray, k: int, n: int) -> FloatArray:
    """Per-query DCG@k: linear gain over log2(rank + 1), labels below 1 adding nothing."""
    keep = (position < k) & (gain > 0)
    return _sum_by(query[keep], gain[keep] / np.log2(position[keep] + 2.0), n)


def _sum_by(query: IntArray, values: FloatArray, n: int) -> FloatArray:
    """Per-query sums, adding in array order (as trec_eval adds down the ranking)."""
    # astype: numpy returns integers when ``values`` is empty.
    return np.bincount(query, values, minlength=n).astype(np.float64)


def _ratio(top: FloatArray, bottom: FloatArray) -> FloatArray:
    return np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0)


def _ndcg(found: _Found, k: int) -> FloatArray:
    return _ratio(_dcg_at(found.query, found.rank, found.label, k, found.n), found.ideal(k))


def _oracle_ndcg(found: _Found, k: int) -> FloatArray:
    """nDCG@k of the official harness's oracle run (:mod:`mmbright_core.metrics._oracle`).

    The run's top 100 scored by their labels, every other document of the run by 0, then
    ranked as trec_eval ranks: a relevant document below rank 100 can re-enter among the
    zeros by doc id, as it does in the official numbers.
    """
    return _ratio(_dcg_at(*found.oracle_hits, k, found.n), found.ideal(k))


def _in_top(found: _Found, k: int, relevant_only: bool) -> FloatArray:
    query, rank = found.relevant_hits() if relevant_only else (found.query, found.rank)
    keep = rank < k
    return _sum_by(query[keep], np.ones(np.count_nonzero(keep)), found.n)


def _precision(found: _Found, k: int) -> FloatArray:
    return _in_top(found, k, relevant_only=True) / k


def _recall(found: _Found, k: int) -> FloatArray:
    return _ratio(_in_top(found, k, relevant_only=True), found.num_relevant)


def _judged(found: _Found, k: int) -> FloatArray:
    return _in_top(found, k, relevant_only=False) / k


def _average_precision(found: _Found, k: int) -> FloatArray:
    query, rank = found.relevant_hits()
    nth = np.arange(query.size) - np.searchsorted(query, query) + 1.0
    keep = rank < k
    total = _sum_by(query[keep], nth[keep] / (rank[keep] + 1.0), found.n)
    return _ratio(total, found.num_relevant)


def _reciprocal_rank(found: _Found, k: int) -> FloatArray:
    query, rank = found.relevant_hits()
    first = np.r_[True, query[1:] != query[:-1]] if query.size else np.zeros(0, bool)
    first &= rank < k
    values = np.zeros(found.n)
    values[query[first]] = 1.0 / (rank[first] + 1.0)
    return values


_COMPUTE: dict[str, Callable[[_Found, int], FloatArray]] = {
    "nDCG": _ndcg,
    "P": _precision,
    "R": _recall,
    "AP": _average_precision,
    "RR": _reciprocal_rank,
    "Judged": _judged,
    "OracleNDCG": _oracle_ndcg,
}
if _COMPUTE.keys() != FAMILIES.keys():  # pragma: no cover - a registry edit missed here
    raise RuntimeError("every measure family needs a computation in metrics._COMPUTE")
