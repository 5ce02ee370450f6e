"""The demo's pictures, one drawing per kind: terminals, dialogs, plots, diagrams, maps, photos.

Each drawing takes the kind's description (title, lines, axes...) and a seeded RNG, so the
same description always gives the same pixels; :mod:`mmbright_core.data.demo_images` turns
them into the image files, dirty cases included.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

# Images (docs/protocol.md, The data as published lists the kinds the benchmark has: plots,
# screenshots, diagrams, photos). Text is drawn large and dark-on-light or light-on-dark so that OCR
# reads it: the demo's image-aware baseline appends the OCR text of query images to the query.
_FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT_SOURCE = "dejavu" if (_FONT_DIR / "DejaVuSans.ttf").is_file() else "pillow-default"
_FONT_FILES = {"": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}
_INK, PAPER, _ACCENT = (25, 25, 25), (255, 255, 255), ((31, 119, 180), (214, 39, 40))
_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.cache
def _font(size: int, style: str = "") -> _Font:
    """DejaVu where installed (Debian), else Pillow's bundled scalable font."""
    if FONT_SOURCE == "dejavu":
        return ImageFont.truetype(str(_FONT_DIR / _FONT_FILES[style]), size)
    return ImageFont.load_default(size=size)


def _canvas(size: tuple[int, int], colour: Any) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    """A blank image of ``size`` filled with ``colour``, and a pen on it."""
    im = Image.new("RGB", size, colour)
    return im, ImageDraw.Draw(im)


def _fit(least: int, title: str, bold: _Font, lines: list[str], font: _Font, margin: int) -> int:
    """The width that holds the title and each line with its margin (at least ``least``)."""
    return max([_width(title, bold) + 40, *(_width(t, font) + margin for t in lines), least])


def _gap(font: _Font) -> int:
    """Word gap: OCR reads words set with a plain space as one run, so gaps are wider."""
    return int(getattr(font, "size", 14))


def _width(text: str, font: _Font) -> int:
    words = text.split(" ")
    return sum(int(font.getlength(w)) for w in words) + _gap(font) * (len(words) - 1)


def _text(
    draw: ImageDraw.ImageDraw, xy: tuple[float, float], text: str, font: _Font, fill: Any
) -> None:
    """Draw ``text`` word by word with the wide gap of ``_gap``."""
    x, y = xy
    for word in text.split(" "):
        draw.text((x, y), word, font=font, fill=fill)
        x += font.getlength(word) + _gap(font)


