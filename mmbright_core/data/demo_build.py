"""Build the embedded demo dataset: synthetic, small, deterministic, in the published layout.

Run ``python -m mmbright_core.data.demo_build [--out DIR]``. The content (passages, queries,
image descriptions) lives in ``demo/source/<domain>.json``; this script turns it into
``{config}/{domain}.parquet`` files with exactly the published columns and id conventions
(SPEC §2), renders every image with Pillow, and writes ``MANIFEST.json`` (file hashes and the
library versions that produced them). Two builds with the same libraries are byte-identical:
ids and numbers derive from SHA-256 of names, filler text from seeded RNGs, parquet is
written with fixed settings and images carry no time metadata.

The dirty cases of the real data are deliberate (SPEC §2): SVG payloads, 1x1 PNGs,
truncated PNGs, a positive image absent from the corpus, an orphan image whose key matches
no passage, backslash paths, an empty and a duplicate passage, ``"N/A"`` negatives.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import PIL
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image, ImageDraw, ImageFont

from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text

DEMO_DIR = Path(__file__).parent / "demo"
SOURCE_DIR = DEMO_DIR / "source"
DOMAINS = ("askubuntu", "biology", "gis", "physics")
CHUNKED_DOMAINS = frozenset({"biology"})  # SPEC §2: Biology ids are <key>_<n>_<chunk>.txt

# Which way image-aware retrieval (query text + the text read from its images) is designed
# to move each query against text-only retrieval:
#   clue        the text is vague; the image carries the decisive words of the gold passage
#   misleading  the text points to the gold passage; the image's words match a distractor
#   neutral     the image agrees with the text, carries no text, or there is no image
QUERY_KINDS: Mapping[str, str] = {
    "askubuntu_0": "clue",  # "E: Unable to locate package libssl1.1"
    "askubuntu_1": "clue",  # "Could not get lock /var/lib/dpkg/lock-frontend"
    "askubuntu_2": "clue",  # lspci shows a Realtek RTL8821CE; the text matches Broadcom
    "askubuntu_3": "misleading",  # NVIDIA + Secure Boot, image is a GRUB menu
    "askubuntu_4": "misleading",  # Firefox snap, image is systemd-analyze blame
    "askubuntu_5": "neutral",
    "askubuntu_6": "neutral",  # its only image is an SVG
    "askubuntu_7": "neutral",
    "askubuntu_8": "neutral",
    "biology_0": "clue",  # "no NGG PAM" in the design schematic
    "biology_1": "misleading",  # C4 plants, image is a Michaelis-Menten plot
    "biology_2": "clue",  # the drawing is labelled "metaphase plate"
    "biology_3": "neutral",
    "biology_4": "neutral",
    "biology_5": "neutral",
    "biology_6": "neutral",
    "biology_7": "neutral",
    "gis_0": "clue",  # layer properties show EPSG:4326 vs EPSG:27700
    "gis_1": "clue",  # "Cannot find proj.db"
    "gis_2": "misleading",  # shapefile field names, image is a hillshade map
    "gis_3": "neutral",
    "gis_4": "neutral",
    "gis_5": "neutral",
    "gis_6": "neutral",
    "gis_7": "neutral",
    "gis_8": "neutral",
    "physics_0": "misleading",  # pendulum, image is a resonance plot
    "physics_1": "clue",  # twin paradox diagram
    "physics_2": "clue",  # Hall voltage plot
    "physics_3": "neutral",
    "physics_4": "neutral",
    "physics_5": "neutral",
    "physics_6": "neutral",
    "physics_7": "neutral",
    "physics_8": "neutral",
}

_IMAGE_REF = pa.struct([("image_path", pa.string()), ("source_passage_id", pa.string())])
_EXAMPLE_FIELDS = [
    ("id", pa.string()),
    ("query", pa.string()),
    ("gold_ids", pa.list_(pa.string())),
    ("negative_ids", pa.list_(pa.string())),
    ("image_paths", pa.list_(pa.string())),
    ("gold_answers", pa.list_(pa.string())),
]
_IMAGE_SCHEMA = pa.schema([("path", pa.string()), ("bytes", pa.binary())])
SCHEMAS: Mapping[str, pa.Schema] = {
    "documents": pa.schema([("id", pa.string()), ("content", pa.string())]),
    "examples": pa.schema(_EXAMPLE_FIELDS),
    "examples_multimodal": pa.schema(
        [
            *_EXAMPLE_FIELDS,
            ("positive_images", pa.list_(_IMAGE_REF)),
            ("negative_images", pa.list_(_IMAGE_REF)),
        ]
    ),
    "examples_images": _IMAGE_SCHEMA,
    "document_images": _IMAGE_SCHEMA,
}


def source_key(domain: str, name: str, length: int = 8) -> str:
    """Return the hex source key of a named thread (8 hex digits; 16 for hard negatives).

    Args:
        domain: The domain the thread belongs to.
        name: The thread's name in the source file.
        length: How many hex digits.

    Returns:
        A stable hex key derived from SHA-256, so ids never change between builds.
    """
    return hashlib.sha256(f"{domain}/{name}".encode()).hexdigest()[:length]


def _number(domain: str, name: str, modulo: int) -> int:
    """A stable number for a thread (post numbers in passage ids and image folders)."""
    return int(hashlib.sha256(f"#{domain}/{name}".encode()).hexdigest()[:8], 16) % modulo


# Images (SPEC §2 lists the kinds the benchmark has: plots, screenshots, diagrams, photos).
# Text is drawn large and dark-on-light or light-on-dark so that OCR reads it: the demo's
# image-aware baseline appends the OCR text of query images to the query.
_FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FONT_SOURCE = "dejavu" if (_FONT_DIR / "DejaVuSans.ttf").is_file() else "pillow-default"
_FONT_FILES = {"": "DejaVuSans.ttf", "bold": "DejaVuSans-Bold.ttf", "mono": "DejaVuSansMono.ttf"}
_INK, _PAPER, _ACCENT = (25, 25, 25), (255, 255, 255), ((31, 119, 180), (214, 39, 40))
_T = TypeVar("_T")
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


def _extension(spec: Mapping[str, Any]) -> str:
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


@dataclass
class DomainRows:
    """The rows of every config of one domain, filled while reading its source file."""

    name: str
    source: Path
    documents: dict[str, str] = field(default_factory=dict)
    passage_ids: dict[str, list[list[str]]] = field(default_factory=dict)  # topic -> ids
    image_refs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    document_images: dict[str, bytes] = field(default_factory=dict)
    query_images: dict[str, bytes] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    multimodal: list[dict[str, Any]] = field(default_factory=list)

    def add_passage(self, topic: str, key: str, number: int, paragraphs: Sequence[str]) -> None:
        """Add one passage (chunked per paragraph in chunked domains) under ``topic``."""
        base = f"{self.name}/{key}_{number}"
        if self.name in CHUNKED_DOMAINS and paragraphs:
            ids = [f"{base}_{c}.txt" for c in range(len(paragraphs))]
            texts = list(paragraphs)
        else:
            ids = [f"{base}_0.txt" if self.name in CHUNKED_DOMAINS else f"{base}.txt"]
            texts = ["\n\n".join(paragraphs)]
        self.documents.update(zip(ids, texts, strict=True))
        self.passage_ids.setdefault(topic, []).append(ids)


def _image_path(domain: str, key: str, folder: int, index: int, spec: Mapping[str, Any]) -> str:
    """The published image path ``<domain>/<domain>_<key>_<nnnn>/image_<k>.<ext>``."""
    return f"{domain}/{domain}_{key}_{folder:04d}/image_{index}.{_extension(spec)}"


def _add_topic(dom: DomainRows, topic: str, spec: Mapping[str, Any]) -> None:
    """Add a topic's passages and its corpus images (keyed like the passages)."""
    key, number = source_key(dom.name, topic), 100 + _number(dom.name, topic, 90000)
    if "duplicate_of" in spec:
        original = _resolve(dom, spec["duplicate_of"], dom.passage_ids)
        spec = {"passages": [[dom.documents[i] for i in original]]}
    for offset, paragraphs in enumerate(spec.get("passages", [])):
        dom.add_passage(topic, key, number + offset, paragraphs)
    # An orphan's passage is gone from the corpus: its images keep a dangling source id.
    missing_source = f"{dom.name}/{key}_{number}.txt"
    folder, refs = _number(dom.name, f"{topic}/images", 10000), []
    for k, image in enumerate(spec.get("images", []), start=1):
        path = _image_path(dom.name, key, folder, k, image)
        passages = dom.passage_ids.get(topic)
        refs.append((path, passages[image.get("passage", 0)][0] if passages else missing_source))
        data = render_image(image, seed=f"{dom.name}/{topic}/{k}")
        if data is not None:
            dom.document_images[path] = data
    dom.image_refs[topic] = refs


