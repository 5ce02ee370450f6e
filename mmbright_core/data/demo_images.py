"""Drawing the demo's images with Pillow: terminals, dialogs, plots, diagrams, maps, photos.

Every image is drawn from a small description (kind, title, lines, axes...) in the demo's
source files, with a seeded RNG, so the same description always gives the same bytes. The
dirty cases (an SVG payload, a 1x1 PNG, a truncated PNG) come from descriptions too.
"""

from __future__ import annotations

import functools
import hashlib
import io
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
_INK, _PAPER, _ACCENT = (25, 25, 25), (255, 255, 255), ((31, 119, 180), (214, 39, 40))
_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.cache
def _font(size: int, style: str = "") -> _Font:
    """DejaVu where installed (Debian), else Pillow's bundled scalable font."""
    if FONT_SOURCE == "dejavu":
        return ImageFont.truetype(str(_FONT_DIR / _FONT_FILES[style]), size)
    return ImageFont.load_default(size=size)


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
    im = Image.new(
        "RGB",
        (max(320, max(_width(t, font) for t in lines) + 28), 40 + 24 * len(lines)),
        (36, 36, 40),
    )
    draw = ImageDraw.Draw(im)
    draw.rectangle((0, 0, im.width, 22), fill=(62, 62, 68))
    for i, colour in enumerate([(237, 106, 94), (245, 191, 79), (98, 197, 84)]):
        draw.ellipse((8 + 18 * i, 5, 20 + 18 * i, 17), fill=colour)
    for i, line in enumerate(lines):
        error = line.startswith(("E:", "ERROR", "W:", "UserWarning"))
        _text(draw, (12, 30 + 24 * i), line, font, (255, 150, 140) if error else (236, 236, 236))
    return im


