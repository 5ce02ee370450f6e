"""The tables the pages show, cut from the core's results: filters and one query's lists.

Nothing here scores or orders a run by itself: filters select rows of the results table,
and one query's ranking goes through the benchmark's protocol (exclusions, then the cut,
``mmbright_core.benchmark``) and the package's one ranking rule (``mmbright_core.ranking``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence

import pandas as pd

from mmbright_core.analysis.compare import JUDGED
from mmbright_core.benchmark import apply_protocol
from mmbright_core.data.ids import display_id
from mmbright_core.data.view import QueryRef
from mmbright_core.present.report_tables import INTEGER_COLUMNS, with_documents
from mmbright_core.ranking import ranked
from mmbright_core.task_table import MAIN_SCORE
from mmbright_core.ui.common.state import RunEntry

PER_QUERY_COLUMNS = (
    "domain",
    "query_id",
    "n_images",
    "n_decodable_images",
    "n_judged",
    "n_relevant",
    "first_relevant_rank",
    "covered",
)


def run_rows(table: pd.DataFrame, run: str, measure: str) -> pd.DataFrame:
    """One run's rows of the results table, with the measure (and Judged@10) by the query id."""
    rows = table.loc[table["run"] == run]
    judged = [JUDGED] if JUDGED in table.columns and measure != JUDGED else []
    columns = [*PER_QUERY_COLUMNS[:2], measure, *judged, *PER_QUERY_COLUMNS[2:]]
    return rows[columns].reset_index(drop=True)


def filter_rows(
    rows: pd.DataFrame,
    measure: str,
    *,
    domains: Collection[str] = (),
    images: tuple[int, int] | None = None,
    scores: tuple[float, float] | None = None,
    scored_only: bool = True,
) -> pd.DataFrame:
    """Keep the rows matching the page's filters (an empty ``domains`` keeps every domain).

    Args:
        rows: One run's rows (:func:`run_rows`).
        measure: The measure column the score range applies to.
        domains: Domains to keep.
        images: Inclusive range of the number of query images.
        scores: Inclusive range of the measure.
        scored_only: Drop queries the measure has no value for (unjudged or not ranked).
    """
    keep = pd.Series(True, index=rows.index)
    if domains:
        keep &= rows["domain"].isin(list(domains))
    if images is not None:
        keep &= rows["n_images"].between(*images)
    if scored_only:
        keep &= rows[measure].notna()
    if scores is not None:
        keep &= rows[measure].between(*scores) | (rows[measure].isna() & ~scored_only)
    return rows.loc[keep].reset_index(drop=True)