def _add_filler(dom: DomainRows, spec: Mapping[str, Any]) -> None:
    """Add template-made background threads: realistic vocabulary, no designed role."""
    rng = random.Random(_number(dom.name, "filler", 2**31))
    for t in range(spec["topics"]):
        passages = []
        for p in range(rng.randint(1, 3)):
            # The first passage of the first thread is long, for length variety.
            n_paras = 9 if t == p == 0 else rng.randint(1, 4)
            paras = [
                " ".join(rng.sample(spec["sentences"], rng.randint(2, 4))) for _ in range(n_paras)
            ]
            paras[0] = f"{rng.choice(spec['openers'])} {paras[0]}"
            if rng.random() < 0.5:
                paras[-1] = f"{paras[-1]} {rng.choice(spec['closers'])}"
            passages.append(paras)
        images = spec["images"][t : t + 1] if t < len(spec["images"]) else []
        _add_topic(dom, f"filler-{t}", {"passages": passages, "images": images})


def _resolve(dom: DomainRows, ref: str, table: Mapping[str, Sequence[_T]]) -> _T:
    """Look up ``topic:k`` (the k-th passage or image of a topic) in one of the tables."""
    topic, _, index = ref.rpartition(":")
    items = table.get(topic, ())
    if not index.isdigit() or int(index) >= len(items):
        raise InputError(
            "unknown reference in the demo source",
            source=str(dom.source),
            expected=f"<topic>:<k> with k below {len(items)} for topic {topic!r}",
            found=repr(ref),
        )
    return items[int(index)]


