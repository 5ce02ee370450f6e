"""Decoding benchmark images and preparing a query's images for a retriever (SPEC §3).

The official loader drops images Pillow cannot decode; here every such image is reported with
its path and the reason (SVG payload, corrupt or missing bytes) instead of vanishing. A 1x1
image decodes, so it is kept, as the official loader keeps it: the benchmark's published image
counts (SPEC §1, 17,673 Task 3 images after dropping SVG) include such images.
A query with several images is handed over under one of three named policies: ``first`` (the
released code), ``concat`` (the paper, for single-image models) or ``all`` (multi-image models).
"""

from __future__ import annotations

import io
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from PIL import Image, UnidentifiedImageError

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import Query

ImagePolicy = Literal["first", "concat", "all"]
POLICIES: tuple[ImagePolicy, ...] = ("first", "concat", "all")

# What Pillow raises on hostile bytes besides OSError (UnidentifiedImageError, truncation):
# plugins raise SyntaxError/ValueError/struct.error/EOFError on malformed headers.
_DECODE_ERRORS = (
    OSError,
    ValueError,
    SyntaxError,
    EOFError,
    struct.error,
)


class ImageDecodeError(InputError):
    """An image that cannot be used: its path and the reason are in ``path`` and ``reason``."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"image cannot be decoded: {reason}", source=path)


class ImageSource(Protocol):
    """What :func:`query_images` needs from a source: query image bytes by path."""

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return the bytes of one query image, or None when the source lacks it."""
        ...


@dataclass
class QueryImages:
    """A query's images prepared under a policy.

    Attributes:
        images: RGB images: at most one for ``first`` and ``concat``, the sequence for ``all``;
            empty when no image decodes (the retriever then uses a white image or text only).
        problems: image path -> reason, for each image left out.
    """

    images: list[Image.Image] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)


def _is_svg(data: bytes) -> bool:
    head = data[:512].lstrip().lower()
    return head.startswith((b"<svg", b"<?xml")) or b"<svg" in head


def decode_image(data: bytes | None, path: str) -> Image.Image:
    """Decode image bytes into an RGB image, or say why they cannot be used.

    Args:
        data: The raw image file, or None when the dataset lacks the image.
        path: The image path, for the error.

    Returns:
        The fully loaded image converted to RGB.

    Raises:
        ImageDecodeError: For missing bytes, an SVG payload (Pillow has no vector decoder)
            or corrupt bytes.
    """
    if data is None:
        raise ImageDecodeError(path, "missing: the dataset has no bytes for this path")
    if _is_svg(data):
        raise ImageDecodeError(path, "SVG payload: Pillow cannot decode vector images")
    try:
        with warnings.catch_warnings():
            # Pillow only warns between MAX_IMAGE_PIXELS and twice that; such an image costs
            # gigabytes to decode, so it is refused like one past the hard limit.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                rgb = image.convert("RGB")
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as err:
        raise ImageDecodeError(path, f"too large: {err}") from err
    except UnidentifiedImageError as err:  # its message holds a memory address: say it plainly
        raise ImageDecodeError(path, "corrupt: not an image format Pillow knows") from err
    except _DECODE_ERRORS as err:
        raise ImageDecodeError(path, f"corrupt: {type(err).__name__}: {err}") from err
    return rgb


def image_problem(data: bytes | None, path: str) -> str | None:
    """Return why an image cannot be decoded, or None when it decodes (pixels are discarded)."""
    try:
        decode_image(data, path).close()
    except ImageDecodeError as err:
        return err.reason
    return None


def concat_vertical(images: Sequence[Image.Image]) -> Image.Image:
    """Stack images top to bottom, as the paper feeds single-image models (SPEC §3).

    The canvas is as wide as the widest image and white; each image is centred horizontally.

    Raises:
        InputError: If ``images`` is empty.
    """
    if not images:
        raise InputError("cannot concatenate an empty list of images")
    width = max(im.width for im in images)
    canvas = Image.new("RGB", (width, sum(im.height for im in images)), "white")
    top = 0
    for im in images:
        canvas.paste(im.convert("RGB"), ((width - im.width) // 2, top))
        top += im.height
    return canvas


def query_images(source: ImageSource, query: Query, policy: str = "first") -> QueryImages:
    """Decode a query's images and apply a multi-image policy.

    Undecodable images are skipped and reported; ``first`` takes the first image that decodes,
    as the released code does after its loader dropped the others.

    Args:
        source: Where the query image bytes come from (``Source.query_image_bytes``).
        query: The query; its ``images`` hold normalised paths.
        policy: ``"first"``, ``"concat"`` or ``"all"``.

    Returns:
        The prepared images and the problems met.

    Raises:
        UnknownNameError: For an unknown policy.
    """
    if policy not in POLICIES:
        raise UnknownNameError("image policy", policy, POLICIES)
    out = QueryImages()
    decoded: list[Image.Image] = []
    for ref in query.images:
        if policy == "first" and decoded:
            break
        try:
            decoded.append(decode_image(source.query_image_bytes(query.domain, ref.path), ref.path))
        except ImageDecodeError as err:
            out.problems[ref.path] = err.reason
    if policy == "concat" and decoded:
        out.images = [decoded[0] if len(decoded) == 1 else concat_vertical(decoded)]
    else:
        out.images = decoded
    return out
