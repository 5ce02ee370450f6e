"""The demo's image files: each description rendered and encoded, dirty cases included.

Every image is drawn from a small description (kind, title, lines, axes...) in the demo's
source files, with a seeded RNG, so the same description always gives the same bytes. The
dirty cases (an SVG payload, a 1x1 PNG, a truncated PNG) come from descriptions too. The
drawings themselves are in :mod:`mmbright_core.data.demo_pictures`.
"""

from __future__ import annotations

import hashlib
import io
import random
from collections.abc import Mapping
from typing import Any

from PIL import Image

from mmbright_core.data.demo_pictures import PAPER, RENDERERS, photo

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
        return _encode(Image.new("RGB", (1, 1), PAPER), {"kind": kind})
    if kind == "corrupt":  # a real PNG cut short: the header opens, the pixels do not decode
        whole = _encode(photo(spec, rng), {"kind": "photo"})
        return whole[: len(whole) // 3]
    image = RENDERERS[kind](spec, rng)
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
