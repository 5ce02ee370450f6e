"""Paired comparison of two runs on the same queries, and where the difference comes from.

Run A is the baseline (e.g. text only) and run B the challenger (e.g. text + image);
``delta = B - A`` per query. Each domain and the pooled set of queries get wins/ties/losses,
a paired randomisation test, a paired t-test, a bootstrap interval of the mean delta and
Cohen's d; the per-domain p-values are Holm-corrected as one family. The image-effect
breakdowns answer the paper's question (docs/protocol.md, Published numbers): where do query images
hurt?
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mmbright_core.analysis import stats
from mmbright_core.errors import InputError, UnknownNameError

POOLED = "(pooled)"
"""The ``scope`` of the summary row over all paired queries together."""

QUERY_FEATURES = ("n_images", "n_decodable_images", "query_chars", "n_judged", "n_relevant")
JUDGED = "Judged@10"
"""Share of a run's top 10 that has a judgment; paired as ``judged_a`` / ``judged_b``."""
_KEYS = ["task", "domain", "query_id"]
_LENGTH_EDGES = (0, 500, 1000, 2000, 4000, np.inf)
_LENGTH_LABELS = ("<500", "500-999", "1000-1999", "2000-3999", "4000+")
_IMAGE_EDGES = (-0.5, 0.5, 1.5, 2.5, 5.5, np.inf)
_IMAGE_LABELS = ("0", "1", "2", "3-5", "6+")


@dataclass(frozen=True)
class Comparison:
    """Two runs compared query by query.

    Attributes:
        run_a: The baseline run's name.
        run_b: The other run's name.
        measure: The measure compared (e.g. ``"nDCG@10"``).
        seed: Seed of the resampling tests (results are a function of it).
        n_resamples: Resamples of the randomisation test and the bootstrap.
        per_query: One row per paired query: ``task``, ``domain``, ``query_id``, ``a``,
            ``b``, ``delta``, the query features, ``first_relevant_rank_a`` and ``_b``, and
            ``judged_a`` / ``judged_b`` (Judged@10) when the results table has that measure.
        summary: One row per domain, then the pooled row (``scope`` = ``POOLED``).
        unpaired: Queries scored in only one of the two runs (left out of every statistic).
    """

    run_a: str
    run_b: str
    measure: str
    seed: int
    n_resamples: int
    per_query: pd.DataFrame
    summary: pd.DataFrame
    unpaired: int


