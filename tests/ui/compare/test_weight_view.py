"""Compare's "where the image's weight lies", via AppTest, on a run of the corner plugin.

The plugin's image vector depends only on the image's top-left quarter: a 7 x 7 grid puts
its weight in cells of which most lie on the edges, so the edge share must dominate, and
each query's shares must be those computed directly from :func:`explain_regions`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from apptest import choose_pair, fresh, open_tab
from corner_embedder import SPEC, demo_run

from mmbright_core.analysis.attribution import retriever_from_config
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval.backends.ocr_reader import OcrReader
from mmbright_core.retrieval.dual.regions import explain_regions, text_share
from mmbright_core.ui.common import state

pytestmark = pytest.mark.slow  # AppTest runs and a plugin run of the demo


@pytest.fixture(scope="module")
def corner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return demo_run(tmp_path_factory.mktemp("corner-run"))


def test_the_edge_share_of_each_query_is_that_of_its_grid_and_dominates(
    corner_run: Path, tmp_path: Path
):
    at = fresh(timeout=180)
    at.selectbox(key="task").set_value(2).run()
    at.text_input(key="runs_folder").input(str(corner_run)).run()
    at.button(key="add_folder").click().run()
    outputs = read_outputs(corner_run)
    choose_pair(at, "bm25", outputs.model)
    at.switch_page("compare/page.py").run()
    open_tab(at, state.COMPARE_SECTION_KEY, "Image effect by slice")
    assert not at.exception, at.exception
    at.button(key="cmp_weights_allow").click().run()  # the plugin's module, allowed
    assert not [f for f in at.dataframe if "edge_share" in f.value.columns]  # only when asked
    at.number_input(key="cmp_weights_n").set_value(4).run()
    at.button(key="cmp_weights_go").click().run()
    assert not at.exception, at.exception
    (table,) = [f.value for f in at.dataframe if "versus" in f.value.columns]
    assert len(table) == 4
    source = open_source("demo")
    data = source.task(2, "biology")
    retriever = retriever_from_config(outputs.run_config, import_modules=(SPEC,))
    centre = np.zeros((7, 7), dtype=bool)
    centre[2:5, 2:5] = True  # cell centres in the middle third both ways
    for row in table.itertuples(index=False):
        ranked = list(outputs.runs["biology"][row.query_id])
        assert row.doc_id == ranked[0]
        relevant = [d for d in ranked if data.qrels[row.query_id].get(d, 0) > 0]
        versus = row.versus if isinstance(row.versus, str) else None  # NaN in the table
        assert versus == (relevant[0] if relevant[0] != ranked[0] else None)
        direct = explain_regions(
            retriever, data, source, row.query_id, row.doc_id,
            versus=versus, cache_dir=tmp_path,
        )  # fmt: skip
        assert not direct.cached
        values = np.abs(np.array(direct.images[0].values))
        assert row.centre_share == pytest.approx(values[centre].sum() / values.sum(), rel=1e-9)
        assert row.edge_share == pytest.approx(values[~centre].sum() / values.sum(), rel=1e-9)
        assert row.edge_share > row.centre_share
        # The OCR engine (installed with the tests) finds the picture's text, read afresh.
        boxes = OcrReader(tmp_path / "ocr").text_boxes(direct.images[0].picture)
        text, area = text_share(direct.images, [boxes])
        assert (row.text_share, row.text_area) == pytest.approx((text, area), rel=1e-9)
        edges = "edges" if row.edge_share > 40 / 49 else "centre"
        assert row.where == ("text" if 0 < area < 1 and text > area else edges)
    (groups,) = [f.value for f in at.dataframe if "losses" in f.value.columns]
    assert groups["queries"].sum() == 4
    assert set(groups["group"]) == set(table["where"])
