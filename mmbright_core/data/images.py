"""Decoding benchmark images and preparing a query's images for a retriever.

The rules are in docs/protocol.md, Per-task protocol.

The official loader (``src/data.py``, ``DataLoader._load_images_parquet``) decodes each image
with ``Image.open(...).convert("RGB")`` and drops those that raise. It runs with Pillow's
``ImageFile.LOAD_TRUNCATED_IMAGES = True``: ``src/retrievers/__init__.py`` imports
``task4_pair.py``, which sets the flag at module level (twice), and ``task3_image.py`` sets it
again inside ``retrieval_clip_it2i``. So a truncated JPEG or PNG decodes, its missing rows
padded, and is kept; here too (the flag set for that one decode alone, see
:mod:`~mmbright_core.data.pillow_flag`), and such images are told apart as *padded*. What
still fails (SVG, garbage, empty or missing bytes) is dropped, and reported with its path
and the reason instead of vanishing. A 1x1 image decodes, so it is kept, as the official
loader keeps it: the benchmark's published image counts (docs/protocol.md, The benchmark,
17,673 Task 3 images after dropping SVG) include such images.

A query with several images is handed over under one of three named policies: ``first`` (the
default: the released code's ``images[0]``, the first image that decoded), ``concat`` (the
paper and MTEB, for single-image models) or ``all`` (multi-image models).
"""

from __future__ import annotations

import io
import struct
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from PIL import Image, UnidentifiedImageError

from mmbright_core.data.choices import POLICIES as POLICIES
from mmbright_core.data.choices import ImagePolicy as ImagePolicy
from mmbright_core.data.pillow_flag import FLAG_LOCK, truncated_images_loaded
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import Query

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
    """Where images are read, by domain and path: a data source satisfies it.

    :func:`query_images` reads query images through it, a retriever its corpus images too.
    """

    def query_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return a query image's raw file bytes, or None when the data has none."""
        ...

    def document_image_bytes(self, domain: str, path: str) -> bytes | None:
        """Return a corpus image's raw file bytes, or None when the data has none."""
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


class DecodedImage(NamedTuple):
    """A decoded image and how it decoded.

    Attributes:
        image: The fully loaded image, converted to RGB.
        padded: True when it decoded only as the official loader decodes, with Pillow's
            ``LOAD_TRUNCATED_IMAGES`` (a truncated file whose missing rows are padded).
    """

    image: Image.Image
    padded: bool


def _open_rgb(data: bytes) -> Image.Image:
    with warnings.catch_warnings():
        # Pillow only warns between MAX_IMAGE_PIXELS and twice that; such an image costs
        # gigabytes to decode, so it is refused like one past the hard limit.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            # An RGB image is kept as decoded: convert() would copy it, doubling the peak
            # of one large image (docs/safety.md, "Bounded memory").
            return image if image.mode == "RGB" else image.convert("RGB")


def _open_as_official(data: bytes) -> DecodedImage:
    try:
        with FLAG_LOCK.shared():
            return DecodedImage(_open_rgb(data), padded=False)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        raise
    except _DECODE_ERRORS as strict:
        try:
            with truncated_images_loaded():
                return DecodedImage(_open_rgb(data), padded=True)
        except _DECODE_ERRORS:
            raise strict from None  # the strict reason says what is wrong with the file


def load_image(data: bytes | None, path: str) -> DecodedImage:
    """Decode image bytes into an RGB image as the official loader does, or say why not.

    Args:
        data: The raw image file, or None when the dataset lacks the image.
        path: The image path, for the error.

    Returns:
        The image and whether it decoded only padded (a truncated file).

    Raises:
        ImageDecodeError: For missing bytes, an SVG payload (Pillow has no vector decoder),
            an image too large to decode safely, or bytes that do not decode even padded.
    """
    if data is None:
        raise ImageDecodeError(path, "missing: the dataset has no bytes for this path")
    if _is_svg(data):
        raise ImageDecodeError(path, "SVG payload: Pillow cannot decode vector images")
    try:
        return _open_as_official(data)
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as err:
        raise ImageDecodeError(path, f"too large: {err}") from err
    except UnidentifiedImageError as err:  # its message holds a memory address: say it plainly
        raise ImageDecodeError(path, "corrupt: not an image format Pillow knows") from err
    except _DECODE_ERRORS as err:
        raise ImageDecodeError(path, f"corrupt: {type(err).__name__}: {err}") from err


def decode_image(data: bytes | None, path: str) -> Image.Image:
    """Decode image bytes into an RGB image (a truncated file padded, see :func:`load_image`).

    Raises:
        ImageDecodeError: The image cannot be used; its ``reason`` says why.
    """
    return load_image(data, path).image


class ImageCheck(NamedTuple):
    """Whether an image is kept, and how.

    Attributes:
        problem: Why it is dropped (None: kept).
        padded: Whether it is kept only as a truncated file decoded padded.
    """

    problem: str | None
    padded: bool


def check_image(data: bytes | None, path: str) -> ImageCheck:
    """Decode an image to tell whether it is kept and how (pixels are discarded)."""
    try:
        decoded = load_image(data, path)
    except ImageDecodeError as err:
        return ImageCheck(err.reason, padded=False)
    decoded.image.close()
    return ImageCheck(None, decoded.padded)


def image_problem(data: bytes | None, path: str) -> str | None:
    """Return why an image cannot be decoded, or None when it decodes (pixels are discarded)."""
    return check_image(data, path).problem


def concat_vertical(images: Sequence[Image.Image]) -> Image.Image:
    """Stack images top to bottom, as the paper feeds single-image models.

    docs/protocol.md, Per-task protocol, says how.

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


def images_taken(
    source: ImageSource, query: Query, policy: str = "first"
) -> list[tuple[str, Image.Image]]:
    """The query images ``first`` or ``all`` takes, each with its path (undecodable skipped).

    Raises:
        UnknownNameError: For an unknown policy; ``concat`` makes one image of several,
            which has no path of its own.
    """
    if policy == "concat":
        raise UnknownNameError("image policy (first or all)", policy, ("first", "all"))
    prepared = query_images(source, query, policy)
    decoded = [ref.path for ref in query.images if ref.path not in prepared.problems]
    return list(zip(decoded, prepared.images, strict=False))
