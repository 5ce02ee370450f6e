"""Task 4 under ``paper`` and ``legacy`` against the authors' later code, transcribed.

The official ``build_it_it_pairs`` and ``_build_task4_qrels`` (``official_task4.py``) and this
package build the pair corpus and judge it from the same files: the fixture dataset with one
gold passage of each domain taken out of ``documents`` (its text-only and image pairs stay
judged, and nothing can add them) and a positive image whose path holds no source key.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fixture_dataset import A3, B3, SCHEMAS, build_fixture
from official_task4 import official_task4

from mmbright_core.data.sources import open_source

#: A positive image of query a1 whose path has no ``academia_<key>_<n>`` folder.
KEYLESS = "academia/loose/image_1.png"


def _rewrite(path: Path, change) -> None:
    rows = pq.read_table(path).to_pylist()
    pq.write_table(pa.Table.from_pylist(change(rows), schema=SCHEMAS[path.parent.name]), path)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = build_fixture(tmp_path_factory.mktemp("task4-official"))
    for domain, missing in (("academia", A3), ("biology", B3)):
        path = root / "documents" / f"{domain}.parquet"
        _rewrite(path, lambda rows, gone=missing: [r for r in rows if r["id"] != gone])

    def keyless(rows: list[dict]) -> list[dict]:
        for row in rows:
            if row["id"] == "a1":
                row["positive_images"].append({"image_path": KEYLESS, "source_passage_id": None})
        return rows

    _rewrite(root / "examples_multimodal" / "academia.parquet", keyless)
    return root


@pytest.mark.parametrize("protocol", ["paper", "legacy"])
@pytest.mark.parametrize("domain", ["academia", "biology"])
def test_task4_matches_the_official_pairs_and_judgments(
    dataset: Path, domain: str, protocol: str
) -> None:
    official = official_task4(dataset, domain, protocol)
    data = open_source(str(dataset)).task(4, domain, protocol)
    assert [d.doc_id for d in data.corpus] == official.doc_ids
    assert data.qrels == official.qrels
    assert data.excluded == {q: frozenset(ids) for q, ids in official.excluded.items()}
    assert data.report.added_judged_pairs == official.added_pairs
    assert data.report.orphan_positives == official.orphan_positives
    assert data.report.unavailable_positives == official.unavailable_positives
    # The missing gold passage's pairs are judged, and absent from the corpus.
    missing = A3 if domain == "academia" else B3
    judged = {doc for judged in data.qrels.values() for doc in judged}
    assert f"{missing}|||__NO_IMAGE__" in judged
    assert not any(d.doc_id.startswith(f"{missing}|||") for d in data.corpus)
