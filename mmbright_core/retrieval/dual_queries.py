"""The query side of a dual encoder: which images a query's text is fused with, and how.

docs/protocol.md §3: a query is its text vector fused with the vector of its image(s),
chosen by the image policy (``first`` by default: the released code's ``images[0]``;
``concat``; ``all``: the mean of its images' raw vectors), by the embedder's named fusion
rule (:mod:`~mmbright_core.retrieval.fusion`); a query without a decodable image gets the
rule's stand-in (the white 224x224 image for ``raw-mean``) or its text alone; Task 1 queries
are their text alone. Query images are decoded one at a time, for their keys, and again only
when the cache lacks their vectors.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import ImageLoader
from mmbright_core.data.images import QueryImages, decode_image, query_images
from mmbright_core.retrieval.base import ImageSource
from mmbright_core.retrieval.dual_vectors import CachedVectors, asks_white, image_key, white_image
from mmbright_core.retrieval.fusion import Fusion
from mmbright_core.retrieval.index import l2_normalise
from mmbright_core.types import Query


def _decode_query_image(source: ImageSource, domain: str, path: str) -> Image.Image:
    return decode_image(source.query_image_bytes(domain, path), path)


class FusedQueries(CachedVectors):
    """Fused, L2-normalised query vectors (the settings are set by the subclass's ``__init__``).

    Attributes:
        fusion: The embedder's fusion rule.
        image_policy: ``first``, ``concat`` or ``all`` (see ``data.images``).
        no_image: ``white`` or ``text``: what a query without a decodable image gets.
    """

    fusion: Fusion
    image_policy: str
    no_image: str

    def query_pictures(self, query: Query, source: ImageSource) -> QueryImages:
        """Return the images a query's text is fused with, and the query images left out.

        The image policy chooses among the images that decode; a query with none gets the
        white image (``no_image="white"``, or where the embedder's recipe for the bound task
        asks for it: :func:`~.dual_vectors.asks_white`) or none at all (``"text"``: its text
        alone).
        """
        found = query_images(source, query, self.image_policy)
        if not found.images and (self.no_image == "white" or asks_white(self.embedder)):
            found.images = [white_image()]
        return found

    def encode_queries(self, queries: tuple[Query, ...], source: ImageSource | None) -> np.ndarray:
        """Return L2-normalised query vectors: the rule's fusion of text and image vectors.

        Each query's image is chosen by the image policy (``all``: the mean of its images'
        raw vectors); without a source (Task 1) a query is its normalised text vector.
        """
        if source is None or not self.fusion.images:
            return l2_normalise(self.encode_texts([q.text for q in queries], "query"))
        if self.fusion.name == "joint":
            images = [self.query_pictures(q, source).images for q in queries]
            return self._joint_queries(queries, images)
        texts = self.encode_texts([q.text for q in queries], "query")
        counts, loaders, keys = [], [], []
        for query in queries:  # one query's images decoded at a time, for their keys
            found_loaders, found_keys = self.query_image_loaders(query, source)
            counts.append(len(found_keys))
            loaders += found_loaders
            keys += found_keys
        flat_vectors = self.encode_images(loaders, keys, "query")
        out, start = [], 0
        for text, count in zip(texts, counts, strict=True):
            if not count:
                out.append(l2_normalise(text))  # no image part: the text alone
                continue
            image = flat_vectors[start : start + count].mean(axis=0)
            start += count
            out.append(self.fusion.fuse(text, image))
        return np.stack(out)

    def query_image_loaders(
        self, query: Query, source: ImageSource
    ) -> tuple[list[ImageLoader], list[str]]:
        """Return a loader and a pixel key for each image a query's text is fused with.

        The pictures are decoded here for their keys and then dropped; a loader decodes its
        picture again only when the cache lacks its vector, so a domain's query images are
        never all in memory at once (docs/safety.md, "Bounded memory").
        """
        found = self.query_pictures(query, source)
        keys = [image_key(image) for image in found.images]
        decodable = [ref.path for ref in query.images if ref.path not in found.problems]
        if not decodable:  # the white stand-in, or nothing
            return [white_image for _ in keys], keys
        if self.image_policy == "concat":
            return [partial(self._concat_picture, query, source)], keys
        # first and all: the images are the query's decodable ones, in order.
        domain = query.domain
        loaders: list[ImageLoader] = [
            partial(_decode_query_image, source, domain, path) for path in decodable[: len(keys)]
        ]
        return loaders, keys

    def _concat_picture(self, query: Query, source: ImageSource) -> Image.Image:
        return self.query_pictures(query, source).images[0]

    def _joint_queries(
        self, queries: tuple[Query, ...], images: list[list[Image.Image]]
    ) -> np.ndarray:
        # Several images (policy ``all``): the mean of the joint vectors of each.
        slots: list[list[Image.Image | None]] = [list(found) or [None] for found in images]
        texts = [q.text for q, slot in zip(queries, slots, strict=True) for _ in slot]
        flat = [image for slot in slots for image in slot]
        vectors = self.encode_joint(texts, flat, "query")
        out, start = [], 0
        for found in images:
            count = max(len(found), 1)
            out.append(l2_normalise(vectors[start : start + count].mean(axis=0)))
            start += count
        return np.stack(out)