def _dialog(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, bold, lines = _font(16), _font(16, "bold"), spec["lines"]
    width = max([_width(spec["title"], bold) + 40, *(_width(t, font) + 90 for t in lines), 320])
    im = Image.new("RGB", (width, 100 + 26 * len(lines)), (242, 242, 242))
    draw = ImageDraw.Draw(im)
    draw.rectangle((0, 0, width, 30), fill=(52, 101, 164))
    _text(draw, (12, 6), spec["title"], bold, _PAPER)
    if spec.get("icon"):  # the red error badge of a message box
        draw.ellipse((16, 46, 52, 82), fill=(204, 51, 51))
        draw.line((26, 56, 42, 72), fill=_PAPER, width=4)
        draw.line((42, 56, 26, 72), fill=_PAPER, width=4)
    for i, line in enumerate(lines):
        _text(draw, (70, 44 + 26 * i), line, font, _INK)
    x = width - 12
    for label in reversed(spec.get("buttons", [])):
        left = x - _width(label, font) - 28
        draw.rounded_rectangle(
            (left, im.height - 42, x, im.height - 12), 6, fill=_PAPER, outline=(120, 120, 120)
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
    im = Image.new("RGB", (380, 250), _PAPER)
    draw, bold, font = ImageDraw.Draw(im), _font(15, "bold"), _font(14)
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
    label = Image.new("RGB", (_width(spec["y"], font) + 8, 22), _PAPER)
    _text(ImageDraw.Draw(label), (4, 2), spec["y"], font, _INK)
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
    im = Image.new("RGB", (label_w + 220, 70 + 30 * len(bars)), _PAPER)
    draw, top = ImageDraw.Draw(im), max(v for _, v in bars)
    _text(draw, (12, 10), spec["title"], bold, _INK)
    for i, (name, value) in enumerate(bars):
        y = 42 + 30 * i
        _text(draw, (8, y), name, font, _INK)
        draw.rectangle((label_w, y + 2, label_w + int(190 * value / top), y + 18), fill=_ACCENT[0])
    _text(draw, (label_w, im.height - 24), spec["x"], font, _INK)
    return im


def _diagram(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    font, bold, boxes = _font(15), _font(15, "bold"), spec["boxes"]
    width = max([_width(spec["title"], bold) + 40, *(_width(b, font) + 70 for b in boxes), 300])
    im = Image.new("RGB", (width, 50 + 66 * len(boxes)), (250, 250, 246))
    draw = ImageDraw.Draw(im)
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
    im = Image.new("RGB", (360, 250), (236, 230, 214))
    draw, font, bold = ImageDraw.Draw(im), _font(14), _font(15, "bold")
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
    draw.rectangle((0, 0, 360, 30), fill=_PAPER)
    _text(draw, (10, 6), spec["title"], bold, _INK)
    legend = spec.get("legend", [])
    draw.rectangle((8, 242 - 22 * len(legend) - 8, 150, 242), fill=_PAPER, outline=_INK)
    for i, entry in enumerate(legend):
        y = 242 - 22 * (len(legend) - i) - 2
        draw.rectangle((14, y + 3, 28, y + 15), fill=_ACCENT[i % 2])
        _text(draw, (34, y), entry, font, _INK)
    _text(draw, (330, 40), "N", bold, _INK)
    return im


def _photo(spec: Mapping[str, Any], rng: random.Random) -> Image.Image:
    im = Image.new("RGB", (320, 200))
    draw = ImageDraw.Draw(im)
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


_RENDERERS = {
    "terminal": _terminal,
    "dialog": _dialog,
    "plot": _plot,
    "bars": _bars,
    "diagram": _diagram,
    "map": _map,
    "photo": _photo,
}
_SVG = (
    b'<svg xmlns="http://www.w3.org/2000/svg" width="160" height="90">'
    b'<rect width="160" height="90" fill="#eee"/><text x="10" y="50">figure</text></svg>'
)


def extension(spec: Mapping[str, Any]) -> str:
    """Return the file extension an image description is written with."""
    if spec["kind"] == "svg":
        return "svg"
    return "jpg" if spec.get("format") == "jpeg" else "png"


def _encode(im: Image.Image, spec: Mapping[str, Any]) -> bytes:
    """JPEG q70 for photos that ask for it, else a small palette PNG (no time metadata)."""
    buffer = io.BytesIO()
    if spec.get("format") == "jpeg":
        im.save(buffer, "JPEG", quality=70, optimize=True)
    elif spec["kind"] == "photo":
        im.quantize(48, method=Image.Quantize.FASTOCTREE).save(buffer, "PNG", optimize=True)
    else:
        # Median cut keeps glyph edges apart; OCR joins words on the coarser octree palette.
        im.quantize(24, dither=Image.Dither.NONE).save(buffer, "PNG", optimize=True)
    return buffer.getvalue()


def render_image(spec: Mapping[str, Any], seed: str) -> bytes | None:
    """Render one image of the demo from its description.

    Args:
        spec: The image description: ``kind`` (terminal, dialog, plot, bars, diagram, map,
            photo, or a dirty case: svg, tiny, corrupt, absent) and the kind's fields.
        seed: A name that fixes the random parts of the picture.

    Returns:
        The file's bytes, or ``None`` for ``absent`` (an image listed but not stored).
    """
    kind = spec["kind"]
    rng = random.Random(int(hashlib.sha256(seed.encode()).hexdigest()[:12], 16))
    if kind == "absent":
        return None
    if kind == "svg":
        return b'<?xml version="1.0" encoding="UTF-8"?>\n' + _SVG if spec.get("prolog") else _SVG
    if kind == "tiny":
        return _encode(Image.new("RGB", (1, 1), _PAPER), {"kind": kind})
    if kind == "corrupt":  # a real PNG cut short: the header opens, the pixels do not decode
        whole = _encode(_photo(spec, rng), {"kind": "photo"})
        return whole[: len(whole) // 3]
    image = _RENDERERS[kind](spec, rng)
    if kind != "photo":
        # Drawn at a compact layout, then doubled: OCR joins words set much below 30 px.
        image = image.resize((image.width * 2, image.height * 2), Image.Resampling.LANCZOS)
    return _encode(image, spec)


def image_text(spec: Mapping[str, Any]) -> str:
    """Return the words drawn on an image (what a perfect OCR would read), one line each."""
    parts = [spec.get("title", ""), *spec.get("lines", []), *spec.get("boxes", [])]
    parts += [
        spec.get("y", ""),
        spec.get("x", ""),
        *spec.get("legend", []),
        *spec.get("buttons", []),
    ]
    parts += [name for name, _ in spec.get("bars", [])]
    return "\n".join(p for p in parts if p)
