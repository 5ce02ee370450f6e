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

Where the OCR engine is installed (the ``ocr`` extra), the **text** cells are those the boxes of
the text it reads in the image (``OcrReader.text_boxes``,
:mod:`~mmbright_core.retrieval.backends.ocr_reader`) cover at least :data:`TEXT_COVER` of;
a query whose text cells weigh more per cell than the others is grouped ``text`` before it is
grouped by centre and edges. Its text share is NaN
without the engine, and 0 for an image with no text cell.

Grouped beside the comparison's per-query deltas, it says whether the queries a multimodal run
lost concentrate on images whose weight lies on the edges (a screenshot's chrome, a diagram's
labels) or in their text rather than at their centre. Each grid is ``grid**2 + 1`` forward
passes, and each image one OCR pass, all cached.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from PIL import Image

from mmbright_core.analysis.regions import (
    GRID,
    ImageRegions,
    Progress,
    RegionAttribution,
    explain_regions,
)
from mmbright_core.data.images import ImageSource
from mmbright_core.retrieval.backends.ocr_reader import Box
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.explanation import Unavailable
from mmbright_core.types import TaskData

CENTRE, EDGES, TEXT, NO_WEIGHT = "centre", "edges", "text", "no weight"
#: The part of a cell the text boxes must cover for it to count as text.
TEXT_COVER = 0.1
#: The per-query table's columns (:func:`query_weights`): ``text_area`` is the part of the
#: cells that are text.
COLUMNS = (
    "domain",
    "query_id",
    "doc_id",
    "versus",
    "centre_share",
    "edge_share",
    "text_share",
    "text_area",
    "where",
)
#: What finds the text boxes of a picture (:meth:`OcrReader.text_boxes`).
TextBoxes = Callable[[Image.Image], Sequence[Box]]


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


def text_cells(image: ImageRegions, boxes: Sequence[Box]) -> np.ndarray:
    """A mask of ``image``'s cells that ``boxes`` cover at least :data:`TEXT_COVER` of."""
    covered = np.zeros((image.height, image.width), dtype=bool)
    for left, top, right, bottom in boxes:
        rows = slice(max(int(np.floor(top)), 0), max(int(np.ceil(bottom)), 0))
        columns = slice(max(int(np.floor(left)), 0), max(int(np.ceil(right)), 0))
        covered[rows, columns] = True
    return np.array(
        [[covered[t:b, x:r].mean() >= TEXT_COVER for x, t, r, b in row] for row in image.boxes()]
    )


def text_share(
    images: Sequence[ImageRegions], boxes: Sequence[Sequence[Box]]
) -> tuple[float, float]:
    """(text share, text area): the text cells' part of the absolute values, and of the cells.

    ``boxes`` holds each image's text boxes. The share is NaN when every cell is zero, and 0
    when no cell is text.
    """
    text = total = 0.0
    cells = texts = 0
    for image, found in zip(images, boxes, strict=True):
        values = np.abs(np.asarray(image.values, dtype=np.float64))
        mask = text_cells(image, found)
        text += float(values[mask].sum())
        total += float(values.sum())
        texts += int(mask.sum())
        cells += mask.size
    return (float("nan") if total == 0 else text / total), texts / cells


def where(edge_share: float, grid: int, text: float = float("nan"), text_area: float = 0.0) -> str:
    """The query's group by weight per cell: ``text``, ``edges`` or ``centre``.

    ``text`` when the text cells weigh more per cell than the others (``text`` share above
    ``text_area``, the part of the cells that are text), else ``edges`` when the edges weigh
    more per cell than the centre, ``centre`` otherwise.
    """
    if np.isnan(edge_share):
        return NO_WEIGHT
    if 0 < text_area < 1 and text > text_area:
        return TEXT
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
    text_boxes: TextBoxes | None = None,
) -> tuple[pd.DataFrame, list[tuple[Case, str]]]:
    """Each case's centre, edge and text shares, and the cases that have no grid, with why.

    Args:
        retriever: The compared run's retriever.
        source: Where the images come from.
        cases: The queries to weigh (:func:`case`).
        data: domain -> the task's data for that domain.
        grid: Cells per side.
        cache_dir: The cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        progress: Called with ``(queries done, queries in all)`` after each query; raising
            from it stops the work.
        text_boxes: Finds the text in an occluded picture (None: no text shares, NaN).

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
            text, area = float("nan"), 0.0
            if text_boxes is not None:
                boxes = [text_boxes(_picture(image)) for image in found.images]
                text, area = text_share(found.images, boxes)
            row = (one.domain, one.query_id, one.doc_id, one.versus, centre, edges, text, area)
            rows.append((*row, where(edges, grid, text, area)))
        else:
            skipped.append((one, found.reason))
        if progress is not None:
            progress(done, len(cases))
    return pd.DataFrame(rows, columns=list(COLUMNS)), skipped


def _picture(image: ImageRegions) -> Image.Image:
    if image.picture is None:  # explain_regions always gives the picture it occluded
        raise ValueError(f"the grid of {image.image!r} comes without its picture")
    return image.picture


def weight_groups(weights: pd.DataFrame, per_query: pd.DataFrame) -> pd.DataFrame:
    """Per group of :func:`where`: queries, mean delta (B - A), losses, mean edge and text shares.

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
        text_share=("text_share", "mean"),
    )
    order = [g for g in (TEXT, EDGES, CENTRE, NO_WEIGHT) if g in out.index]
    return out.loc[order].reset_index().rename(columns={"where": "group"})
