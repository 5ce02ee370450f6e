"""The occlusion overlay: red where a region raised the item compared, blue where it lowered it."""

from __future__ import annotations

import pytest
from PIL import Image, ImageColor

from mmbright_core.present.palette import REGION_LOWERED, REGION_RAISED
from mmbright_core.present.region_overlay import (
    STRONGEST,
    heat_figure,
    overlay,
    region_name,
    sentence,
)
from mmbright_core.retrieval.explanation import ImageRegions, RegionAttribution


def _result(
    values: list[list[float]], versus: str | None = "rel", score: float = 5.0, side: str = "query"
):
    picture = Image.new("RGB", (30, 20), (255, 255, 255))
    grid = ImageRegions("q.png", 30, 20, tuple(map(tuple, values)), picture)
    return RegionAttribution(
        query_id="q", doc_id="wrong", versus=versus, side=side, grid=len(values),
        fill="mean", score=score, versus_score=1.0 if versus else None, images=(grid,),
        retriever="clip", model="m", settings_key="k", passes=len(values) ** 2 + 1,
    )  # fmt: skip


def _blend(colour: str, alpha: int) -> tuple[int, int, int]:
    rgb = ImageColor.getrgb(colour)
    return tuple(round((c * alpha + 255 * (255 - alpha)) / 255) for c in rgb[:3])  # type: ignore[return-value]


def test_cells_are_tinted_by_sign_and_strength_at_the_images_size():
    result = _result([[2.0, -1.0], [0.0, 0.0]])
    drawn = overlay(result.images[0])
    assert drawn.size == (30, 20) and drawn.mode == "RGB"
    raised, lowered = drawn.getpixel((3, 3)), drawn.getpixel((20, 3))
    assert raised == pytest.approx(_blend(REGION_RAISED, STRONGEST), abs=1)
    assert lowered == pytest.approx(_blend(REGION_LOWERED, STRONGEST // 2), abs=1)
    assert drawn.getpixel((3, 15)) == (255, 255, 255)  # a zero cell is the image itself
    with pytest.raises(ValueError, match="30x20"):
        overlay(result.images[0], Image.new("RGB", (10, 10)))


def test_the_sentence_names_the_strongest_cell_and_its_share():
    result = _result([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [2.4, 0.0, -1.0]])
    assert sentence(result) == (
        "Filling the lower-left cell (row 3, column 1) lowers the margin of wrong over rel by 60% "
        "(2.40 of 4.00)."
    )
    alone = _result([[0.0, -0.5], [0.0, 0.0]], versus=None, score=2.0)
    assert (
        sentence(alone)
        == "Filling the upper-right cell (row 1, column 2) raises the score of wrong by 25% "
        "(0.50 of 2.00)."
    )
    small = _result([[0.02, 0.0], [0.0, 0.0]], versus=None, score=4.0)
    assert sentence(small).endswith("lowers the score of wrong by 0.5% (0.02 of 4.00).")
    flat = _result([[0.0]], versus=None)
    assert sentence(flat) == "No cell of the 1x1 grid changes the score of wrong."


def test_a_negative_margin_is_given_as_it_is_and_a_reversal_is_said():
    below = _result([[-3.12, 0.0], [0.0, 0.0]], score=-26.62)  # margin -27.62
    assert sentence(below) == (
        "Filling the upper-left cell (row 1, column 1) raises the margin of wrong over rel by 3.12 "
        "(the margin is -27.62: rel scores higher)."
    )
    flipped = _result([[0.0, 0.0], [5.0, 0.0]])  # margin 4.00, the cell alone worth 5.00
    assert sentence(flipped) == (
        "Filling the lower-left cell (row 2, column 1) lowers the margin of wrong over rel by 125% "
        "(5.00 of 4.00), enough to reverse their order."
    )
    back = _result([[-2.0]], score=0.0)  # margin -1.00: filling it puts wrong above rel
    assert sentence(back).endswith("rel scores higher), enough to reverse their order.")
    kept = _result([[3.0]])  # lowers the margin of 4.00 by 3.00: still above
    assert "reverse" not in sentence(kept)


def test_on_the_document_side_the_sentence_says_the_cell_is_of_the_hits_image():
    own = _result([[0.0, 0.0], [0.0, 2.4]], side="document")
    assert sentence(own) == (
        "Filling the lower-right cell (row 2, column 2) of the hit's image lowers the margin of "
        "wrong over rel by 60% (2.40 of 4.00)."
    )
    flat = _result([[0.0]], versus=None, side="document")
    assert sentence(flat) == (
        "No cell of the 1x1 grid of the hit's image changes the score of wrong."
    )


def test_the_sentence_names_the_very_cell_and_the_whole_image_of_a_one_cell_grid():
    """Of a 7 x 7 grid's four "upper-left" cells it says which; a 1 x 1 grid's is the image."""
    values = [[0.0] * 7 for _ in range(7)]
    values[1][1] = 1.0
    assert sentence(_result(values)).startswith(
        "Filling the upper-left cell (row 2, column 2) lowers"
    )
    assert sentence(_result([[1.0]])) == (
        "Filling the whole image lowers the margin of wrong over rel by 25% (1.00 of 4.00)."
    )


def test_float_noise_reads_as_no_change_and_no_number_prints_as_noise():
    noise = _result([[-0.00000004, 0.0], [0.0, 0.00000002]], versus=None)
    assert sentence(noise) == "No cell of the 2x2 grid changes the score of wrong."
    tiny = _result([[0.003, 0.0], [0.0, 0.0]], score=1.0 - 0.00000004)  # margin -4e-8
    said = sentence(tiny)
    assert said == (
        "Filling the upper-left cell (row 1, column 1) lowers the margin of wrong over rel "
        "by 0.0030."
    )
    assert "-0.00" not in said and "e-" not in said


def test_region_names():
    assert [region_name(r, c, 3) for r in range(3) for c in range(3)] == [
        "upper-left", "upper-centre", "upper-right",
        "middle-left", "centre", "middle-right",
        "lower-left", "lower-centre", "lower-right",
    ]  # fmt: skip
    assert region_name(0, 0, 1) == "centre" and region_name(6, 0, 7) == "lower-left"


def test_the_heat_figure_puts_each_value_on_its_cell_with_the_value_on_hover():
    result = _result([[2.0, -1.0, 0.0], [0.0, 0.5, 0.0], [0.0, 0.0, -3.0]])
    figure = heat_figure(result.images[0], width=10)  # the picture is sent scaled down
    picture, heat = figure.data
    assert picture.type == "image" and picture.dx == pytest.approx(3.0)
    assert [list(row) for row in heat.z] == [list(row) for row in result.images[0].values]
    assert list(heat.x) == [0, 10, 20, 30] and list(heat.y) == [0, 6, 13, 20]
    assert (heat.zmin, heat.zmax) == (-3.0, 3.0)  # white at zero whatever the sign
    assert heat.customdata[0][0] == "upper-left (row 1, column 1)"
    assert "%{z:+.4f}" in heat.hovertemplate
    with pytest.raises(ValueError, match="30x20"):
        heat_figure(result.images[0], Image.new("RGB", (5, 5)))
