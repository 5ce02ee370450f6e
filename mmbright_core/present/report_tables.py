"""The report's tables: readable column headings and each value written as its kind.

Counts, ranks and relevance grades are whole numbers, but pandas keeps them as floats in
any column that may hold a missing value (a document one run did not rank, an unjudged
one), so they are written as integers by column name, not by dtype. Headings are words
that wrap and measures have three decimals, so a table fits a 1,000 px page.
"""

from __future__ import annotations

import html
import math
import numbers

import numpy as np
import pandas as pd

from mmbright_core.data.ids import display_id

_COUNTS = ("task", "queries", "wins", "ties", "losses", "n_judged", "n_relevant", "query_chars")
_IMAGES = ("n_images", "n_decodable_images")
_RANKS = ("relevance", "rank_a", "rank_b", "first_relevant_rank")
INTEGER_COLUMNS = frozenset(
    (*_COUNTS, *_IMAGES, *_RANKS, "first_relevant_rank_a", "first_relevant_rank_b")
)
"""Columns of whole numbers (counts, ranks, relevance grades), floats only for a missing value."""

DECIMALS = 3
"""Decimals of a measure value, as on the dashboard's pages."""
_SIGNED = frozenset({"delta", "ci_low", "ci_high", "gain"})  # differences carry their sign
P_VALUES = frozenset({"p_t", "p_t_holm", "p_perm", "p_perm_holm"})
P_FLOOR = 1e-4
"""A p-value below this is written ``< 1e-4``; others have four decimals."""
_PERCENTS = frozenset({"taken"})  # a share, shown as its metric on the page shows it
DELTA_COLUMNS = (
    *("scope", "queries", "mean_a", "mean_b", "delta", "ci_low", "ci_high"),
    *("wins", "ties", "losses"),
)
TEST_COLUMNS = ("scope", "t", "p_t", "p_t_holm", "p_perm", "p_perm_holm", "perm_exact", "cohens_d")
"""The summary's columns in its two tables (:func:`summary_tables`)."""
MISSING = "–"
LABELS = {
    "query_id": "query id",
    "doc_id": "doc id",
    "a": "A",
    "b": "B",
    "mean_a": "A",
    "mean_b": "B",
    "delta": "B − A",
    "ci_low": "95% CI low",
    "ci_high": "95% CI high",
    "p_t": "p (t)",
    "p_t_holm": "p (t) Holm",
    "p_perm": "p (perm.)",
    "p_perm_holm": "p (perm.) Holm",
    "perm_exact": "perm. exact",
    "cohens_d": "Cohen's d",
    "n_images": "images",
    "n_decodable_images": "decoded images",
    "query_chars": "query chars",
    "n_judged": "judged",
    "n_relevant": "relevant",
    "first_relevant_rank_a": "first relevant rank A",
    "first_relevant_rank_b": "first relevant rank B",
    "rank_a": "rank A",
    "rank_b": "rank B",
}
"""Column -> heading; any other column is headed by its name with spaces for underscores."""
_RUN_SIDES = {"a": 0, "mean_a": 0, "b": 1, "mean_b": 1}


def label(column: str, runs: tuple[str, str] | None = None) -> str:
    """The heading of ``column`` in the report; run A's and B's values named after ``runs``."""
    if runs is not None and column in _RUN_SIDES:
        return f"{runs[_RUN_SIDES[column]]} ({LABELS[column]})"
    return LABELS.get(column, column.replace("_", " "))


def format_value(column: str, value: object) -> str:
    """Write one cell: whole numbers without decimals, measures with three, yes / no for flags.

    Args:
        column: The column the value comes from (decides integer and signed formats).
        value: The cell.

    Returns:
        The text shown; a missing number is shown as an en dash.
    """
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if value is pd.NA or (isinstance(value, numbers.Real) and math.isnan(value)):
        return MISSING
    if not isinstance(value, numbers.Real):
        return str(value)
    if isinstance(value, numbers.Integral) or (
        column in INTEGER_COLUMNS and float(value).is_integer()
    ):
        return str(int(float(value)))
    if column in P_VALUES:
        return f"< {P_FLOOR:.0e}".replace("e-0", "e-") if value < P_FLOOR else f"{value:.4f}"
    if column in _PERCENTS:
        return f"{value:.0%}"
    return f"{value:+.{DECIMALS}f}" if column in _SIGNED else f"{value:.{DECIMALS}f}"


def summary_tables(summary: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A comparison's summary as two tables, its deltas then their tests, each narrow.

    Split so that every column, the Holm-corrected p-values included, fits a 1,000 px page.
    """
    deltas = [c for c in DELTA_COLUMNS if c in summary.columns]
    tests = [c for c in TEST_COLUMNS if c in summary.columns]
    tests += [c for c in summary.columns if c not in deltas + tests]
    return summary[deltas], summary[tests]


def shown_table(frame: pd.DataFrame, runs: tuple[str, str] | None = None) -> pd.DataFrame:
    """A table as the report and the dashboard show it: readable headings, each cell as text.

    Args:
        frame: The table, with the core's column names (``mean_a``, ``p_t_holm``).
        runs: Runs A and B, to name their columns after (``bm25 (A)``).
    """
    cells = {
        label(str(c), runs): [format_value(str(c), v) for v in frame[c]] for c in frame.columns
    }
    return pd.DataFrame(cells, index=range(len(frame)))


def with_documents(frame: pd.DataFrame) -> pd.DataFrame:
    """Put a ``document`` column, the doc id as the pages show it, before ``doc_id``.

    A Task 4 pair reads ``passage + image_1.png`` or ``passage (text only)``
    (:func:`~mmbright_core.data.ids.display_id`); the raw id stays in its own column, so an
    export still joins with the run and qrels files.
    """
    if "doc_id" not in frame.columns or "document" in frame.columns:
        return frame
    out = frame.copy()
    out.insert(
        list(out.columns).index("doc_id"), "document", [display_id(str(d)) for d in out["doc_id"]]
    )
    return out


def html_table(frame: pd.DataFrame, runs: tuple[str, str] | None = None) -> str:
    """Render a table with readable headings; numbers right-aligned, text free to wrap."""
    shown = shown_table(frame, runs)
    kinds = [_kind(frame[c]) for c in frame.columns]
    head = "".join(
        f'<th class="{k}">{escape(c)}</th>' for c, k in zip(shown.columns, kinds, strict=True)
    )
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{k}">{escape(v)}</td>' for k, v in zip(kinds, row, strict=True))
        + "</tr>"
        for row in shown.itertuples(index=False)
    )
    table = f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    # An id too long to fit scrolls inside its own box instead of widening the whole page.
    return f'<div class="table">{table}</div>'


def _kind(column: pd.Series) -> str:
    """``num`` (right-aligned) for a column of numbers, ``text`` for ids, words and flags."""
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    return "num" if numeric else "text"


def escape(text: object) -> str:
    """Escape ``text`` for HTML text and attribute values (quotes too)."""
    return html.escape(str(text), quote=True)