def ranking(
    scores: Mapping[str, float],
    qrels: Mapping[str, int],
    excluded: Collection[str],
    k: int = 10,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One query's top ``k`` as scored, and the excluded documents the run had put there.

    Args:
        scores: doc_id -> score of the run for the query.
        qrels: doc_id -> relevance for the query.
        excluded: Doc ids the protocol removes for the query.
        k: How many to show.

    Returns:
        ``(top, removed)``: ``top`` has ``rank``, ``doc_id``, ``score``, ``relevance`` (NaN
        when unjudged) for the ranking after exclusions; ``removed`` lists the excluded
        documents that sat in the run's raw top ``k``, with their raw rank.
    """
    kept = ranked(apply_protocol({"q": scores}, {"q": excluded}, depth=k)["q"])
    top = pd.DataFrame(
        [(i, doc, score, _label(qrels, doc)) for i, (doc, score) in enumerate(kept, start=1)],
        columns=["rank", "doc_id", "score", "relevance"],
    )
    raw = ranked(scores)[:k]
    removed = pd.DataFrame(
        [(i, doc, score) for i, (doc, score) in enumerate(raw, start=1) if doc in excluded],
        columns=["raw_rank", "doc_id", "score"],
    )
    return top, removed


def missed(
    scores: Mapping[str, float],
    qrels: Mapping[str, int],
    excluded: Collection[str],
    k: int = 10,
) -> pd.DataFrame:
    """The query's relevant documents that are not in the top ``k``, with their rank.

    The rank is the document's position in the run after exclusions and the top-1000
    cut (NaN when the run does not retrieve it).
    """
    order = {
        doc: i
        for i, (doc, _) in enumerate(ranked(apply_protocol({"q": scores}, {"q": excluded})["q"]), 1)
    }
    rows = [
        (doc, label, float(order.get(doc, math.nan)))
        for doc, label in qrels.items()
        if label > 0 and order.get(doc, math.inf) > k
    ]
    frame = pd.DataFrame(rows, columns=["doc_id", "relevance", "rank"])
    return frame.sort_values(["rank", "doc_id"], na_position="last", kind="stable").reset_index(
        drop=True
    )


def readable(frame: pd.DataFrame) -> pd.DataFrame:
    """A table of documents as shown: its ``doc_id`` column as ``document``, read by people.

    A Task 4 pair id shows as its passage and image name (or "text only"), never with the
    file format's separator and marker (:func:`~mmbright_core.data.ids.display_id`).
    """
    shown = frame.assign(doc_id=[display_id(str(d)) for d in frame["doc_id"]])
    return shown.rename(columns={"doc_id": "document"})


def walk(
    order: Sequence[tuple[str, str]], current: tuple[str, str] | None, step: int
) -> tuple[str, str] | None:
    """The query ``step`` places from ``current`` in ``order`` (wrapping around).

    A current query outside the list moves to the first (step > 0) or last one.
    """
    if not order:
        return None
    if current not in order:
        return order[0] if step > 0 else order[-1]
    return order[(order.index(current) + step) % len(order)]


def _label(qrels: Mapping[str, int], doc: str) -> float:
    return float(qrels[doc]) if doc in qrels else math.nan


QUERY_CHARS = 160
"""Longest query text shown in a table cell (the inspector shows it whole)."""


def with_text(
    rows: pd.DataFrame, texts: Mapping[tuple[str, str], str], limit: int | None = QUERY_CHARS
) -> pd.DataFrame:
    """Insert a ``query`` column (its text on one line, cut to ``limit``) after ``query_id``.

    ``limit=None`` keeps the whole text (a CSV export carries it whole).
    """
    shown = [
        cut_query(texts.get((str(d), str(q)), ""), limit)
        for d, q in zip(rows["domain"], rows["query_id"], strict=True)
    ]
    out = rows.copy()
    out.insert(list(out.columns).index("query_id") + 1, "query", shown)
    return out


def cut_query(text: str, limit: int | None = QUERY_CHARS) -> str:
    """A query text on one line, cut to ``limit`` characters (an ellipsis ends a cut one)."""
    flat = " ".join(text.split())
    return flat if limit is None or len(flat) <= limit else flat[: limit - 1] + "…"


def named_columns(
    rows: pd.DataFrame, run_a: str, run_b: str | None, measure: str = MAIN_SCORE
) -> pd.DataFrame:
    """A table as a CSV download has it: each run's column named after the run.

    A CSV has no header tooltips: ``nDCG@10`` and ``nDCG@10 (B)`` (or ``a`` and ``b``,
    ``mean_a`` and ``mean_b``) become ``nDCG@10 (bm25)`` and ``nDCG@10 (ocr-bm25)``,
    ``delta`` ``delta (ocr-bm25 − bm25)``, ``rank_a`` ``rank (bm25)``: every download names
    the two runs the same way. Ranks and counts are whole numbers (blank where missing), and
    a ``doc_id`` column is preceded by the document as the pages show it (a Task 4 pair as
    its passage and image), the raw id kept beside it.
    """
    names = {
        measure: f"{measure} ({run_a})",
        JUDGED: f"{JUDGED} ({run_a})",
        "first_relevant_rank": f"first_relevant_rank ({run_a})",
        "covered": f"covered ({run_a})",
    }
    for side, run in (("a", run_a), ("b", run_b)):
        if run is None:
            continue
        names |= {
            side: f"{measure} ({run})",
            f"mean_{side}": f"{measure} ({run})",
            f"judged_{side}": f"{JUDGED} ({run})",
            f"rank_{side}": f"rank ({run})",
            f"first_relevant_rank_{side}": f"first_relevant_rank ({run})",
        }
    if run_b is not None:
        names |= {
            f"{measure} (B)": f"{measure} ({run_b})",
            f"{JUDGED} (B)": f"{JUDGED} ({run_b})",
            "delta": f"delta ({run_b} − {run_a})",
        }
    whole = {
        column: rows[column].astype("Int64")
        for column in rows.columns
        if column in INTEGER_COLUMNS | {"rank", "raw_rank"}
        and pd.api.types.is_numeric_dtype(rows[column])
        and not pd.api.types.is_bool_dtype(rows[column])
    }
    return with_documents(rows.assign(**whole)).rename(columns=names)


def with_pair(rows: pd.DataFrame, deltas: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Add run B's value and ``delta`` (B − A) to run A's rows, from :func:`paired_deltas`.

    Queries scored in only one run get NaN in both columns. B's Judged@10 follows A's
    when both are known.
    """
    pair = deltas[["domain", "query_id", "b", "delta"]].rename(columns={"b": f"{measure} (B)"})
    judged = JUDGED in rows.columns and "judged_b" in deltas.columns
    if judged:
        pair[f"{JUDGED} (B)"] = deltas["judged_b"]
    merged = rows.merge(pair, on=["domain", "query_id"], how="left")
    columns = list(rows.columns)
    at = columns.index(measure) + 1
    order = [*columns[:at], f"{measure} (B)", "delta", *columns[at:]]
    if judged:
        order.insert(order.index(JUDGED) + 1, f"{JUDGED} (B)")
    return merged[order]


def picked(frame: pd.DataFrame, positions: Sequence[int]) -> tuple[str, str] | None:
    """(domain, query_id) of the first selected position of a table or chart, if any."""
    for position in positions:
        if 0 <= position < len(frame):
            row = frame.iloc[position]
            return str(row["domain"]), str(row["query_id"])
    return None


def scored(entry: RunEntry, ref: QueryRef) -> Mapping[str, float]:
    """One query's ranking in a run as the benchmark scores it (exclusions, top-1000 cut).

    The run's own policy for ``negative_ids`` says what is excluded.
    """
    scores = entry.runs.get(ref.domain, {}).get(ref.query_id, {})
    excluded = {ref.query_id: ref.excluded(entry.negatives)}
    return apply_protocol({ref.query_id: scores}, excluded)[ref.query_id]
