"""How much of the headroom a reranker took: first stage, reranked run and oracle per domain.

The ceiling of a reranker of the top ``depth`` is the official oracle of that depth
(docs/protocol.md, ``OracleNDCG@k``): the first stage's top ``depth`` rescored by their
judgments, every other document 0, then trec_eval's ranking. At depth 100 it is the
official ``Oracle NDCG@10``. ``taken`` is the share of the gap between the first stage and
that ceiling the reranked run closed (NaN where there is no gap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mmbright_core.analysis.lineage import Lineage
from mmbright_core.metrics import evaluate
from mmbright_core.rerank.first_stage import runs_fingerprint
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.types import Qrels, Run

MEASURE = MAIN_SCORE
#: The row that averages the domains (unweighted, as the benchmark's figure).
ALL_DOMAINS = "all domains"
COLUMNS = ["domain", "queries", "first_stage", "reranked", "oracle", "gain", "taken"]


def oracle_run(run: Run, qrels: Qrels, depth: int) -> dict[str, dict[str, float]]:
    """Return the official oracle run of ``run`` at ``depth``.

    Each query keeps every document; those of its top ``depth`` (a stable sort on the raw
    score, so ties keep the run's order, as the official code's ``sorted`` does) that are
    judged get their label as score, every other document 0.
    """
    out: dict[str, dict[str, float]] = {}
    for query_id, docs in run.items():
        top = sorted(docs.items(), key=lambda item: -item[1])[:depth]
        judged = qrels.get(query_id, {})
        lifted = {d: float(judged[d]) for d, _ in top if d in judged}
        out[query_id] = {d: lifted.get(d, 0.0) for d in docs}
    return out


def headroom(
    judgments: Mapping[str, Qrels],
    first: Mapping[str, Run],
    reranked: Mapping[str, Run],
    depth: int,
) -> pd.DataFrame:
    """Return nDCG@10 of the first stage, the reranked run and the oracle at ``depth``.

    Args:
        judgments: domain -> the task's qrels.
        first: domain -> the first-stage run.
        reranked: domain -> the reranked run.
        depth: The depth the reranker reordered.

    Returns:
        One row per domain both runs hold (queries both rank), then the mean over them.
    """
    rows: list[dict[str, Any]] = []
    for domain in [d for d in reranked if d in first and d in judgments]:
        both = [q for q in reranked[domain] if q in first[domain]]
        qrels = {q: judgments[domain][q] for q in both if judgments[domain].get(q)}
        if not qrels:
            continue
        pick = {q: first[domain][q] for q in qrels}
        values = [
            evaluate(qrels, run, measures=(MEASURE,)).aggregate[MEASURE]
            for run in (
                pick,
                {q: reranked[domain][q] for q in qrels},
                oracle_run(pick, qrels, depth),
            )
        ]
        rows.append({"domain": domain, "queries": len(qrels), **_row(*values)})
    if rows:
        means = [sum(r[c] for r in rows) / len(rows) for c in ("first_stage", "reranked", "oracle")]
        rows.append(
            {"domain": ALL_DOMAINS, "queries": sum(r["queries"] for r in rows), **_row(*means)}
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def _row(first: float, reranked: float, oracle: float) -> dict[str, float]:
    gap = oracle - first
    taken = (reranked - first) / gap if gap > 0 else math.nan
    return {
        "first_stage": first,
        "reranked": reranked,
        "oracle": oracle,
        "gain": reranked - first,
        "taken": taken,
    }


@dataclass(frozen=True)
class TwoStage:
    """A reranked run and its first stage, as a comparison shows them.

    Attributes:
        reranked: The reranked run's name.
        first: The loaded run that is its first stage (by fingerprint), or None.
        first_label: The first stage's recorded name and place, for when it is not loaded.
        reranker: The reranker's spec.
        depth: How many documents of each query it reordered.
        table: :func:`headroom` of the two, when the first stage is loaded.
    """

    reranked: str
    first: str | None
    first_label: str
    reranker: str
    depth: int
    table: pd.DataFrame | None = None

    def caption(self) -> str:
        """One line: which run reranks which, how deep, with what."""
        first = self.first if self.first is not None else self.first_label
        return f"{self.reranked} reranks the top {self.depth} of {first} with {self.reranker}."


Fingerprint = Callable[[str, Sequence[str]], str]
"""(run name, domains) -> the fingerprint of that run's part over those domains."""


def find_first_stage(
    pair: tuple[str, str],
    runs: Mapping[str, Mapping[str, Run]],
    lineages: Mapping[str, Lineage],
    judgments: Callable[[str], Qrels],
    fingerprint: Fingerprint | None = None,
) -> TwoStage | None:
    """Return B (else A) of ``pair`` as a reranked run with its first stage, or None.

    The first stage is the run whose scores have the fingerprint the reranked run recorded,
    looked for in the other run of the pair first, then among all of ``runs``; the headroom
    table is computed only when it is found.

    Args:
        pair: The names of runs A and B.
        runs: name -> domain -> run, for every run that may be the first stage.
        lineages: name -> the run's lineage (a run missing here has none).
        judgments: domain -> the task's qrels.
        fingerprint: How a run's fingerprint is had (default: computed each time).
    """
    digest = fingerprint or (
        lambda name, domains: runs_fingerprint(
            {d: runs[name][d] for d in domains if d in runs[name]}
        )
    )
    for reranked, other in ((pair[1], pair[0]), (pair[0], pair[1])):
        record = lineages.get(reranked, Lineage()).reranks
        if record is None:
            continue
        depth, domains = int(record.depth or 0), sorted(runs[reranked])
        names = [other, *(n for n in runs if n not in (other, reranked))]
        first = next((n for n in names if digest(n, domains) == record.fingerprint), None)
        table = None
        if first is not None:
            qrels = {d: judgments(d) for d in domains}
            table = headroom(qrels, runs[first], runs[reranked], depth)
        where = "not recorded" if record.path is None else record.path
        label = f"{'?' if record.label is None else record.label} ({where})"
        return TwoStage(reranked, first, label, str(record.reranker), depth, table)
    return None
