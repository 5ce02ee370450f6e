"""The named rules that make one vector of a query's text and image (docs/protocol.md §3).

Each rule is written once and named; an :class:`~mmbright_core.retrieval.dual.embedder.Embedder`
names its rule, and every backend built on one fuses through it. The official retrievers
(``src/retrievers/task2_multimodal.py`` of the released harness) use four:

- ``raw-mean`` (``retrieval_clip``, ``retrieval_siglip``): L2norm((t + i) / 2) of the RAW
  text and image vectors, so each tower weighs by its own norm; a query without an image
  gets a white image (224x224 for CLIP, 384x384 for SigLIP: all white once resized);
- ``zero-image`` (``retrieval_jina_clip``): the same mean, with a zero image vector for a
  query without an image (so such a query is its normalised text);
- ``normalised-mean`` (``retrieval_nomic_vision``): L2norm((t/|t| + i/|i|) / 2), the two
  sides weighed 1:1; a query without an image is its normalised text;
- ``joint`` (``retrieval_bge_vl``, ``retrieval_gme``): the model encodes text and image
  together (:class:`~mmbright_core.retrieval.dual.embedder.JointEmbedder`);
- ``text``: text-only models; a query is its text (its images are not read).

The three linear rules make the fused query ``a * t + b * i`` for two scalars, so a score
``100 * q.d`` splits exactly into a text part and an image part (:meth:`Fusion.weights`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.search.index import l2_normalise

Vectors = npt.NDArray[np.float32]
#: What a query (or a Task 4 pair) without an image is fused with.
Missing = Literal["white", "zero", "joint"]


def _raw_mean(text: Vectors, image: Vectors) -> Vectors:
    return l2_normalise((np.asarray(text, np.float32) + np.asarray(image, np.float32)) / 2)


def _normalised_mean(text: Vectors, image: Vectors) -> Vectors:
    return l2_normalise((l2_normalise(text) + l2_normalise(image)) / 2)


def _raw_weights(text: np.ndarray, image: np.ndarray) -> tuple[float, float]:
    # L2norm((t + i) / 2) = (t + i) / |t + i|: the halving cancels.
    norm = float(np.linalg.norm(text.astype(np.float64) + image.astype(np.float64)))
    if norm == 0:
        return 0.0, 0.0
    return 1.0 / norm, (1.0 / norm if image.any() else 0.0)


def _normalised_weights(text: np.ndarray, image: np.ndarray) -> tuple[float, float]:
    t, i = text.astype(np.float64), image.astype(np.float64)
    t_norm, i_norm = float(np.linalg.norm(t)), float(np.linalg.norm(i))
    unit_t = t / t_norm if t_norm > 0 else t
    unit_i = i / i_norm if i_norm > 0 else i
    norm = float(np.linalg.norm(unit_t + unit_i))
    if norm == 0:
        return 0.0, 0.0
    return (1.0 / (t_norm * norm) if t_norm > 0 else 0.0), (
        1.0 / (i_norm * norm) if i_norm > 0 else 0.0
    )


@dataclass(frozen=True)
class Fusion:
    """One named fusion rule.

    Attributes:
        name: The rule's name (``raw-mean``...).
        missing: What stands in for a missing image: ``white`` (the white image), ``zero``
            (no image part: the text alone), ``joint`` (the model encodes the text alone).
        linear: Whether the fused vector is ``a * text + b * image`` (a text/image split
            of each score exists).
        images: Whether a query's images are read at all (``text``: never).
    """

    name: str
    missing: Missing
    linear: bool
    images: bool = True

    def fuse(self, text: npt.ArrayLike, image: npt.ArrayLike) -> Vectors:
        """Return the L2-normalised fusion of raw text and image vectors, row by row.

        Raises:
            InputError: The text and image vectors differ in length (a model, or a plugin,
                whose two towers do not share one space).
            ValueError: The rule is not linear (``joint``, ``text``): the embedder fuses.
        """
        texts, images = np.asarray(text, np.float32), np.asarray(image, np.float32)
        if self.linear and texts.shape[-1:] != images.shape[-1:]:
            raise InputError(
                f"fusion {self.name!r} adds each text vector to an image vector, and the "
                "model's text and image vectors differ in length",
                expected="text and image vectors of one length",
                found=f"text vectors of {texts.shape[-1]} numbers, image vectors of "
                f"{images.shape[-1]}",
                hint="encode_texts and encode_images must return vectors of one space, "
                "or the embedder fuses itself (fusion 'joint', docs/plugins.md).",
            )
        if self.name == "normalised-mean":
            return _normalised_mean(texts, images)
        if self.linear:
            return _raw_mean(texts, images)
        raise ValueError(f"fusion {self.name!r} is not computed from separate vectors")

    def weights(self, text: np.ndarray, image: np.ndarray) -> tuple[float, float]:
        """Return ``(a, b)`` with ``fuse(text, image) == a * text + b * image`` (float64).

        A zero ``image`` (no image part) gives ``b == 0``.
        """
        if self.name == "normalised-mean":
            return _normalised_weights(text, image)
        if self.linear:
            return _raw_weights(text, image)
        raise ValueError(f"fusion {self.name!r} has no text/image split")


FUSIONS: dict[str, Fusion] = {
    rule.name: rule
    for rule in (
        Fusion("raw-mean", "white", linear=True),
        Fusion("zero-image", "zero", linear=True),
        Fusion("normalised-mean", "zero", linear=True),
        Fusion("joint", "joint", linear=False),
        Fusion("text", "zero", linear=False, images=False),
    )
}


def get_fusion(name: str) -> Fusion:
    """Return the rule named ``name``.

    Raises:
        UnknownNameError: No rule has that name (the message lists the rules).
    """
    if name not in FUSIONS:
        raise UnknownNameError("fusion", name, tuple(FUSIONS))
    return FUSIONS[name]