def _image_ref(dom: DomainRows, ref: str) -> dict[str, str]:
    """Resolve ``[win:]topic:k`` to a published image struct; ``win:`` writes backslashes."""
    windows = ref.startswith("win:")
    path, source = _resolve(dom, ref.removeprefix("win:"), dom.image_refs)
    return {"image_path": path.replace("/", "\\") if windows else path, "source_passage_id": source}


def _add_query(
    dom: DomainRows, query: Mapping[str, Any], hard_negatives: Mapping[str, str]
) -> None:
    """Add one query to ``examples`` and, when it has images, to ``examples_multimodal``."""
    qid = query["id"]
    key, folder = source_key(dom.name, f"query/{qid}"), _number(dom.name, f"query/{qid}", 10000)
    image_paths = []
    for k, image in enumerate(query.get("images", []), start=1):
        path = _image_path(dom.name, key, folder, k, image)
        data = render_image(image, seed=f"{dom.name}/{qid}/{k}")
        if data is not None:
            dom.query_images[path] = data
        image_paths.append(path.replace("/", "\\") if image.get("win") else path)
    gold = [pid for ref in query["gold"] for pid in _resolve(dom, ref, dom.passage_ids)]
    negatives = query.get("negatives")
    row = {
        "id": qid,
        "query": query["text"],
        "gold_ids": gold,
        # SPEC §2: the string "N/A" in negative_ids means "none".
        "negative_ids": ["N/A"] if negatives is None else [hard_negatives[n] for n in negatives],
        "image_paths": image_paths,
        "gold_answers": [query["answer"]],
    }
    dom.examples.append(row)
    if image_paths:
        dom.multimodal.append(
            {
                **row,
                "positive_images": [_image_ref(dom, r) for r in query["positive"]],
                "negative_images": [_image_ref(dom, r) for r in query["negative"]],
            }
        )


