"""Task 4 as the authors' later code builds and judges it under ``paper`` and ``legacy``.

Transcribed from mm-bright/MM-BRIGHT (the commits after 2d37a4d that add the protocols):

- ``src/utils.py`` (95b1db1), ``base_key_from_passage_id(passage_id, legacy)`` and
  ``base_key_from_image_rel``;
- ``src/data.py`` (5da1dbe), ``DataLoader.build_it_it_pairs(..., legacy_keys)``: the pair ids,
  and ``base_to_passage_ids``;
- ``src/eval_runner.py`` (143ae35), ``EvaluationRunner._build_task4_qrels``: graded qrels, the
  judged pairs appended to the pair corpus, negative images expanded into excluded pairs, and
  the orphan / unavailable positive counts it prints;
- ``src/data.py``, ``DataLoader.load_queries`` for ``examples_multimodal`` (lists, and image
  paths with ``\\`` read as ``/``) and ``load_corpus_images``.

One departure, docs/protocol.md's reading of the data: corpus image paths are given to it with
``\\`` read as ``/``, as this package reads them (the code keys its image map by the stored
path but looks positive images up with ``/``, so a positive stored with ``\\`` would count as
unavailable there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from release_task4 import _to_list, base_key_from_image_rel, load_corpus_images


def base_key_from_passage_id(passage_id: str, legacy: bool = False) -> str:
    if legacy:
        m = re.search(r"/([0-9a-f]+)_\d+\.txt$", passage_id)
        return m.group(1) if m else passage_id
    m = re.search(r"/([0-9a-f]+)_", passage_id)
    return m.group(1) if m else passage_id


def _image_paths(val) -> list[str]:
    # DataLoader.load_queries, extract_image_paths
    paths = []
    for x in _to_list(val):
        if isinstance(x, dict) and "image_path" in x:
            paths.append(str(x["image_path"]).replace("\\", "/"))
        elif isinstance(x, str):
            paths.append(x.replace("\\", "/"))
    return paths


@dataclass
class OfficialTask4:
    """What ``_build_task4_qrels`` returns and prints, for one domain."""

    doc_ids: list[str]
    qrels: dict[str, dict[str, int]]
    excluded: dict[str, list[str]]
    added_pairs: int
    orphan_positives: int
    unavailable_positives: int


def official_task4(root: Path, domain: str, protocol: str) -> OfficialTask4:
    """Build the pair corpus and judgments of ``domain`` as the later official code does."""
    legacy_keys = protocol == "legacy"
    documents = pd.read_parquet(root / "documents" / f"{domain}.parquet")
    passage_ids, passage_texts = list(documents["id"]), list(documents["content"])
    corpus_images_map = {
        path.replace("\\", "/"): image for path, image in load_corpus_images(root, domain).items()
    }

    # DataLoader.build_it_it_pairs
    base_to_imgs: dict[str, list[str]] = {}
    for img_path in corpus_images_map:
        bk = base_key_from_image_rel(img_path, domain)
        if bk:
            base_to_imgs.setdefault(bk, []).append(img_path)
    doc_ids, base_to_passage_ids = [], {}
    for pid, _txt in zip(passage_ids, passage_texts, strict=True):
        doc_ids.append(f"{pid}|||__NO_IMAGE__")
        bk = base_key_from_passage_id(pid, legacy=legacy_keys)
        base_to_passage_ids.setdefault(bk, []).append(pid)
        for img_path in base_to_imgs.get(bk, []):
            if img_path in corpus_images_map:
                doc_ids.append(f"{pid}|||{img_path}")

    # DataLoader.load_queries("examples_multimodal")
    df = pd.read_parquet(root / "examples_multimodal" / f"{domain}.parquet")
    query_ids = df["id"].tolist()
    gold_ids_map = {row["id"]: _to_list(row.get("gold_ids")) for _, row in df.iterrows()}
    positive_images_map = {
        row["id"]: _image_paths(row.get("positive_images")) for _, row in df.iterrows()
    }
    negative_images_map = {
        row["id"]: _image_paths(row.get("negative_images")) for _, row in df.iterrows()
    }
    passage_id_to_text = dict(zip(passage_ids, passage_texts, strict=True))

    # EvaluationRunner._build_task4_qrels (documents and images of the added pairs left out)
    pair_id_set = set(str(d) for d in doc_ids)
    qrels, excluded_pairs = {}, {}
    added_pairs = orphan_positives = unavailable_positives = 0

    def _paths(mapping, qid):
        return [str(p).replace("\\", "/") for p in (mapping.get(qid) or [])]

    def _judge(gt, pair_id, rel, gold_pid) -> int:
        # The two blocks that grade a pair and append it when missing, as one; 1 if appended.
        gt[pair_id] = rel
        if pair_id not in pair_id_set and gold_pid in passage_id_to_text:
            doc_ids.append(pair_id)
            pair_id_set.add(pair_id)
            return 1
        return 0

    for qid in query_ids:
        gt = {}
        gold_ids = [str(g) for g in gold_ids_map.get(qid, [])]
        for gold_pid in gold_ids:
            added_pairs += _judge(gt, f"{gold_pid}|||__NO_IMAGE__", 1, gold_pid)
        positives = _paths(positive_images_map, qid)
        pos_set = set(positives)
        negatives = [n for n in _paths(negative_images_map, qid) if n not in pos_set]
        for img_rel in positives:
            bk = base_key_from_image_rel(img_rel, domain)
            if not bk:
                continue
            matched_gold = [
                g for g in gold_ids if base_key_from_passage_id(g, legacy=legacy_keys) == bk
            ]
            if not matched_gold:
                orphan_positives += 1
                continue
            if img_rel not in corpus_images_map:
                unavailable_positives += 1
                continue
            for gold_pid in matched_gold:
                added_pairs += _judge(gt, f"{gold_pid}|||{img_rel}", 2, gold_pid)
        qrels[str(qid)] = gt
        excl = []
        for neg_img_rel in negatives:
            bk = base_key_from_image_rel(neg_img_rel, domain)
            if not bk:
                continue
            for pid in base_to_passage_ids.get(bk, []):
                excl.append(f"{pid}|||{neg_img_rel}")
        excluded_pairs[str(qid)] = [x for x in excl if x not in gt]
    return OfficialTask4(
        doc_ids, qrels, excluded_pairs, added_pairs, orphan_positives, unavailable_positives
    )
