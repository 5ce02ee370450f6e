"""An occlusion grid drawn over its image, and said in one sentence.

Red cells raised the item compared (``doc``: the wrong hit) over the other (``versus``: the
relevant item), or raised its score when there is no other; blue cells did the opposite.
Each cell's opacity is its value over the grid's largest absolute value, so the strongest
cell is the most opaque whatever the scale of the scores. :func:`heat_figure` draws the same
grid as a figure whose cells say their value on hover.
"""

from __future__ import annotations

import base64
import io
import json

import plotly.graph_objects as go
from PIL import Image, ImageColor, ImageDraw
from PIL.PngImagePlugin import PngInfo

from mmbright_core.present.figure_parts import MARGIN
from mmbright_core.present.palette import REGION_LOWERED, REGION_RAISED
from mmbright_core.retrieval.explanation import ImageRegions, RegionAttribution

#: The opacity of the strongest cell (0-255).
STRONGEST = 160
_ROWS = ("upper", "middle", "lower")
_COLUMNS = ("left", "centre", "right")


def overlay(regions: ImageRegions, picture: Image.Image | None = None) -> Image.Image:
    """The image with each cell tinted red (raised) or blue (lowered), at the image's size.

    Args:
        regions: One image's grid.
        picture: The image (default: the one the grid carries).

    Raises:
        ValueError: No image given and the grid carries none, or one of another size.
    """
    image = picture if picture is not None else regions.picture
    if image is None or image.size != (regions.width, regions.height):
        raise ValueError(f"the grid is of a {regions.width}x{regions.height} image")
    strongest = _strongest(regions)
    tint = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(tint)
    for values, boxes in zip(regions.values, regions.boxes(), strict=True):
        for value, (left, top, right, bottom) in zip(values, boxes, strict=True):
            if strongest == 0 or value == 0:
                continue
            colour = ImageColor.getrgb(REGION_RAISED if value > 0 else REGION_LOWERED)
            alpha = round(STRONGEST * abs(value) / strongest)
            draw.rectangle((left, top, right - 1, bottom - 1), fill=(*colour[:3], alpha))
    return Image.alpha_composite(image.convert("RGBA"), tint).convert("RGB")


def _strongest(regions: ImageRegions) -> float:
    # The largest absolute cell value: the one drawn most opaque.
    return max((abs(v) for row in regions.values for v in row), default=0.0)


def legend(result: RegionAttribution) -> str:
    """What the colours mean, and how the grid was made: under the heat, on screen and in a file."""
    over = f" over {result.versus}" if result.versus else ""
    how = "read from the cache" if result.cached else f"{result.passes} forward passes"
    return (
        f"Red: the cell raised {result.doc_id}{over}; blue: it worked the other way. "
        f"Fill {result.fill} · {how}."
    )


def png_info(result: RegionAttribution, image: int = 0) -> PngInfo:
    """The text an overlay's PNG carries: its sentence, legend and grid, for any reader.

    ``Title`` names the image occluded, ``Description`` is :func:`sentence`, ``Comment``
    is :func:`legend` with the tint's scale, and ``mmbright:grid`` the grid's values as
    JSON (rows top to bottom, each left to right), so the file alone says what it shows.
    """
    grid = result.images[image]
    strongest = _strongest(grid)
    info = PngInfo()
    info.add_text("Title", grid.image)
    info.add_text("Description", sentence(result, image))
    scale = f" Tint: in proportion to the cell's value, the strongest ({strongest:.2f}) the most."
    info.add_text("Comment", legend(result) + scale)
    info.add_text("mmbright:grid", json.dumps(grid.values))
    return info


def heat_figure(
    regions: ImageRegions, picture: Image.Image | None = None, width: int = 480
) -> go.Figure:
    """The image with the grid as a heatmap over it: red raised, blue lowered, values on hover.

    The image is sent scaled down to ``width`` pixels at most; the axes stay in the image's
    own pixels, the cells' edges where :func:`~mmbright_core.retrieval.explanation.cell_boxes`
    puts them.

    Raises:
        ValueError: No image given and the grid carries none, or one of another size.
    """
    image = picture if picture is not None else regions.picture
    if image is None or image.size != (regions.width, regions.height):
        raise ValueError(f"the grid is of a {regions.width}x{regions.height} image")
    shown = image.convert("RGB")
    if shown.width > width:
        shown = shown.resize((width, max(1, round(shown.height * width / shown.width))))
    encoded = io.BytesIO()
    shown.save(encoded, format="PNG")
    source = "data:image/png;base64," + base64.b64encode(encoded.getvalue()).decode("ascii")
    grid = regions.grid
    boxes = [box for row in regions.boxes() for box in row]
    xs = [box[0] for box in boxes[:grid]] + [regions.width]
    ys = [boxes[row * grid][1] for row in range(grid)] + [regions.height]
    strongest = _strongest(regions) or 1.0
    names = [
        [f"{region_name(r, c, grid)} (row {r + 1}, column {c + 1})" for c in range(grid)]
        for r in range(grid)
    ]
    figure = go.Figure(
        go.Image(
            source=source,
            dx=image.width / shown.width,
            dy=image.height / shown.height,
            hoverinfo="skip",
        )
    )
    figure.add_trace(
        go.Heatmap(
            z=[list(row) for row in regions.values],
            x=xs,
            y=ys,
            zmin=-strongest,
            zmax=strongest,
            colorscale=[[0, REGION_LOWERED], [0.5, "rgba(255, 255, 255, 0)"], [1, REGION_RAISED]],
            opacity=0.6,
            customdata=names,
            hovertemplate="%{customdata}: %{z:+.4f}<extra></extra>",
            colorbar={"title": {"text": "change"}},
        )
    )
    figure.update_layout(margin=MARGIN)
    figure.update_xaxes(visible=False, range=[0, regions.width])
    figure.update_yaxes(visible=False, range=[regions.height, 0], scaleanchor="x")
    return figure


