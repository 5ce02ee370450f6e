"""Where an image's weight lies, across queries: the centre of the query image or its edges.

For each query with an image, the occlusion grid (:mod:`~mmbright_core.analysis.regions`) of
the run's top hit against its best-ranked relevant item (the hit's score alone when the top hit
is relevant or no relevant item is ranked) is split into the **centre** (the cells whose
centre lies in the middle third of the image both ways, what
:func:`~mmbright_core.present.region_overlay.region_name` calls ``centre``) and the **edges**
(every other cell: borders and corners). A query's share of each is its part of the sum of the
absolute cell values (over all its images, with the ``all`` policy). The edges hold most cells
(40 of 49 in a 7 x 7 grid), so a query is grouped by weight per cell: ``edges`` when its edge
share exceeds the edges' share of the cells, ``centre`` otherwise, ``no weight`` when no cell
changes the score.

Grouped beside the comparison's per-query deltas, it says whether the queries a multimodal run
lost concentrate on images whose weight lies on the edges (a screenshot's chrome, a diagram's
labels) rather than at their centre. Each grid is ``grid**2 + 1`` forward passes, cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mmbright_core.analysis.regions import (
    GRID,
    ImageRegions,
    Progress,
    RegionAttribution,
    explain_regions,
)
from mmbright_core.data.images import ImageSource
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.explanation import Unavailable
from mmbright_core.types import TaskData

CENTRE, EDGES, NO_WEIGHT = "centre", "edges", "no weight"
#: The per-query table's columns (:func:`query_weights`).
COLUMNS = ("domain", "query_id", "doc_id", "versus", "centre_share", "edge_share", "where")


def centre_cells(grid: int) -> np.ndarray:
    """A ``grid x grid`` mask of the centre cells: their centres in the middle third both ways."""
    centres = (np.arange(grid) + 0.5) / grid
    middle = (centres >= 1 / 3) & (centres <= 2 / 3)
    return np.outer(middle, middle)


def shares(images: Sequence[ImageRegions]) -> tuple[float, float]:
    """(centre share, edge share) of the absolute cell values summed over ``images``.

    Both are NaN when every cell is zero.
    """
    centre = edges = 0.0
    for image in images:
        values = np.abs(np.asarray(image.values, dtype=np.float64))
        mask = centre_cells(image.grid)
        centre += float(values[mask].sum())
        edges += float(values[~mask].sum())
    total = centre + edges
    if total == 0:
        return float("nan"), float("nan")
    return centre / total, edges / total


def where(edge_share: float, grid: int) -> str:
    """``edges`` when the edges weigh more per cell than the centre, ``centre`` otherwise."""
    if np.isnan(edge_share):
        return NO_WEIGHT
    area = 1 - float(centre_cells(grid).mean())
    return EDGES if edge_share > area else CENTRE


@dataclass(frozen=True)
class Case:
    """One query to weigh: its top hit and the relevant item it is compared with (or None)."""

    domain: str
    query_id: str
    doc_id: str
    versus: str | None


def case(domain: str, query_id: str, ranked: Sequence[str], qrels: Mapping[str, int]) -> Case:
    """The top hit of ``ranked`` against its best-ranked relevant item.

    ``versus`` is None when the top hit is itself relevant or no relevant item is ranked.
    """
    relevant = next((d for d in ranked if qrels.get(d, 0) > 0), None)
    return Case(domain, query_id, ranked[0], None if relevant == ranked[0] else relevant)


def query_weights(
    retriever: Retriever | Unavailable,
    source: ImageSource,
    cases: Sequence[Case],
    data: Callable[[str], TaskData],
    *,
    grid: int = GRID,
    cache_dir: str | None = None,
    progress: Progress | None = None,
) -> tuple[pd.DataFrame, list[tuple[Case, str]]]:
    """Each case's centre and edge shares, and the cases that have no grid, with why.

    Args:
        retriever: The compared run's retriever.
        source: Where the images come from.
        cases: The queries to weigh (:func:`case`).
        data: domain -> the task's data for that domain.
        grid: Cells per side.
        cache_dir: The cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        progress: Called with ``(queries done, queries in all)`` after each query; raising
            from it stops the work.

    Returns:
        ``(table, skipped)``: one row per case with a grid (:data:`COLUMNS`), and the
        others with the reason they have none.
    """
    rows, skipped = [], []
    for done, one in enumerate(cases, 1):
        found = explain_regions(
            retriever,
            data(one.domain),
            source,
            one.query_id,
            one.doc_id,
            versus=one.versus,
            grid=grid,
            cache_dir=cache_dir,
        )
        if isinstance(found, RegionAttribution):
            centre, edges = shares(found.images)
            rows.append(
                (
                    one.domain,
                    one.query_id,
                    one.doc_id,
                    one.versus,
                    centre,
                    edges,
                    where(edges, grid),
                )
            )
        else:
            skipped.append((one, found.reason))
        if progress is not None:
            progress(done, len(cases))
    return pd.DataFrame(rows, columns=list(COLUMNS)), skipped


def weight_groups(weights: pd.DataFrame, per_query: pd.DataFrame) -> pd.DataFrame:
    """Per group of :func:`where`: queries, mean delta (B - A), losses, mean edge share.

    ``per_query`` is the comparison's paired rows (``domain``, ``query_id``, ``delta``).
    """
    merged = weights.merge(
        per_query[["domain", "query_id", "delta"]], on=["domain", "query_id"], how="inner"
    )
    grouped = merged.assign(loss=merged["delta"] < 0).groupby("where", sort=False)
    out = grouped.agg(
        queries=("delta", "size"),
        delta=("delta", "mean"),
        losses=("loss", "sum"),
        edge_share=("edge_share", "mean"),
    )
    order = [g for g in (EDGES, CENTRE, NO_WEIGHT) if g in out.index]
    return out.loc[order].reset_index().rename(columns={"where": "group"})
