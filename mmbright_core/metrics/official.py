"""The official harness's metrics.json: its metric names and how each value is computed.

Metric values are fractions rounded to 5 decimals; metric names are the official ones
(``NDCG@10``...), each mapped to this package's measure (docs/protocol.md, Scoring and The official
harness's files). The files these values are written to and read from are
:mod:`mmbright_core.io.official`'s business.
"""

from __future__ import annotations

from mmbright_core.errors import InputError
from mmbright_core.metrics import evaluate
from mmbright_core.types import Qrels, Run

OFFICIAL_KS: tuple[int, ...] = (1, 5, 10, 25, 50, 100)

# Official metric name -> this package's measure, in the official file's key order.
OFFICIAL_MEASURES: dict[str, str] = {
    **{f"NDCG@{k}": f"nDCG@{k}" for k in OFFICIAL_KS},
    **{f"MAP@{k}": f"AP@{k}" for k in OFFICIAL_KS},  # pytrec_eval map_cut
    **{f"Recall@{k}": f"R@{k}" for k in OFFICIAL_KS},
    **{f"P@{k}": f"P@{k}" for k in OFFICIAL_KS},
    "MRR": "RR",  # recip_rank over the whole run, no cut-off
    **{f"Oracle NDCG@{k}": f"OracleNDCG@{k}" for k in OFFICIAL_KS},
}


def official_metrics(qrels: Qrels, run: Run) -> dict[str, float]:
    """Compute the official metrics.json content for one domain.

    Averages over the queries present in both qrels and run, as the official harness
    (pytrec_eval) does, and rounds each fraction to 5 decimals (docs/protocol.md, Scoring and The
    official harness's files).

    Returns:
        Official metric name -> value, in the official key order.

    Raises:
        InputError: No judged query of the run can be evaluated.
    """
    result = evaluate(qrels, run, measures=tuple(OFFICIAL_MEASURES.values()), missing="skip")
    if result.counts.evaluated == 0:
        raise InputError(
            "no query can be evaluated",
            expected="at least one query with judgments that the run ranks",
            found=f"{len(run)} run queries, {len(qrels)} qrels queries",
            hint="Check that the run and the qrels come from the same task and domain",
        )
    return {name: round(result.aggregate[m], 5) for name, m in OFFICIAL_MEASURES.items()}
