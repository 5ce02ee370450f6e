"""Batches of images decoded one at a time, so memory holds one full-size image at most.

A batch of 32 corpus images decoded before preprocessing holds 32 full-size pixel buffers:
a 4000x4000 PNG is 48 MB once decoded, so a batch of them peaks near 1.5 GB, and images at
Pillow's 89-megapixel limit near 8.5 GB. An embedder only needs each image until its
preprocessing has turned it into a small tensor (224x224 for CLIP). :class:`LazyImages` is a
sequence whose items are decoded when read and never kept, and :func:`each_preprocessed`
reads them one at a time into their preprocessed form (docs/safety.md, "Bounded memory").
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, overload

from PIL import Image

T = TypeVar("T")
ImageLoader = Callable[[], Image.Image]


class LazyImages(Sequence[Image.Image]):
    """A sequence of images, each decoded by its loader when read and not kept.

    Reading an item twice decodes it twice: an embedder reads each once, through
    :func:`each_preprocessed`, and the decoded image is freed when its preprocessing ends.

    Args:
        loaders: One callable per image, returning it decoded.
    """

    def __init__(self, loaders: Sequence[ImageLoader]) -> None:
        self._loaders = list(loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    @overload
    def __getitem__(self, index: int) -> Image.Image: ...

    @overload
    def __getitem__(self, index: slice) -> LazyImages: ...

    def __getitem__(self, index: int | slice) -> Image.Image | LazyImages:
        if isinstance(index, slice):
            return LazyImages(self._loaders[index])
        return self._loaders[index]()


def each_preprocessed(
    images: Sequence[Image.Image], preprocess: Callable[[Image.Image], T]
) -> list[T]:
    """Return ``preprocess`` of every image, reading (decoding) them one at a time.

    Indexing, not iterating: a ``for image in images`` loop keeps the previous image alive
    while the next one decodes; here each image is a temporary freed as soon as its
    preprocessed form exists.
    """
    return [preprocess(images[i]) for i in range(len(images))]
