"""Indexed units and the documents each stands for: Task 4 pairs share their passage.

A passage is scored once (its text embedding, its BM25 score) and its score expanded to every
pair built on it; the exact and the approximate searches count a unit's documents when they
cut (:mod:`~mmbright_core.retrieval.search.index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Groups:
    """Indexed units (passages) and the documents (pairs) each one stands for.

    Attributes:
        units: One key per unit, in first-seen order.
        unit_of_doc: For each document, the index of its unit.
        offsets: ``members[offsets[u]:offsets[u + 1]]`` are unit ``u``'s documents.
        members: Document indices grouped by unit.
    """

    units: tuple[str, ...]
    unit_of_doc: IntArray
    offsets: IntArray
    members: IntArray

    @classmethod
    def from_keys(cls, keys: Sequence[str]) -> Groups:
        """Group documents by key (equal keys share one unit), keeping first-seen order."""
        position: dict[str, int] = {}
        unit_of_doc = np.fromiter(
            (position.setdefault(key, len(position)) for key in keys),
            dtype=np.int64,
            count=len(keys),
        )
        members = np.argsort(unit_of_doc, kind="stable")
        counts = np.bincount(unit_of_doc, minlength=len(position))
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        return cls(tuple(position), unit_of_doc, offsets, members.astype(np.int64))

    def expand(self, units: IntArray) -> tuple[IntArray, IntArray]:
        """Return the documents of ``units`` and, parallel to them, their unit's position."""
        starts, stops = self.offsets[units], self.offsets[units + 1]
        sizes = stops - starts
        position = np.repeat(np.arange(len(units)), sizes)
        within = np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return self.members[starts[position] + within], position
