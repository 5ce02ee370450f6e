"""Task 4 as the January 2026 release of the official harness builds and judges it.

Transcribed from mm-bright/MM-BRIGHT at 2d37a4d, reading the published parquet files directly
(as its ``DataLoader.load_queries`` does for ``examples_multimodal``):

- ``src/data.py``, ``DataLoader.load_corpus_images``: every ``document_images`` row that
  ``Image.open(...).convert("RGB")`` decodes, keyed by its path as stored; the retrievers'
  import sets ``ImageFile.LOAD_TRUNCATED_IMAGES = True`` first.
- ``src/data.py``, ``DataLoader.build_it_it_pairs`` with ``src/utils.py``,
  ``base_key_from_passage_id`` and ``base_key_from_image_rel``: the pair ids.
- ``src/eval_runner.py``, ``EvaluationRunner._evaluate_domain``: the ``text_pair`` qrels
  (every pair of a gold passage -> 1, and the gold id itself when it is a doc id), and the
  ``excluded_ids`` it hands the retriever (``negative_ids``), which
  ``_compute_topk_scores_chunked`` in ``src/retrievers/task4_pair.py`` masks by doc-id position.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pandas as pd
from PIL import Image, ImageFile


def _to_list(val):
    # DataLoader.load_queries, to_list
    if val is None:
        return []
    if hasattr(val, "tolist"):
        return val.tolist()
    if isinstance(val, list):
        return val
    return []


def base_key_from_passage_id(passage_id: str) -> str:
    m = re.search(r"/([0-9a-f]+)_\d+\.txt$", passage_id)
    return m.group(1) if m else passage_id


def base_key_from_image_rel(image_rel: str, domain: str) -> str:
    m = re.search(rf"{re.escape(domain)}_([0-9a-f]+)_\d+", image_rel)
    return m.group(1) if m else ""


def load_corpus_images(root: Path, domain: str) -> dict[str, Image.Image]:
    """``DataLoader.load_corpus_images``: path as stored -> decoded image, undecodable left out."""
    saved = ImageFile.LOAD_TRUNCATED_IMAGES
    ImageFile.LOAD_TRUNCATED_IMAGES = True
    try:
        corpus_images_map = {}
        images = pd.read_parquet(root / "document_images" / f"{domain}.parquet")
        for path, img_bytes in zip(images["path"], images["bytes"], strict=True):
            with contextlib.suppress(Exception):  # the release's bare except
                corpus_images_map[path] = Image.open(io.BytesIO(img_bytes)).convert("RGB")
    finally:
        ImageFile.LOAD_TRUNCATED_IMAGES = saved
    return corpus_images_map


def release_task4(
    root: Path, domain: str
) -> tuple[list[str], dict[str, dict[str, int]], dict[str, set[str]]]:
    """Return the release's pair ids, qrels and effective exclusions for one domain.

    The exclusions are the ``negative_ids`` that the retriever finds among the doc ids (the
    only ones it can mask). Image paths are as stored (the release does not normalise ``\\``).
    """
    corpus_images_map = load_corpus_images(root, domain)
    documents = pd.read_parquet(root / "documents" / f"{domain}.parquet")
    passage_ids = list(documents["id"])

    base_to_imgs: dict[str, list[str]] = {}
    for img_path in corpus_images_map:
        bk = base_key_from_image_rel(img_path, domain)
        if bk:
            base_to_imgs.setdefault(bk, []).append(img_path)
    doc_ids = []
    for pid in passage_ids:
        doc_ids.append(f"{pid}|||__NO_IMAGE__")
        bk = base_key_from_passage_id(pid)
        for img_path in base_to_imgs.get(bk, []):
            if img_path in corpus_images_map:
                doc_ids.append(f"{pid}|||{img_path}")

    df = pd.read_parquet(root / "examples_multimodal" / f"{domain}.parquet")
    gold_ids_map = {row["id"]: _to_list(row.get("gold_ids")) for _, row in df.iterrows()}
    excluded_ids = {row["id"]: _to_list(row.get("negative_ids")) for _, row in df.iterrows()}

    base_to_doc_ids: dict[str, list[str]] = {}
    for did in doc_ids:
        did_str = str(did)
        base_id = did_str.split("|||")[0] if "|||" in did_str else did_str
        base_to_doc_ids.setdefault(base_id, []).append(did_str)
    qrels: dict[str, dict[str, int]] = {}
    for qid in df["id"].tolist():
        qrels[str(qid)] = {}
        for gid in gold_ids_map.get(qid, []):
            for did in base_to_doc_ids.get(str(gid), []):
                qrels[str(qid)][did] = 1
            if str(gid) in [str(d) for d in doc_ids]:
                qrels[str(qid)][str(gid)] = 1
    doc_pos = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    masked = {
        str(qid): {d for d in excluded_ids.get(qid, []) if doc_pos.get(d) is not None}
        for qid in df["id"].tolist()
    }
    return doc_ids, qrels, masked
