"""MTEB's random encoder called directly: the reference the mteb backend is checked against.

Images are given as their files' bytes and reach the model as MTEB's own MM-BRIGHT task
hands them over: ``{"bytes": ..., "path": ...}`` under ``datasets.Image(mode="RGB")``
(embeddings-benchmark/mteb, ``mteb/tasks/retrieval/eng/mm_bright_retrieval.py``,
``_IMAGE_FEATURE`` and ``_load_multimodal_queries``), so the model sees each file's own
decode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

RANDOM = "mteb/baseline-random-encoder"


def _rows(columns: dict[str, list[Any]]) -> Any:
    from datasets import Dataset, Features, Image, Value

    stored = {
        k: [{"bytes": b, "path": None} for b in v] if k == "image" else v
        for k, v in columns.items()
    }
    features = Features(
        {k: Image(mode="RGB") if k == "image" else Value("string") for k in columns}
    )
    return Dataset.from_dict(stored, features=features)


def _collate(batch: list[dict[str, Any]]) -> dict[str, list[Any]]:
    return {key: [row[key] for row in batch] for key in batch[0]}


def encode_directly(model: Any, **columns: list[Any]) -> np.ndarray:
    """Return ``model.encode`` of one plain batch of ``columns`` (no MTEB formatting).

    Args:
        model: A loaded MTEB encoder (``mteb.get_model(RANDOM)``).
        **columns: ``text`` (strings) and/or ``image`` (image file bytes) lists of equal
            length.
    """
    import mteb
    from torch.utils.data import DataLoader

    rows = _rows(columns)
    loader = DataLoader(rows, batch_size=max(len(rows), 1), collate_fn=_collate)
    # The random encoder reads no metadata; any task's will do.
    metadata = mteb.get_task("BrightBiologyRetrieval").metadata
    return np.asarray(
        model.encode(loader, task_metadata=metadata, hf_split="test", hf_subset="default"),
        dtype=np.float32,
    )


def predict_directly(
    model: Any, queries: list[str], documents: list[str], query_images: list[bytes] | None = None
) -> np.ndarray:
    """Return a cross-encoder's ``predict`` of (query, document) pairs, one plain batch.

    ``query_images`` (image file bytes) gives each query an image column beside its text.
    """
    import mteb
    from torch.utils.data import DataLoader

    def loader(texts: list[str], images: list[bytes] | None = None) -> DataLoader:
        columns: dict[str, list[Any]] = {"id": [str(i) for i in range(len(texts))], "text": texts}
        rows = _rows(columns | ({"image": images} if images else {}))
        return DataLoader(rows, batch_size=max(len(rows), 1), collate_fn=_collate)

    metadata = mteb.get_task("BrightBiologyRetrieval").metadata
    found = model.predict(
        loader(queries, query_images),
        loader(documents),
        task_metadata=metadata,
        hf_split="test",
        hf_subset="default",
    )
    return np.asarray(found, dtype=np.float64)
