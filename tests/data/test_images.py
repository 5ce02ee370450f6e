from __future__ import annotations

import io
import threading

import numpy as np
import pytest
from fixture_dataset import CORRUPT, SVG, TINY, encode
from PIL import Image, ImageFile

from mmbright_core.data.images import (
    ImageDecodeError,
    check_image,
    concat_vertical,
    decode_image,
    image_problem,
    load_image,
    query_images,
)
from mmbright_core.data.sources import Source
from mmbright_core.errors import InputError, UnknownNameError


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def test_decode_png_and_jpeg_to_rgb() -> None:
    png = decode_image(encode((20, 10), "red"), "a.png")
    assert png.mode == "RGB" and png.size == (20, 10) and png.getpixel((0, 0)) == (255, 0, 0)
    assert decode_image(encode((30, 16), "blue", "JPEG"), "a.jpg").size == (30, 16)
    rgba = decode_image(_png(Image.new("RGBA", (4, 4), (0, 255, 0, 128))), "a.png")
    assert rgba.mode == "RGB"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (None, "missing"),
        (SVG, "SVG payload"),
        (b"  <svg xmlns='http://www.w3.org/2000/svg'/>", "SVG payload"),
        (CORRUPT, "corrupt"),
        (b"", "corrupt"),
        # Cut inside its headers: no pixels to pad, so it fails even as the official loader
        # decodes (LOAD_TRUNCATED_IMAGES), and is dropped.
        (encode((40, 40), "red", "JPEG")[:200], "corrupt"),
    ],
)
def test_undecodable_images_say_why(data: bytes | None, reason: str) -> None:
    with pytest.raises(ImageDecodeError) as err:
        decode_image(data, "gis/gis_0a0a0a0a_0001/image_1.png")
    assert err.value.reason.startswith(reason)
    assert err.value.path == "gis/gis_0a0a0a0a_0001/image_1.png"
    assert str(err.value).startswith("gis/gis_0a0a0a0a_0001/image_1.png: image cannot be decoded")
    assert isinstance(err.value, InputError)
    assert image_problem(data, "x") == err.value.reason


def test_a_1x1_image_decodes_and_is_kept_as_the_official_loader_keeps_it() -> None:
    # The published Task 3 counts (docs/protocol.md, The benchmark) include 1x1 images; only what
    # Pillow cannot decode is dropped.
    assert decode_image(TINY, "a.png").size == (1, 1)
    assert image_problem(TINY, "a.png") is None


def test_concat_centres_each_image_on_white_at_the_widest_width() -> None:
    red, blue = Image.new("RGB", (20, 10), "red"), Image.new("RGB", (30, 16), "blue")
    out = concat_vertical([red, blue])
    assert out.size == (30, 26)
    assert out.getpixel((5, 0)) == (255, 0, 0)  # red spans x 5..24 on rows 0..9
    assert out.getpixel((4, 0)) == out.getpixel((25, 9)) == (255, 255, 255)
    assert out.getpixel((0, 10)) == out.getpixel((29, 25)) == (0, 0, 255)
    with pytest.raises(InputError):
        concat_vertical([])


def test_query_image_policies(source: Source) -> None:
    a1 = source.task(2, "academia").queries[0]  # a red 20x10 PNG then a blue 30x16 JPEG
    first = query_images(source, a1, "first")
    assert [im.size for im in first.images] == [(20, 10)] and first.problems == {}
    concat = query_images(source, a1, "concat")
    assert [im.size for im in concat.images] == [(30, 26)]
    assert [im.size for im in query_images(source, a1, "all").images] == [(20, 10), (30, 16)]


def test_undecodable_query_images_are_skipped_and_reported(source: Source) -> None:
    queries = {q.query_id: q for q in source.task(2, "academia").queries}
    a2 = query_images(source, queries["a2"], "first")  # corrupt, then a green 12x12 PNG
    assert [im.size for im in a2.images] == [(12, 12)]
    assert list(a2.problems) == ["academia/academia_e5f6a7b8_0000/image_1.png"]
    single = query_images(source, queries["a2"], "concat")
    assert [im.size for im in single.images] == [(12, 12)]  # one image is not re-drawn
    a4 = query_images(source, queries["a4"], "all")  # missing, SVG, 1x1: only the 1x1 decodes
    assert [im.size for im in a4.images] == [(1, 1)]
    assert [r.split(":")[0] for r in a4.problems.values()] == ["missing", "SVG payload"]
    with pytest.raises(UnknownNameError, match="image policy"):
        query_images(source, queries["a4"], "stack")


def _noisy(fmt: str) -> bytes:
    # Noise compresses poorly: half of the file is well past the headers, inside the pixels.
    pixels = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format=fmt)
    return buffer.getvalue()


def _official_decode(data: bytes) -> Image.Image:
    # What the official loader does (src/data.py, _load_images_parquet) once its retrievers
    # are imported (task4_pair.py sets the flag at module level).
    previous = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        return Image.open(io.BytesIO(data)).convert("RGB")
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = previous


@pytest.mark.parametrize("fmt", ["JPEG", "PNG"])
def test_a_truncated_image_decodes_padded_as_the_official_loader_decodes_it(fmt: str) -> None:
    whole = _noisy(fmt)
    cut = whole[: len(whole) // 2]
    with pytest.raises(OSError, match=r"(?i)truncated"):  # Pillow's default refuses it
        Image.open(io.BytesIO(cut)).convert("RGB")
    decoded = load_image(cut, "a")
    assert decoded.padded and decoded.image.mode == "RGB" and decoded.image.size == (64, 48)
    assert np.array_equal(np.asarray(decoded.image), np.asarray(_official_decode(cut)))
    assert decode_image(cut, "a").size == (64, 48)
    assert image_problem(cut, "a") is None and check_image(cut, "a").padded
    assert not load_image(whole, "a").padded and not check_image(whole, "a").padded


@pytest.mark.parametrize("before", [False, True])
def test_decoding_leaves_pillows_global_flag_as_it_was(before: bool) -> None:
    cut = _noisy("JPEG")[:1000]
    previous = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = before
    try:
        decode_image(cut, "a")
        with pytest.raises(ImageDecodeError):
            decode_image(CORRUPT, "b")  # fails with the flag set too: restored on failure
        assert ImageFile.LOAD_TRUNCATED_IMAGES is before
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = previous


def test_concurrent_decodes_restore_the_flag() -> None:
    cut, whole = _noisy("PNG")[:3000], _noisy("JPEG")
    results: list[bool] = []

    def work() -> None:
        for _ in range(20):
            results.append(load_image(cut, "a").padded and not load_image(whole, "b").padded)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 80 and ImageFile.LOAD_TRUNCATED_IMAGES is False
