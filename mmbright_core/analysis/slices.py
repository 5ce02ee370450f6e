"""Where the difference of two runs comes from: the image effect by slice of the queries.

The paired per-query deltas of a comparison (:mod:`mmbright_core.analysis.compare`) are
grouped by domain, query images, decoded images, query length, OCR words, image size and
aspect, or failure tag, and each group gets its mean delta and wins/ties/losses (with a
bootstrap interval for a slice). The paper's question (docs/protocol.md, Published numbers):
where do query images hurt? One implementation serves the dashboard and
``mmbright compare --by``. Failure tags come in as data (:data:`Tags`); reading them from the
notes store is :func:`mmbright_core.notes.scope_tags`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import pandas as pd

from mmbright_core.analysis import stats
from mmbright_core.analysis.compare import Comparison
from mmbright_core.errors import InputError, UnknownNameError

_LENGTH_EDGES = (0, 500, 1000, 2000, 4000, np.inf)
_LENGTH_LABELS = ("<500", "500-999", "1000-1999", "2000-3999", "4000+")
_IMAGE_EDGES = (-0.5, 0.5, 1.5, 2.5, 5.5, np.inf)
_IMAGE_LABELS = ("0", "1", "2", "3-5", "6+")
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