def paired_summary(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    seed: int = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> dict[str, float | int | bool]:
    """Every paired statistic of B against A for one set of queries.

    Args:
        a: Per-query values of run A.
        b: Per-query values of run B, in the same query order.
        seed: Seed of the randomisation test and the bootstrap.
        n_resamples: Resamples of both.

    Returns:
        ``queries``, ``mean_a``, ``mean_b``, ``delta``, ``ci_low``, ``ci_high``, ``wins``,
        ``ties``, ``losses``, ``t``, ``p_t``, ``p_perm``, ``perm_exact``, ``cohens_d``.
    """
    a_arr, b_arr = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    deltas = stats.as_deltas(b_arr - a_arr)
    wins, ties, losses = stats.wins_ties_losses(deltas)
    low, high = stats.bootstrap_ci(deltas, n_resamples=n_resamples, seed=seed)
    t_test = stats.paired_t_test(deltas)
    perm = stats.permutation_test(deltas, n_resamples=n_resamples, seed=seed)
    empty = deltas.size == 0
    return {
        "queries": int(deltas.size),
        "mean_a": np.nan if empty else float(a_arr.mean()),
        "mean_b": np.nan if empty else float(b_arr.mean()),
        "delta": np.nan if empty else float(deltas.mean()),
        "ci_low": low,
        "ci_high": high,
        "wins": wins,
        "ties": ties,
        "losses": losses,
        "t": t_test.statistic,
        "p_t": t_test.p_value,
        "p_perm": np.nan if empty else perm.p_value,
        "perm_exact": perm.exact,
        "cohens_d": stats.cohens_d_paired(deltas),
    }


def compare_runs(
    table: pd.DataFrame,
    run_a: str,
    run_b: str,
    measure: str = "nDCG@10",
    *,
    seed: int = stats.DEFAULT_SEED,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
) -> Comparison:
    """Compare two runs of a results table on the queries both were scored on.

    Each domain is tested on its own and all queries are pooled (a micro average over
    queries; the benchmark's headline number is the macro average over domains, which the
    leaderboard shows). Holm's correction runs over the per-domain family; the pooled test
    is the one pre-planned question and keeps its raw p-value.

    Args:
        table: A results table (:func:`mmbright_core.analysis.table.results_table`).
        run_a: The baseline run.
        run_b: The run compared against it.
        measure: The measure column.
        seed: Seed of the resampling tests.
        n_resamples: Resamples of the randomisation test and the bootstrap.

    Returns:
        The comparison.
    """
    per_query, unpaired = _pair(table, run_a, run_b, measure)
    rows = []
    for domain, group in per_query.groupby("domain", sort=True):
        rows.append({"scope": domain, **_summary(group, seed, n_resamples)})
    family = pd.DataFrame(rows)
    for column in ("p_t", "p_perm"):
        family[f"{column}_holm"] = stats.holm(family[column]) if rows else []
    pooled = {"scope": POOLED, **_summary(per_query, seed, n_resamples)}
    pooled.update(p_t_holm=pooled["p_t"], p_perm_holm=pooled["p_perm"])
    summary = pd.concat([family, pd.DataFrame([pooled])], ignore_index=True)
    return Comparison(run_a, run_b, measure, seed, n_resamples, per_query, summary, unpaired)


def _summary(group: pd.DataFrame, seed: int, n_resamples: int) -> dict[str, float | int | bool]:
    return paired_summary(group["a"], group["b"], seed=seed, n_resamples=n_resamples)


def _pair(table: pd.DataFrame, run_a: str, run_b: str, measure: str) -> tuple[pd.DataFrame, int]:
    known = table["run"].unique().tolist()
    for name in (run_a, run_b):
        if name not in known:
            raise UnknownNameError("run", name, known)
    if measure not in table.columns:
        raise InputError("the results table has no such measure", found=measure)
    if run_a == run_b:
        raise InputError("a run cannot be compared with itself", found=run_a)
    columns = [*_KEYS, measure, "first_relevant_rank"]
    judged = JUDGED in table.columns and measure != JUDGED
    if judged:
        columns.append(JUDGED)
    side_a = table.loc[table["run"] == run_a, [*columns, *QUERY_FEATURES]]
    side_b = table.loc[table["run"] == run_b, columns]
    merged = side_a.merge(side_b, on=_KEYS, how="outer", suffixes=("_a", "_b"))
    merged = merged.rename(columns={f"{measure}_a": "a", f"{measure}_b": "b"})
    both = merged["a"].notna() & merged["b"].notna()
    unpaired = int((merged["a"].notna() | merged["b"].notna()).sum() - both.sum())
    paired = merged.loc[both].copy()
    paired["delta"] = paired["b"] - paired["a"]
    order = [*_KEYS, "a", "b", "delta", *QUERY_FEATURES]
    order += ["first_relevant_rank_a", "first_relevant_rank_b"]
    if judged:
        paired = paired.rename(columns={f"{JUDGED}_a": "judged_a", f"{JUDGED}_b": "judged_b"})
        order += ["judged_a", "judged_b"]
    return paired[order].sort_values(_KEYS, kind="stable").reset_index(drop=True), unpaired


def paired_deltas(
    table: pd.DataFrame, run_a: str, run_b: str, measure: str = "nDCG@10"
) -> pd.DataFrame:
    """The per-query deltas of two runs alone (``Comparison.per_query``, with no statistics).

    For callers that only order queries by how much B lost, such as the inspector's walk.
    """
    return _pair(table, run_a, run_b, measure)[0]


def most_hurt(comparison: Comparison | pd.DataFrame, top: int = 10) -> pd.DataFrame:
    """The queries where B lost most against A, worst first (ties by domain and query id).

    Args:
        comparison: A comparison, or its per-query deltas (:func:`paired_deltas`).
        top: How many to return; only queries with a negative delta are listed.

    Returns:
        Rows of the per-query deltas.
    """
    if top < 0:
        raise InputError("the number of queries to list must not be negative", found=str(top))
    per_query = comparison.per_query if isinstance(comparison, Comparison) else comparison
    hurt = per_query[per_query["delta"] < 0]
    ordered = hurt.sort_values(["delta", "domain", "query_id"], kind="stable")
    return ordered.head(top).reset_index(drop=True)


def image_effect(comparison: Comparison) -> dict[str, pd.DataFrame]:
    """Break the delta down by domain, query images, decoded images and query length.

    Args:
        comparison: A comparison (A text only, B with images, for the image effect).

    Returns:
        Breakdown name -> one row per group with ``queries``, ``mean_a``, ``mean_b``,
        ``delta``, ``wins``, ``ties``, ``losses``; groups in their natural order.
    """
    frame = comparison.per_query
    return {name: _breakdown(frame, key) for name, key in _basic_groups(frame).items()}


def _decoded(frame: pd.DataFrame) -> pd.Series:
    # Decodability is unknown (<NA>) when the table was built without checking images.
    images, decodable = frame["n_images"], frame["n_decodable_images"]
    labels = np.select(
        [
            images == 0,
            decodable.isna().to_numpy(),
            (decodable == images).fillna(False).to_numpy(dtype=bool),
            (decodable == 0).fillna(False).to_numpy(dtype=bool),
        ],
        ["no images", "unknown", "all", "none"],
        default="some",
    )
    order = ["all", "some", "none", "no images", "unknown"]
    return pd.Series(pd.Categorical(labels, categories=order), index=frame.index)


def _breakdown(frame: pd.DataFrame, key: pd.Series) -> pd.DataFrame:
    grouped = frame.assign(
        win=frame["delta"] > 0, tie=frame["delta"] == 0, loss=frame["delta"] < 0
    ).groupby(key.rename("group"), observed=True, sort=True)
    out = grouped.agg(
        queries=("delta", "size"),
        mean_a=("a", "mean"),
        mean_b=("b", "mean"),
        delta=("delta", "mean"),
        wins=("win", "sum"),
        ties=("tie", "sum"),
        losses=("loss", "sum"),
    )
    return out.reset_index().astype({"group": str})


# Slices of the image effect: one implementation for the dashboard and ``mmbright compare --by``.

SLICES = (
    "domain",
    "images",
    "decodable",
    "length",
    "ocr-words",
    "image-size",
    "aspect",
    "tag",
)
"""What the image effect can be sliced by (``--by`` of ``mmbright compare``)."""
IMAGE_FEATURES = ("ocr_words", "image_width", "image_height")
"""Columns of the query-image features a slice by OCR words, size or aspect reads."""
NO_IMAGE = "no image"
NOT_READ = "not read"
UNKNOWN = "unknown"
NO_TAG = "(no tag)"
_WORD_LABELS = ("none", "few (1-5)", "many (6+)")
_SIZE_EDGES = (0, 250_000, 1_000_000, np.inf)  # pixel area: 500 x 500, 1000 x 1000
_SIZE_LABELS = ("small (<0.25 MP)", "medium (0.25-1 MP)", "large (1+ MP)")
_TALL, _WIDE = 1.25, 0.8  # height / width beyond which an image is tall, below which wide
_ASPECT_LABELS = ("tall", "square-ish", "wide")

Tags = Mapping[tuple[str, str], Sequence[str]]
"""(domain, query_id) -> the query's failure tags."""


def slice_groups(
    per_query: pd.DataFrame,
    by: str,
    *,
    features: pd.DataFrame | None = None,
    tags: Tags | None = None,
) -> pd.Series:
    """Each query's group under a slice, as an ordered categorical (index of ``per_query``).

    Groups: ``domain`` (sorted); ``images`` (0 / 1 / 2 / 3-5 / 6+); ``decodable`` (all /
    some / none / no images / unknown); ``length`` (characters of the text); ``ocr-words``
    (none / few (1-5) / many (6+) words read from the first image, ``not read`` when no
    OCR result is recorded or cached, ``no image``); ``image-size`` (pixel area of the first
    image: small < 0.25 MP <= medium < 1 MP <= large); ``aspect`` (height / width >= 1.25 tall,
    <= 0.8 wide, else square-ish); size and aspect are ``unknown`` when the header cannot
    be read. ``tag`` gives the first tag only: :func:`slice_effect` counts a query in every
    group of its tags.

    Args:
        per_query: Paired per-query rows (``Comparison.per_query``).
        by: One of :data:`SLICES`.
        features: ``domain``, ``query_id`` and :data:`IMAGE_FEATURES`, for the image slices.
        tags: The queries' failure tags, for ``tag``.

    Raises:
        UnknownNameError: ``by`` is not a slice.
        InputError: An image slice without ``features``.
    """
    if by not in SLICES:
        raise UnknownNameError("slice", by, SLICES)
    if by == "tag":
        return _tag_groups(per_query, tags or {}).groupby(level=0).first()
    if by in ("domain", "images", "decodable", "length"):
        named = {"images": "query images", "decodable": "images decoded", "length": "query length"}
        return _basic_groups(per_query)[named.get(by, by)]
    if features is None:
        raise InputError(
            f"slicing by {by} needs the query images' features",
            hint="pass the features of query_image_features()",
        )
    merged = per_query[["domain", "query_id", "n_images"]].merge(
        features[["domain", "query_id", *IMAGE_FEATURES]], on=["domain", "query_id"], how="left"
    )
    merged.index = per_query.index
    if by == "ocr-words":
        return _word_groups(merged)
    return _image_shape_groups(merged, by)


def _basic_groups(frame: pd.DataFrame) -> dict[str, pd.Series]:
    return {
        "domain": frame["domain"],
        "query images": pd.cut(frame["n_images"], _IMAGE_EDGES, labels=_IMAGE_LABELS),
        "images decoded": _decoded(frame),
        "query length": pd.cut(
            frame["query_chars"], _LENGTH_EDGES, right=False, labels=_LENGTH_LABELS
        ),
    }


def _word_groups(frame: pd.DataFrame) -> pd.Series:
    words = frame["ocr_words"]
    labels = np.select(
        [frame["n_images"].to_numpy() == 0, words.isna().to_numpy(), words == 0, words <= 5],
        [NO_IMAGE, NOT_READ, *_WORD_LABELS[:2]],
        default=_WORD_LABELS[2],
    )
    order = [*_WORD_LABELS, NOT_READ, NO_IMAGE]
    return pd.Series(pd.Categorical(labels, categories=order), index=frame.index)


def _image_shape_groups(frame: pd.DataFrame, by: str) -> pd.Series:
    width, height = frame["image_width"], frame["image_height"]
    if by == "image-size":
        names = pd.cut(width * height, _SIZE_EDGES, right=False, labels=_SIZE_LABELS)
        order = list(_SIZE_LABELS)
    else:
        ratio = height / width
        names = pd.Series(
            np.select([ratio >= _TALL, ratio <= _WIDE], _ASPECT_LABELS[::2], _ASPECT_LABELS[1]),
            index=frame.index,
        )
        order = list(_ASPECT_LABELS)
    labels = np.where(
        frame["n_images"].to_numpy() == 0,
        NO_IMAGE,
        np.where((width * height).isna().to_numpy(), UNKNOWN, names.astype(object)),
    )
    return pd.Series(
        pd.Categorical(labels, categories=[*order, UNKNOWN, NO_IMAGE]), index=frame.index
    )


def _tag_groups(per_query: pd.DataFrame, tags: Tags) -> pd.Series:
    # One entry per (query, tag): a query with two tags counts in both groups.
    lists = [
        list(tags.get((str(d), str(q)), ())) or [NO_TAG]
        for d, q in zip(per_query["domain"], per_query["query_id"], strict=True)
    ]
    exploded = pd.Series(lists, index=per_query.index, dtype=object).explode()
    names = sorted({t for t in exploded if t != NO_TAG})
    return pd.Series(pd.Categorical(exploded, categories=[*names, NO_TAG]), index=exploded.index)


def slice_effect(
    comparison: Comparison,
    by: str,
    *,
    features: pd.DataFrame | None = None,
    tags: Tags | None = None,
) -> pd.DataFrame:
    """The image effect per group of a slice: mean delta, bootstrap CI, wins/ties/losses.

    The interval uses the comparison's seed and resamples, group by group (as its
    per-domain rows do). Groups keep the slice's order; empty groups are left out.

    Args:
        comparison: A comparison (A text only, B with images, for the image effect).
        by: One of :data:`SLICES` (see :func:`slice_groups`).
        features: The query images' features, for ``ocr-words``, ``image-size``, ``aspect``.
        tags: The queries' failure tags, for ``tag`` (a query counts under each of its tags).

    Returns:
        One row per group: ``group``, ``queries``, ``mean_a``, ``mean_b``, ``delta``,
        ``ci_low``, ``ci_high``, ``wins``, ``ties``, ``losses``.
    """
    frame = comparison.per_query
    if by == "tag":
        key = _tag_groups(frame, tags or {})
        frame = frame.loc[key.index]
        frame = frame.reset_index(drop=True)
        key = key.reset_index(drop=True)
    else:
        key = slice_groups(frame, by, features=features, tags=tags)
    out = _breakdown(frame, key)
    bounds = [
        stats.bootstrap_ci(
            group["delta"].to_numpy(), n_resamples=comparison.n_resamples, seed=comparison.seed
        )
        for _, group in frame.groupby(key.rename("group"), observed=True, sort=True)
    ]
    out.insert(out.columns.get_loc("delta") + 1, "ci_low", [low for low, _ in bounds])
    out.insert(out.columns.get_loc("ci_low") + 1, "ci_high", [high for _, high in bounds])
    return out


def with_tags(rows: pd.DataFrame, tags: Tags) -> pd.DataFrame:
    """Add a ``tags`` column (the query's tags joined by ``"; "``, empty when it has none)."""
    out = rows.copy()
    out["tags"] = [
        "; ".join(tags.get((str(d), str(q)), ()))
        for d, q in zip(rows["domain"], rows["query_id"], strict=True)
    ]
    return out


def tagged(rows: pd.DataFrame, tags: Tags, chosen: Collection[str]) -> pd.Series:
    """Which rows carry any of the ``chosen`` tags (every row when none is chosen)."""
    if not chosen:
        return pd.Series(True, index=rows.index)
    wanted = set(chosen)
    return pd.Series(
        [
            not wanted.isdisjoint(tags.get((str(d), str(q)), ()))
            for d, q in zip(rows["domain"], rows["query_id"], strict=True)
        ],
        index=rows.index,
        dtype=bool,
    )


def notes_tags(
    source: str, task: int, protocol: str
) -> tuple[Path | None, dict[tuple[str, str], list[str]]]:
    """The failure tags of a task's queries, read from the notes file when it exists.

    The file is the notes store's (``MMBRIGHT_NOTES``, else the data folder's); it is never
    created here, so a reader without notes gets ``(None, {})``.

    Returns:
        The file read (None when there is none) and (domain, query_id) -> tags.
    """
    from mmbright_core.notes import NotesStore, default_path

    path = default_path()
    if not path.is_file():
        return None, {}
    with NotesStore(path) as store:
        found = store.for_scope(source, task, protocol)
    return path, {key: list(notes.tags) for key, notes in found.items()}
