"""MTEB's random encoder called directly: the reference the mteb backend is checked against.

Images are given as their files' bytes and reach the model as MTEB's own MM-BRIGHT task
hands them over: ``{"bytes": ..., "path": ...}`` under ``datasets.Image(mode="RGB")``
(embeddings-benchmark/mteb, ``mteb/tasks/retrieval/eng/mm_bright_retrieval.py``,
``_IMAGE_FEATURE`` and ``_load_multimodal_queries``), so the model sees each file's own
decode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from mmbright_core.data.tasks import build_task
from mmbright_core.ranking import top_k

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


def normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their norms, in float64 (equal passages then score exactly equal)."""
    wide = vectors.astype(np.float64)
    return wide / np.linalg.norm(wide, axis=1, keepdims=True)


#: A query's image files as a reference gives them to the model: (source, domain, query).
QueryFiles = Callable[[Any, str, Any], list[bytes]]


def expected_top10(
    model: Any, source: Any, task: int, domain: str, query_files: QueryFiles
) -> dict[str, list[str]]:
    """Each query's top 10 by ``model`` called directly: the reference of a run's.

    Queries are their text (Task 1), or their text with ``query_files``' images as one input;
    passages their stripped text (MTEB's corpus formatting); cosine similarity, each query's
    ``negative_ids`` removed, ties by doc id descending.
    """
    data = build_task(source, task, domain)
    passages = encode_directly(model, text=[d.text.strip() for d in data.corpus])
    if task == 1:
        queries = encode_directly(model, text=[q.text for q in data.queries])
    else:
        rows = []
        for query in data.queries:
            images = query_files(source, domain, query)
            columns = {"text": [query.text], **({"image": images} if images else {})}
            rows.append(encode_directly(model, **columns)[0])
        queries = np.stack(rows)
    scores = normalised(queries) @ normalised(passages).T
    ids = [d.doc_id for d in data.corpus]
    return {
        q.query_id: list(
            top_k(dict(zip(ids, row.tolist(), strict=True)), 10, data.excluded.get(q.query_id, ()))
        )
        for q, row in zip(data.queries, scores, strict=True)
    }
