"""Query and document images as a chat request carries them: PNG data URLs.

Vision-capable chat servers (vLLM, Ollama, llama.cpp's server, OpenAI) take images as
``image_url`` parts whose URL may be ``data:image/png;base64,...``. Every image is decoded
as the official loader decodes it (:func:`~mmbright_core.data.images.decode_image`: a
truncated file padded, SVG and garbage dropped), shrunk so that its longer side is at most
``side`` pixels (a request's size and a model's context stay bounded), and written as PNG,
so the same bytes always give the same URL and the same cache key.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

from PIL import Image

#: The longest side, in pixels, of an image sent to a chat model, unless told otherwise.
DEFAULT_SIDE = 1024


def data_url(image: Image.Image, side: int = DEFAULT_SIDE) -> str:
    """Return ``image`` as a PNG data URL, its longer side at most ``side`` pixels."""
    shrunk = image.convert("RGB")
    if max(shrunk.size) > side:
        shrunk.thumbnail((side, side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    shrunk.save(buffer, format="PNG", optimize=False)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def user_message(text: str, images: Sequence[str] = ()) -> dict[str, Any]:
    """One user message: plain text, or a text part followed by an ``image_url`` part each."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts += [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {"role": "user", "content": parts}
