"""MTEB's random encoder called directly: the reference the mteb backend is checked against."""

from __future__ import annotations

from typing import Any

import numpy as np

RANDOM = "mteb/baseline-random-encoder"


def encode_directly(model: Any, **columns: list[Any]) -> np.ndarray:
    """Return ``model.encode`` of one plain batch of ``columns`` (no MTEB formatting).

    Args:
        model: A loaded MTEB encoder (``mteb.get_model(RANDOM)``).
        **columns: ``text`` and/or ``image`` lists of equal length.
    """
    import mteb
    from datasets import Dataset
    from torch.utils.data import DataLoader

    rows = Dataset.from_dict(columns)

    def collate(batch: list[dict[str, Any]]) -> dict[str, list[Any]]:
        return {key: [row[key] for row in batch] for key in batch[0]}

    loader = DataLoader(rows, batch_size=max(len(rows), 1), collate_fn=collate)
    # The random encoder reads no metadata; any task's will do.
    metadata = mteb.get_task("BrightBiologyRetrieval").metadata
    return np.asarray(
        model.encode(loader, task_metadata=metadata, hf_split="test", hf_subset="default"),
        dtype=np.float32,
    )


def predict_directly(
    model: Any, queries: list[str], documents: list[str], query_images: list[Any] | None = None
) -> np.ndarray:
    """Return a cross-encoder's ``predict`` of (query, document) pairs, one plain batch.

    ``query_images`` gives each query an image column beside its text.
    """
    import mteb
    from datasets import Dataset
    from torch.utils.data import DataLoader

    def collate(batch: list[dict[str, Any]]) -> dict[str, list[Any]]:
        return {key: [row[key] for row in batch] for key in batch[0]}

    def loader(texts: list[str], images: list[Any] | None = None) -> DataLoader:
        columns: dict[str, list[Any]] = {"id": [str(i) for i in range(len(texts))], "text": texts}
        rows = Dataset.from_dict(columns | ({"image": images} if images else {}))
        return DataLoader(rows, batch_size=max(len(rows), 1), collate_fn=collate)

    metadata = mteb.get_task("BrightBiologyRetrieval").metadata
    found = model.predict(
        loader(queries, query_images),
        loader(documents),
        task_metadata=metadata,
        hf_split="test",
        hf_subset="default",
    )
    return np.asarray(found, dtype=np.float64)
