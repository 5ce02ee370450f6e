"""Results tables written by hand: rows in the columns of ``analysis.table``'s per-query table."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

#: The per-query results table's columns, in order (one row per run and query).
COLUMNS = [
    "run",
    "task",
    "domain",
    "query_id",
    "nDCG@10",
    "n_images",
    "n_decodable_images",
    "query_chars",
    "n_judged",
    "n_relevant",
    "first_relevant_rank",
    "covered",
]


def results_frame(rows: Iterable[tuple[object, ...]]) -> pd.DataFrame:
    """A results table holding ``rows``, each a tuple in the order of :data:`COLUMNS`."""
    return pd.DataFrame(list(rows), columns=COLUMNS)