def _terminal(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, lines = _font(16, "mono"), spec["lines"]
    width = max(320, max(_width(t, font) for t in lines) + 28)
    im, draw = _canvas((width, 40 + 24 * len(lines)), (36, 36, 40))
    draw.rectangle((0, 0, im.width, 22), fill=(62, 62, 68))
    for i, colour in enumerate([(237, 106, 94), (245, 191, 79), (98, 197, 84)]):
        draw.ellipse((8 + 18 * i, 5, 20 + 18 * i, 17), fill=colour)
    for i, line in enumerate(lines):
        error = line.startswith(("E:", "ERROR", "W:", "UserWarning"))
        _text(draw, (12, 30 + 24 * i), line, font, (255, 150, 140) if error else (236, 236, 236))
    return im


def _dialog(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, bold, lines = _font(16), _font(16, "bold"), spec["lines"]
    width = _fit(320, spec["title"], bold, lines, font, 90)
    im, draw = _canvas((width, 100 + 26 * len(lines)), (242, 242, 242))
    draw.rectangle((0, 0, width, 30), fill=(52, 101, 164))
    _text(draw, (12, 6), spec["title"], bold, PAPER)
    if spec.get("icon"):  # the red error badge of a message box
        draw.ellipse((16, 46, 52, 82), fill=(204, 51, 51))
        draw.line((26, 56, 42, 72), fill=PAPER, width=4)
        draw.line((42, 56, 26, 72), fill=PAPER, width=4)
    for i, line in enumerate(lines):
        _text(draw, (70, 44 + 26 * i), line, font, _INK)
    x = width - 12
    for label in reversed(spec.get("buttons", [])):
        left = x - _width(label, font) - 28
        draw.rounded_rectangle(
            (left, im.height - 42, x, im.height - 12), 6, fill=PAPER, outline=(120, 120, 120)
        )
        _text(draw, (left + 14, im.height - 38), label, font, _INK)
        x = left - 10
    return im


def _curves(name: str, rng: random.Random) -> list[list[float]]:
    """Series of y in [0, 1] sampled at 60 points of x in [0, 1]."""
    xs = [i / 59 for i in range(60)]
    if name == "resonance":
        raw = [
            [1 / math.hypot(1 - w * w, w / q) for w in (0.2 + 1.8 * x for x in xs)] for q in (2, 10)
        ]
        top = max(max(r) for r in raw)
        return [[v / top for v in r] for r in raw]
    if name == "saturation":
        return [[0.85 * 10 * x / (1.5 + 10 * x) for x in xs]]
    if name == "spike":
        return [
            [
                0.25
                + 0.65 * math.exp(-(((x - 0.35) / 0.05) ** 2))
                - 0.12 * math.exp(-(((x - 0.5) / 0.08) ** 2))
                for x in xs
            ]
        ]
    if name == "mixing":
        return [
            [
                0.0
                if x in (0, 1)
                else -(x * math.log(x) + (1 - x) * math.log(1 - x)) / math.log(2) * 0.9
                for x in xs
            ]
        ]
    if name == "planck":
        radiance = [1 / ((0.05 + x) ** 5 * (math.exp(0.25 / (0.05 + x)) - 1)) for x in xs]
        return [[v / max(radiance) * 0.9 for v in radiance]]
    if name == "range":
        return [[0.9 * math.sin(math.pi * x) for x in xs]]
    return [[min(0.95, max(0.05, 0.85 - 0.7 * x + rng.uniform(-0.04, 0.04))) for x in xs]]


def _plot(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    (im, draw), bold, font = _canvas((380, 250), PAPER), _font(15, "bold"), _font(14)
    left, top, right, bottom = 58, 40, 366, 204
    _text(
        draw,
        ((im.width - _width(spec["title"], bold)) // 2, 10),
        spec["title"],
        font=bold,
        fill=_INK,
    )
    draw.line((left, top, left, bottom, right, bottom), fill=_INK, width=2)
    for i in range(1, 5):
        x, y = left + i * (right - left) // 5, bottom - i * (bottom - top) // 5
        draw.line((x, bottom, x, bottom + 5), fill=_INK)
        draw.line((left - 5, y, left, y), fill=_INK)
    for s, series in enumerate(_curves(spec.get("curve", "linear"), rng)):
        points = [
            (left + i * (right - left) / 59, bottom - v * (bottom - top))
            for i, v in enumerate(series)
        ]
        draw.line(points, fill=_ACCENT[s % 2], width=3)
    _text(draw, ((left + right - _width(spec["x"], font)) // 2, 220), spec["x"], font, _INK)
    label, pen = _canvas((_width(spec["y"], font) + 8, 22), PAPER)
    _text(pen, (4, 2), spec["y"], font, _INK)
    rotated = label.rotate(90, expand=True)
    im.paste(rotated, (8, (top + bottom - rotated.height) // 2))
    for i, entry in enumerate(spec.get("legend", [])):
        y = top + 6 + 22 * i
        draw.line((right - 150, y + 9, right - 126, y + 9), fill=_ACCENT[i % 2], width=3)
        _text(draw, (right - 120, y), entry, font, _INK)
    return im


def _bars(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, bold, bars = _font(14), _font(15, "bold"), spec["bars"]
    label_w = max(_width(name, font) for name, _ in bars) + 16
    im, draw = _canvas((label_w + 220, 70 + 30 * len(bars)), PAPER)
    top = max(v for _, v in bars)
    _text(draw, (12, 10), spec["title"], bold, _INK)
    for i, (name, value) in enumerate(bars):
        y = 42 + 30 * i
        _text(draw, (8, y), name, font, _INK)
        draw.rectangle((label_w, y + 2, label_w + int(190 * value / top), y + 18), fill=_ACCENT[0])
    _text(draw, (label_w, im.height - 24), spec["x"], font, _INK)
    return im


def _diagram(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, bold, boxes = _font(15), _font(15, "bold"), spec["boxes"]
    width = _fit(300, spec["title"], bold, boxes, font, 70)
    im, draw = _canvas((width, 50 + 66 * len(boxes)), (250, 250, 246))
    _text(draw, ((width - _width(spec["title"], bold)) // 2, 10), spec["title"], bold, _INK)
    for i, text in enumerate(boxes):
        y = 42 + 66 * i
        draw.rounded_rectangle(
            (20, y, width - 20, y + 40), 8, fill=(222, 235, 247), outline=_ACCENT[0], width=2
        )
        _text(draw, ((width - _width(text, font)) // 2, y + 10), text, font, _INK)
        if i + 1 < len(boxes):
            mid = width // 2
            draw.line((mid, y + 40, mid, y + 64), fill=_INK, width=2)
            draw.polygon([(mid - 6, y + 56), (mid + 6, y + 56), (mid, y + 65)], fill=_INK)
    return im


def _map(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    (im, draw), font, bold = _canvas((360, 250), (236, 230, 214)), _font(14), _font(15, "bold")
    for _ in range(7):
        cx, cy, r = rng.randint(20, 340), rng.randint(50, 230), rng.randint(25, 60)
        ring = [
            (
                cx + r * rng.uniform(0.6, 1.0) * math.cos(a / 4),
                cy + r * rng.uniform(0.6, 1.0) * math.sin(a / 4),
            )
            for a in range(26)
        ]
        draw.polygon(
            ring, fill=(rng.randint(120, 190), rng.randint(170, 215), rng.randint(110, 160))
        )
    draw.line(
        [(x, 120 + 40 * math.sin(x / 45 + rng.random())) for x in range(0, 361, 12)],
        fill=(70, 130, 200),
        width=5,
    )
    draw.rectangle((0, 0, 360, 30), fill=PAPER)
    _text(draw, (10, 6), spec["title"], bold, _INK)
    legend = spec.get("legend", [])
    draw.rectangle((8, 242 - 22 * len(legend) - 8, 150, 242), fill=PAPER, outline=_INK)
    for i, entry in enumerate(legend):
        y = 242 - 22 * (len(legend) - i) - 2
        draw.rectangle((14, y + 3, 28, y + 15), fill=_ACCENT[i % 2])
        _text(draw, (34, y), entry, font, _INK)
    _text(draw, (330, 40), "N", bold, _INK)
    return im


def photo(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    """A random landscape of sky, ground and blobs (the demo's photos, and its broken PNG)."""
    im, draw = _canvas((320, 200), 0)  # black, as Pillow's default
    sky, ground = [rng.randint(90, 230) for _ in range(3)], [rng.randint(40, 150) for _ in range(3)]
    for y in range(200):
        base = sky if y < 120 else ground
        draw.line((0, y, 320, y), fill=tuple(int(c * (1 - 0.3 * y / 200)) for c in base))
    for _ in range(rng.randint(3, 6)):
        x, y, r = rng.randint(0, 320), rng.randint(40, 190), rng.randint(10, 45)
        draw.ellipse(
            (x - r, y - r, x + r, y + r), fill=tuple(rng.randint(30, 250) for _ in range(3))
        )
    return im


RENDERERS = {
    "terminal": _terminal,
    "dialog": _dialog,
    "plot": _plot,
    "bars": _bars,
    "diagram": _diagram,
    "map": _map,
    "photo": photo,
}
