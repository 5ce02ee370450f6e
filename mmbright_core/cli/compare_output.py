"""How ``mmbright compare`` prints a comparison: TSV rows or JSON, one column set per table.

Measures are written with four decimals in TSV and at full precision in JSON; ranks and
counts, floats only because their column may miss a value, as integers in both, as the
HTML report writes them (``present/report_tables.INTEGER_COLUMNS``).
"""

from __future__ import annotations

import json
import math
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from mmbright_core.analysis.compare import Comparison

_SUMMARY = [
    "scope",
    "queries",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "wins",
    "ties",
    "losses",
    "t",
    "p_t",
    "p_t_holm",
    "p_perm",
    "p_perm_holm",
    "perm_exact",
    "cohens_d",
]
_HURT = [
    "domain",
    "query_id",
    "a",
    "b",
    "delta",
    "n_images",
    "n_decodable_images",
    "query_chars",
    "first_relevant_rank_a",
    "first_relevant_rank_b",
    "tags",
]
_SLICE = ["group", "queries", "mean_a", "mean_b", "delta", "ci_low", "ci_high"]
_SLICE += ["wins", "ties", "losses"]


def print_tsv(
    comparison: Comparison,
    hurt: pd.DataFrame,
    out: IO[str],
    sliced: pd.DataFrame | None = None,
    by: str | None = None,
) -> None:
    """Print the header line, the summary, the most-hurt queries and the slice ``by``, as TSV."""
    print(
        f"# {comparison.run_b} vs {comparison.run_a}: {comparison.measure}, delta = B - A; "
        f"seed {comparison.seed}, {comparison.n_resamples} resamples; "
        f"{comparison.unpaired} queries scored in one run only",
        file=out,
    )
    _print_rows(comparison.summary, _SUMMARY, out)
    print(f"\n# most hurt queries (top {len(hurt)})", file=out)
    _print_rows(hurt, _HURT, out)
    if sliced is not None:
        print(f"\n# image effect by {by}", file=out)
        _print_rows(sliced, _SLICE, out)


def _print_rows(frame: pd.DataFrame, columns: list[str], out: IO[str]) -> None:
    print("\t".join(columns), file=out)
    for row in frame[columns].itertuples(index=False):
        print("\t".join(_cell(c, v) for c, v in zip(columns, row, strict=True)), file=out)


def _cell(column: str, value: Any) -> str:
    import pandas as pd

    from mmbright_core.present.report_tables import INTEGER_COLUMNS

    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        # A rank or count is a float only because its column may miss a value.
        return str(int(value)) if column in INTEGER_COLUMNS else f"{value:.4f}"
    return "nan" if value is pd.NA else str(value)


def print_json(
    comparison: Comparison, hurt: pd.DataFrame, out: IO[str], sliced: pd.DataFrame | None = None
) -> None:
    """Print the comparison, its most-hurt queries and its slice as one JSON object."""
    data = {
        "run_a": comparison.run_a,
        "run_b": comparison.run_b,
        "measure": comparison.measure,
        "seed": comparison.seed,
        "n_resamples": comparison.n_resamples,
        "unpaired": comparison.unpaired,
        "summary": _records(comparison.summary, _SUMMARY),
        "most_hurt": _records(hurt, _HURT),
    }
    if sliced is not None:
        data["slice"] = _records(sliced, _SLICE)
    json.dump(data, out, indent=2, allow_nan=False, default=_plain)
    out.write("\n")


def _records(frame: pd.DataFrame, columns: list[str]) -> list[dict[str, Any]]:
    records = frame[columns].astype(object).to_dict(orient="records")
    return [{k: _json_value(k, v) for k, v in r.items()} for r in records]


def _json_value(column: str, value: Any) -> Any:
    import pandas as pd

    from mmbright_core.present.report_tables import INTEGER_COLUMNS

    if value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if column in INTEGER_COLUMNS and isinstance(value, float):
        return int(value)  # a rank or count, a float only because its column may miss one
    return value


def _plain(value: Any) -> Any:
    # numpy scalars from pandas rows: hand JSON the Python number.
    return value.item()
