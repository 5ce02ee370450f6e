"""The inspector's "Where in the image": occlusion on request, via AppTest.

The runs are made by a plugin whose image vector sees only the top-left quarter of the image
(``corner_embedder``), the cheapest real model with an image encoder; the grid shown must be
:func:`explain_regions`' own for the same pair, of the query image (Task 2) or of the hit's
own image (Task 3, whose items are images).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from apptest import choose_pair, fresh
from corner_embedder import SPEC, demo_run
from streamlit.testing.v1 import AppTest

from mmbright_core.analysis.attribution import retriever_from_config
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.io.official import read_outputs
from mmbright_core.present.region_overlay import sentence
from mmbright_core.retrieval.dual.regions import explain_regions
from mmbright_core.task_table import TASK_TABLE
from mmbright_core.types import Task
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.state import InspectTarget
from mmbright_core.ui.inspector.regions_view import CANCELLED_KEY, SIDE_LABELS, sides

QUERY = "biology_1"  # its best relevant item ranks first in the plugin's run

pytestmark = pytest.mark.slow  # AppTest runs and a plugin run of the demo


@pytest.fixture(scope="module")
def corner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo Task 2 biology run of the corner plugin."""
    return demo_run(tmp_path_factory.mktemp("corner-run"))


@pytest.fixture(scope="module")
def corner_images_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo Task 3 (items are images) biology run of the corner plugin."""
    return demo_run(tmp_path_factory.mktemp("corner-images-run"), task=IMAGES)


#: A task whose items are images, read from the table.
IMAGES: Task = next(t for t, info in TASK_TABLE.items() if info.corpus == "images")


def _hurt(folder: Path, task: Task = 2) -> str:
    """The first query with an image whose run ranks a wrong hit above every relevant item."""
    data = open_source("demo").task(task, "biology")
    ranked = read_outputs(folder).runs["biology"]
    return next(
        q.query_id
        for q in data.queries
        if q.images
        and ranked.get(q.query_id)
        and data.qrels[q.query_id].get(next(iter(ranked[q.query_id])), 0) <= 0
        and any(g > 0 for g in data.qrels[q.query_id].values())
    )


def _open(folder: Path, query: str = QUERY, task: Task = 2) -> AppTest:
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(task).run()
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()
    model = read_outputs(folder).model
    choose_pair(at, "bm25" if task == 2 else model, model)  # the demo ships no Task 3 run
    at.session_state["inspect_query"] = InspectTarget("biology", query)
    at.switch_page("inspector/page.py").run()
    at.button(key="insp_allow_0").click().run()  # the plugin's module, allowed to import
    assert not at.exception, at.exception
    return at


def _grid(at: AppTest) -> np.ndarray:
    (table,) = _grids(at)
    return table.to_numpy()


def _grids(at: AppTest) -> list:
    return [f.value for f in at.dataframe if list(f.value.columns[:1]) == ["col 1"]]


def _says(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def test_the_button_shows_the_grid_and_sentence_of_explain_regions_for_the_chosen_pair(
    corner_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # A cache of its own: another test may have computed the same pair into the suite's.
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path / "app-cache"))
    query = _hurt(corner_run)
    at = _open(corner_run, query)
    assert at.selectbox(key="insp_regions_run").value == read_outputs(corner_run).model
    assert not _grids(at)  # computed only when asked
    assert not [r for r in at.radio if r.key == "insp_regions_side"]  # items without images
    data = open_source("demo").task(2, "biology")
    qrels = data.qrels[query]
    ranked = list(read_outputs(corner_run).runs["biology"][query])
    best = next(d for d in ranked if qrels.get(d, 0) > 0)
    wrong = next(d for d in ranked if qrels.get(d, 0) <= 0)
    assert ranked.index(wrong) < ranked.index(best)  # the default: a wrong hit above it
    assert at.selectbox(key="insp_regions_doc").value == wrong
    assert at.selectbox(key="insp_regions_versus").value == best
    at.button(key="insp_regions_go").click().run()
    assert not at.exception, at.exception
    config = read_outputs(corner_run).run_config
    retriever = retriever_from_config(config, import_modules=(SPEC,))
    direct = explain_regions(
        retriever, data, open_source("demo"), query, wrong, versus=best, cache_dir=tmp_path
    )
    assert not isinstance(direct, type(None)) and not direct.cached  # computed afresh here
    np.testing.assert_allclose(_grid(at), np.array(direct.images[0].values), rtol=1e-9)
    assert literal(sentence(direct)) in _says(at)
    assert "50 forward passes" in _says(at)
    # The heat lies where the model looks: the top-left quarter.
    values = np.abs(_grid(at))
    assert values[:4, :4].sum() > 0 and values[4:, :].sum() + values[:, 4:].sum() < 1e-9
    (chart,) = [c for c in at.get("plotly_chart") if "insp_regions_heat_0" in c.proto.id]
    (heat,) = [t for t in json.loads(chart.proto.spec)["data"] if t["type"] == "heatmap"]
    np.testing.assert_allclose(np.array(heat["z"]), np.array(direct.images[0].values))
    assert "%{z" in heat["hovertemplate"]  # each cell's value on hover

    reopened = _open(corner_run, query)  # every memory cache cleared: a new session, a new server
    reopened.button(key="insp_regions_go").click().run()
    assert "read from the cache" in _says(reopened)
    np.testing.assert_allclose(_grid(reopened), _grid(at), rtol=0)


def test_a_finished_grid_has_no_cancel_and_is_never_said_unstored(
    corner_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path / "app-cache"))
    at = _open(corner_run, _hurt(corner_run))
    at.button(key="insp_regions_go").click().run()
    assert _grids(at) and not [b for b in at.button if b.key == "insp_regions_cancel"]
    # A Cancel pressed as the work ended reaches the next run after the result was stored.
    at.session_state[CANCELLED_KEY] = True
    at.run()
    assert _grids(at) and not [i for i in at.info if "nothing was stored" in i.value]


def test_a_run_whose_retriever_reads_no_image_says_why_in_one_message():
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    choose_pair(at, "bm25", "ocr-bm25")
    at.session_state["inspect_query"] = InspectTarget("biology", QUERY)
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    reasons = [i.value for i in at.info if "No regions" in i.value]
    assert len(reasons) == 1 and "does not encode images" in reasons[0]
    assert not [b for b in at.button if b.key == "insp_regions_go"]


def test_a_run_that_cannot_be_rebuilt_says_why_in_one_message(corner_run: Path, tmp_path: Path):
    ranked = read_outputs(corner_run).runs["biology"]
    lines = [
        f"{qid} Q0 {doc} {rank} {score} uploaded"
        for qid, docs in ranked.items()
        for rank, (doc, score) in enumerate(list(docs.items())[:20], 1)
    ]
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "uploaded.trec").write_text("\n".join(lines) + "\n")  # no config.json beside it
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()
    choose_pair(at, "bm25", "uploaded")
    at.session_state["inspect_query"] = InspectTarget("biology", QUERY)
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="insp_regions_run").value == "uploaded"
    reasons = [i.value for i in at.info if "No regions" in i.value]
    assert len(reasons) == 1 and "attribution needs the retriever that made the run" in reasons[0]
    assert not [b for b in at.button if b.key == "insp_regions_go"]


def test_on_a_task_whose_items_are_images_the_hits_own_image_is_occluded_when_chosen(
    corner_images_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path / "app-cache"))
    query = _hurt(corner_images_run, IMAGES)
    at = _open(corner_images_run, query, IMAGES)
    side = at.radio(key="insp_regions_side")
    assert side.options == [SIDE_LABELS["query"], SIDE_LABELS["document"]]
    assert side.value == "query"  # the query image first, as on Task 2
    side.set_value("document").run()
    wrong = at.selectbox(key="insp_regions_doc").value
    best = at.selectbox(key="insp_regions_versus").value
    data = open_source("demo").task(IMAGES, "biology")
    assert data.qrels[query].get(wrong, 0) <= 0 < data.qrels[query][best]
    at.button(key="insp_regions_go").click().run()
    assert not at.exception, at.exception
    config = read_outputs(corner_images_run).run_config
    retriever = retriever_from_config(config, import_modules=(SPEC,))
    direct = explain_regions(
        retriever,
        data,
        open_source("demo"),
        query,
        wrong,
        versus=best,
        side="document",
        cache_dir=tmp_path,
    )
    assert not isinstance(direct, type(None)) and not direct.cached  # computed afresh here
    (item,) = [d for d in data.corpus if d.doc_id == wrong]
    assert item.image is not None and direct.images[0].image == item.image.path  # the hit's
    np.testing.assert_allclose(_grid(at), np.array(direct.images[0].values), rtol=1e-9)
    assert literal(sentence(direct)) in _says(at) and "of the hit's image" in _says(at)
    assert literal(item.image.path) in _says(at)  # the picture shown is the hit's own
    # The heat lies where the model looks: the top-left quarter of the hit's image.
    values = np.abs(_grid(at))
    assert values[:4, :4].sum() > 0 and values[4:, :].sum() + values[:, 4:].sum() < 1e-9
    (chart,) = [c for c in at.get("plotly_chart") if "insp_regions_heat_0" in c.proto.id]
    spec = json.loads(chart.proto.spec)
    (heat,) = [t for t in spec["data"] if t["type"] == "heatmap"]
    np.testing.assert_allclose(np.array(heat["z"]), np.array(direct.images[0].values))
    assert spec["layout"]["xaxis"]["range"] == [0, direct.images[0].width]  # the hit's size

    side.set_value("query").run()  # the other side is another result, not yet computed
    assert not _grids(at)


def test_a_query_without_an_image_offers_the_hits_own_image_where_items_have_images(
    corner_images_run: Path, monkeypatch: pytest.MonkeyPatch
):
    real = TaskView.queries

    def without_images(view: TaskView, domain: str) -> dict:
        return {qid: dataclasses.replace(q, images=()) for qid, q in real(view, domain).items()}

    monkeypatch.setattr(TaskView, "queries", without_images)  # as the inspector reads them
    at = _open(corner_images_run, _hurt(corner_images_run, IMAGES), IMAGES)
    assert at.radio(key="insp_regions_side").options == [SIDE_LABELS["document"]]
    assert "no image to occlude" not in _says(at)
    assert [b for b in at.button if b.key == "insp_regions_go"]


def test_the_sides_offered_follow_the_tasks_facts():
    for task, info in TASK_TABLE.items():
        data = open_source("demo").task(task, "biology")
        query = next(q for q in data.queries if q.images) if not info.text_only else None
        bare = dataclasses.replace(data.queries[0], images=())
        document = ["document"] if info.corpus_images else []
        assert sides(task, bare) == document
        if query is not None:
            assert sides(task, query) == ["query", *document]