def region_name(row: int, col: int, grid: int) -> str:
    """Where a cell lies, in words: ``lower-left``, ``centre``, ``upper-right``..."""
    vertical = _ROWS[_third(row, grid)]
    horizontal = _COLUMNS[_third(col, grid)]
    if vertical == "middle":
        return "centre" if horizontal == "centre" else f"middle-{horizontal}"
    return f"{vertical}-{horizontal}" if horizontal != "centre" else f"{vertical}-centre"


def _third(index: int, grid: int) -> int:
    """Which third of the side a cell's centre lies in (0, 1, 2)."""
    centre = (index + 0.5) / grid
    return 0 if centre < 1 / 3 else (2 if centre > 2 / 3 else 1)


def sentence(result: RegionAttribution, image: int = 0) -> str:
    """The strongest cell of one image's grid, said plainly with its share of the target.

    E.g. "Filling the lower-left cell (row 3, column 1) lowers the margin of A over B by 60%
    (2.10 of 3.50)": a cell of the query image, or, on the document side, "Filling the
    lower-left cell (row 3, column 1) of the hit's image lowers...". A 1 x 1 grid's one cell
    is the whole image, and is called so. The share is the cell's value over the score (or
    margin) with the image whole: the model's response is not a sum over cells, so shares
    need not add up to 100%. A margin below zero (the hit scores below the item it is
    compared with) is given as it is, not as a share; a cell whose filling alone would
    reverse the two items' order says so. Values are read to :data:`_PLACES` decimals, as the
    heatmap shows them: a cell that changes the target by less (float noise) changes nothing.
    """
    grid = result.images[image]
    cells = [(v, r, c) for r, row in enumerate(grid.values) for c, v in enumerate(row)]
    value, row, col = max(cells, key=lambda cell: abs(cell[0]))
    value, whole = _read(value), _read(result.target)
    where = _cell_name(row, col, result.grid)
    of_image = " of the hit's image" if result.side == "document" else ""
    if result.versus is not None:
        target = f"the margin of {result.doc_id} over {result.versus}"
    else:
        target = f"the score of {result.doc_id}"
    if value == 0:
        return f"No cell of the {result.grid}x{result.grid} grid{of_image} changes {target}."
    change = "lowers" if value > 0 else "raises"
    fraction = abs(value) / abs(whole) if whole else 0.0
    percent = f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction:.1%}"
    if result.versus is not None and whole < 0:  # the hit is below the item it is compared with
        amount = (
            f" by {_number(abs(value))} (the margin is {_number(whole)}: "
            f"{result.versus} scores higher)"
        )
    elif whole:
        amount = f" by {percent} ({_number(abs(value))} of {_number(abs(whole))})"
    else:
        amount = f" by {_number(abs(value))}"
    if result.versus is not None and whole and (whole - value) * whole < 0:
        amount += ", enough to reverse their order"
    return f"Filling the {where}{of_image} {change} {target}{amount}."


_PLACES = 4
"""Decimals a cell's value is read to in words, as the heatmap's hover gives it."""


def _read(value: float) -> float:
    # Float noise (a cell the model never saw changes its score by 1e-8) reads as nothing,
    # and a negative zero as zero.
    return round(value, _PLACES) + 0.0


def _number(value: float) -> str:
    """Two decimals, or as many as :data:`_PLACES` for a value that two would print as 0.00."""
    return f"{value:.2f}" if abs(value) >= 0.005 else f"{value:.{_PLACES}f}"


def _cell_name(row: int, col: int, grid: int) -> str:
    """The cell the sentence means: ``lower-left cell (row 3, column 1)``, or ``whole image``."""
    if grid == 1:
        return "whole image"
    return f"{region_name(row, col, grid)} cell (row {row + 1}, column {col + 1})"