def load_domain(domain: str, source_dir: Path = SOURCE_DIR) -> DomainRows:
    """Read one domain's source file and produce its rows (documents, queries, images).

    Args:
        domain: One of ``DOMAINS``.
        source_dir: The folder holding ``<domain>.json``.

    Returns:
        The domain's rows, ready to be written.

    Raises:
        InputError: When the source refers to a passage or image it does not define, or
            its query ids and ``QUERY_KINDS`` disagree.
    """
    source = source_dir / f"{domain}.json"
    spec = json.loads(source.read_text(encoding="utf-8"))
    dom = DomainRows(domain, source)
    for topic, topic_spec in spec["topics"].items():
        _add_topic(dom, topic, topic_spec)
    hard_negatives = {}
    for name, paragraphs in spec["hard_negatives"].items():
        key, number = source_key(domain, name, 16), 100 + _number(domain, name, 90000)
        dom.add_passage(name, key, number, paragraphs)
        hard_negatives[name] = dom.passage_ids[name][0][0]
    _add_filler(dom, spec["filler"])
    ids = {q["id"] for q in spec["queries"]}
    kinds = {q for q in QUERY_KINDS if q.startswith(f"{domain}_")}
    if ids != kinds:
        raise InputError(
            "query ids of the demo source and QUERY_KINDS differ",
            source=str(source),
            expected=str(sorted(kinds)),
            found=str(sorted(ids)),
            hint="Add every query to QUERY_KINDS with its kind (clue, misleading, neutral)",
        )
    for query in spec["queries"]:
        _add_query(dom, query, hard_negatives)
    return dom


def _parquet_bytes(
    rows: Sequence[Mapping[str, Any]] | Mapping[str, list[Any]], schema: pa.Schema
) -> bytes:
    """Serialise rows with fixed writer settings so that equal input gives equal bytes."""
    table = (
        pa.Table.from_pylist(list(rows), schema=schema)
        if not isinstance(rows, Mapping)
        else pa.table(rows, schema=schema)
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=9, row_group_size=1 << 20)
    return sink.getvalue()


def _domain_files(dom: DomainRows) -> dict[str, bytes]:
    """The five parquet files of one domain, keyed by their path relative to the root."""
    docs = sorted(dom.documents.items())
    q_images, d_images = sorted(dom.query_images.items()), sorted(dom.document_images.items())
    columns: dict[str, dict[str, list[Any]]] = {
        "documents": {"id": [i for i, _ in docs], "content": [c for _, c in docs]},
        "examples_images": {"path": [p for p, _ in q_images], "bytes": [b for _, b in q_images]},
        "document_images": {"path": [p for p, _ in d_images], "bytes": [b for _, b in d_images]},
    }
    files = {f"{c}/{dom.name}.parquet": _parquet_bytes(v, SCHEMAS[c]) for c, v in columns.items()}
    files[f"examples/{dom.name}.parquet"] = _parquet_bytes(dom.examples, SCHEMAS["examples"])
    files[f"examples_multimodal/{dom.name}.parquet"] = _parquet_bytes(
        dom.multimodal, SCHEMAS["examples_multimodal"]
    )
    return files


def build(out: Path | str = DEMO_DIR, source_dir: Path = SOURCE_DIR) -> list[Path]:
    """Build every demo file into ``out`` and write its ``MANIFEST.json``.

    Args:
        out: The destination folder (the packaged ``demo/`` folder by default).
        source_dir: The folder holding the ``<domain>.json`` content files.

    Returns:
        The paths written, manifest last.
    """
    out = Path(out)
    files = {
        name: data
        for domain in DOMAINS
        for name, data in _domain_files(load_domain(domain, source_dir)).items()
    }
    written = [atomic_write_bytes(out / name, data) for name, data in sorted(files.items())]
    manifest = {
        "generator": {
            "pyarrow": pa.__version__,
            "pillow": PIL.__version__,
            "font": FONT_SOURCE,
        },
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
    }
    written.append(atomic_write_text(out / "MANIFEST.json", json.dumps(manifest, indent=1) + "\n"))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m mmbright_core.data.demo_build [--out DIR]``."""
    parser = argparse.ArgumentParser(description="Build the synthetic MM-BRIGHT demo dataset.")
    parser.add_argument("--out", type=Path, default=DEMO_DIR, help="destination folder")
    args = parser.parse_args(argv)
    written = build(args.out)
    total = sum(path.stat().st_size for path in written)
    print(f"wrote {len(written)} files, {total / 1024:.0f} KiB, to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
