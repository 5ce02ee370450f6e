"""The ``mteb:`` reranker: each image reaches MTEB's cross-encoder as its file decodes.

The expected scores come from MTEB's random cross-encoder called directly on the query
image's file bytes (decoded as MTEB's own MM-BRIGHT task decodes them), never from the
reranker.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fixture_dataset import build_fixture, changed_by_a_second_jpeg

from mmbright_core.data.sources import open_source
from mmbright_core.data.tasks import build_task
from mmbright_core.rerank.base import Candidate, RerankQuery

mteb = pytest.importorskip("mteb")

from mteb_direct import predict_directly  # noqa: E402

from mmbright_core.rerank.mteb_reranker import MtebReranker  # noqa: E402

CROSS = "mteb/baseline-random-cross-encoder"


def test_a_jpeg_query_image_is_scored_with_its_own_decode(tmp_path: Path):
    source = open_source(str(build_fixture(tmp_path, photos=True)))
    data = build_task(source, 2, "biology")
    query = next(q for q in data.queries if q.query_id == "b2")
    image = source.query_image_bytes("biology", query.images[0].path)
    assert image is not None and changed_by_a_second_jpeg(image)
    asked = RerankQuery(query.query_id, query.text, (query.images[0].path,), 2, "biology")
    candidates = [Candidate(d.doc_id, d.text) for d in data.corpus]
    got = MtebReranker(CROSS).rerank(asked, candidates, source)
    texts = [d.text for d in data.corpus]
    direct = predict_directly(
        mteb.get_model(CROSS), [query.text] * len(texts), texts, [image] * len(texts)
    )
    assert got.scores is not None
    np.testing.assert_allclose(got.scores, direct, rtol=1e-6)
