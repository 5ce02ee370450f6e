"""The random-ranking floor (MTEB reports 0 / 0 / 3.23 for tasks 1-3).

The figures are in docs/protocol.md, Published numbers.

Each query's scores are uniform draws from a generator seeded by the run's seed and the
query id, so the ranking is reproducible and independent of query order.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.data.images import ImageSource
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.base import check_k, check_task
from mmbright_core.retrieval.search.index import doc_positions, excluded_indices, top_k_array
from mmbright_core.types import TaskData

if TYPE_CHECKING:
    from mmbright_core.retrieval.base import RebuildContext, RunConfig


class RandomRetriever:
    """Uniform random scores (every task).

    Args:
        seed: The run's seed.
    """

    name = "random"
    tasks = BACKENDS["random"].tasks

    def __init__(self, seed: int = 0) -> None:
        self.seed = int(seed)

    def label(self) -> str:
        """Return ``random``."""
        return "random"

    def settings(self) -> dict[str, Any]:
        """Return the seed."""
        return {"seed": self.seed}

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank every query's corpus at random, exclusions before the cut.

        Args:
            data: The task's data for one domain.
            source: Unused.
            k: How many documents to keep per query.

        Returns:
            query_id -> doc_id -> score in [0, 1).
        """
        check_task(self, data.task)
        check_k(k)
        doc_ids = np.array([d.doc_id for d in data.corpus])
        query_ids = [q.query_id for q in data.queries]
        exclude = excluded_indices(query_ids, data.excluded, doc_positions(doc_ids.tolist()))
        out = {}
        for query_id, excluded in zip(query_ids, exclude, strict=True):
            digest = hashlib.sha256(f"{self.seed}:{query_id}".encode()).digest()
            rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
            out[query_id] = top_k_array(doc_ids, rng.random(len(doc_ids)), k, excluded)
        return out


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``random`` from its configuration."""
    return {"seed": options["seed"]}
