"""The inspector explains why an image hurt: AppTest behaviour on the demo and the fixture.

The demo ships ``bm25`` and ``ocr-bm25`` runs of tasks 2 and 4 in the official outputs
layout, with their ``config.json``: the inspector rebuilds their retrievers and explains each
hit. The numbers shown are checked against the stored scores and the core's own results.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest import choose_pair, fresh
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block, Node

import mmbright_core.data
from mmbright_core.analysis.table import source_results_table
from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.errors import NotesError
from mmbright_core.io.official import read_outputs
from mmbright_core.notes import NotesStore
from mmbright_core.ui.common import state
from mmbright_core.ui.common.state import InspectTarget

SHIPPED = Path(mmbright_core.data.__file__).parent / "demo" / "runs"
A, B = "bm25", "ocr-bm25"

pytestmark = pytest.mark.slow  # OCR of the demo's query images, BM25 indexes, AppTest runs


def _inspect(at: AppTest, task: int, target: InspectTarget | None = None) -> AppTest:
    at.selectbox(key="task").set_value(task).run()
    choose_pair(at, A, B)
    if target is not None:
        at.session_state["inspect_query"] = target
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    return at


def _walk(node: Node) -> Iterator[Node]:
    yield node
    if isinstance(node, Block):
        for child in node.children.values():
            yield from _walk(child)


def _blocks(at: AppTest, prefix: str) -> dict[str, Block]:
    """Keyed containers whose key starts with ``prefix``, by key."""
    found = {}
    for node in _walk(at.main):
        ident = getattr(node.proto, "id", "") if isinstance(node, Block) else ""
        key = ident.split("-", 2)[-1] if ident.startswith("$$ID-") else ""
        if key.startswith(prefix):
            found[key] = node
    return found


def _html(node: Node) -> list[str]:
    return [n.proto.body for n in _walk(node) if getattr(n, "type", "") == "html"]


def _markdown(node: Node) -> str:
    return " ".join(n.value for n in _walk(node) if getattr(n, "type", "") == "markdown")


_TERM = re.compile(r'<span data-term="([^"]*)" data-contribution="([^"]+)">(.*?)</span>')
_SCORE = re.compile(r"score (-?\d+\.\d{4})")


def _terms(bodies: list[str]) -> list[tuple[str, float, bool]]:
    """(term, contribution, from the image) of every term shown in a hit."""
    return [
        (html.unescape(term), float(value), "origin-image" in inner)
        for body in bodies
        for term, value, inner in _TERM.findall(body)
    ]


def _stored(name: str) -> dict:
    return read_outputs(SHIPPED / name).runs


def _hurt_queries() -> list[InspectTarget]:
    """The Task 2 demo queries on which ocr-bm25 scores a lower nDCG@10 than bm25."""
    runs = {A: _stored("run_it2t_bm25"), B: _stored("run_it2t_ocr-bm25")}
    table = source_results_table(TaskView(open_source("demo"), 2), runs, measures=("nDCG@10",))
    wide = table.pivot_table(index=["domain", "query_id"], columns="run", values="nDCG@10")
    worse = wide.loc[wide[B] < wide[A]]
    return [InspectTarget(str(d), str(q)) for d, q in worse.index]


@pytest.fixture(scope="module")
def hurt() -> list[InspectTarget]:
    found = _hurt_queries()
    assert found, "the demo has queries on which the OCR words hurt"
    return found


def test_every_hurt_query_shows_the_image_words_that_displaced_a_relevant_passage(hurt):
    stored = _stored("run_it2t_ocr-bm25")
    at = fresh(timeout=120)
    for target in hurt:
        _inspect(at, 2, target)
        pushing = _blocks(at, "insp_push_")
        assert pushing, f"{target}: no item shown as pushing a relevant one down"
        words = []
        for block in pushing.values():
            terms = _terms(_html(block))  # shown without a click: not inside an expander
            score = float(_SCORE.search(_markdown(block)).group(1))  # type: ignore[union-attr]
            assert sum(value for _, value, _ in terms) == pytest.approx(score, abs=1e-3)
            words += [term for term, _, image in terms if image]
            snippet = next(b for b in _html(block) if "line-height:1.6" in b)
            assert "origin-" in snippet  # the matched words are highlighted in the passage
        assert words, f"{target}: no word from the image matched the displacing passages"
        hits = _blocks(at, "hit_1_")
        ranked = list(stored[target.domain][target.query_id].items())
        for key, block in hits.items():
            rank = int(key.rsplit("_", 1)[1])
            terms = _terms(_html(block))
            assert sum(value for _, value, _ in terms) == pytest.approx(
                ranked[rank - 1][1], rel=1e-6
            )


def test_the_query_shows_the_words_read_from_each_image_marked_as_from_the_image(hurt):
    at = _inspect(fresh(timeout=120), 2, hurt[0])
    bodies = _html(at.main)
    under = [b for b in bodies if b.startswith("<small>Read by ocr-bm25")]
    assert under and all('class="origin-image"' in b for b in under)
    added = [b for b in bodies if "adds the words read from the images" in b]
    assert added and 'class="origin-image"' in added[0]
    assert any(b.label == "Full size" for b in at.button)  # each image opens full size
    assert not any(m.proto.allow_html for m in at.markdown)


def _shown_text(at: AppTest) -> str:
    """Every text the page shows: markdown, captions, HTML, alerts, table cells."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [str(e.value) for e in [*at.error, *at.warning, *at.info]] + _html(at.main)
    parts += [f.value.to_csv() for f in at.dataframe]
    return " ".join(parts)


def test_without_the_ocr_engine_the_most_hurt_query_is_explained_from_the_run(no_ocr_engine, hurt):
    # The dashboard's own install has no OCR engine: the words come from the run's ocr.json.
    at = _inspect(fresh(timeout=120), 2)  # opens on the most-hurt query of B against A
    target = at.session_state["inspect_query"]
    assert target in hurt
    shown = _shown_text(at)
    assert "not installed" not in shown and "No attribution" not in shown
    under = [b for b in _html(at.main) if b.startswith("<small>Read by ocr-bm25")]
    assert under and all('class="origin-image"' in b for b in under)
    stored = {A: _stored("run_it2t_bm25"), B: _stored("run_it2t_ocr-bm25")}
    for index, name in enumerate((A, B)):
        ranked = list(stored[name][target.domain][target.query_id].values())
        hits = _blocks(at, f"hit_{index}_")
        assert len(hits) == 10, name
        for key, block in hits.items():
            terms = _terms(_html(block))
            rank = int(key.rsplit("_", 1)[1])
            assert sum(v for _, v, _ in terms) == pytest.approx(ranked[rank - 1], rel=1e-6)
    image_terms = [t for b in _blocks(at, "hit_1_").values() for t in _terms(_html(b)) if t[2]]
    assert image_terms  # the words read from the image show in B's explanations


def test_attribution_table_adds_up_and_aligned_rows_say_the_move(hurt):
    at = _inspect(fresh(timeout=120), 2, hurt[0])
    assert not any("from image" in f.value.columns for f in at.dataframe)  # its tab is closed
    at.session_state[state.INSPECT_SECTION_KEY] = state.INSPECT_SECTIONS[1]
    at.run()
    table = next(f.value for f in at.dataframe if "from image" in f.value.columns)
    parts = table[["from text", "from image", "from both"]].sum(axis=1)
    assert (parts - table["score"]).abs().max() < 1e-3
    assert set(table["run"]) == {A, B} and len(table) == 20
    # Neither run ran on rewritten queries: no LLM column, no LLM highlight in the legend.
    assert "from LLM" not in table.columns
    legend = next(body for body in _html(at.main) if body.startswith("<small>Matched words"))
    assert "from the image" in legend and "added by the LLM" not in legend
    at.session_state[state.INSPECT_SECTION_KEY] = state.INSPECT_SECTIONS[2]
    at.run()
    aligned = next(f.value for f in at.dataframe if "move" in f.value.columns)
    assert "change" not in aligned.columns  # one column says the move
    assert "kept" not in set(aligned["move"]) and aligned["move"].notna().all()
    for row in aligned.itertuples(index=False):
        a, b = row[2], row[3]
        if not math.isnan(a) and not math.isnan(b) and a != b:
            assert row.move == (f"moved up {int(a - b)}" if b < a else f"moved down {int(b - a)}")
    slope = next(c for c in at.get("plotly_chart") if "insp_slope" in c.proto.id)
    assert "Judged-relevant" in slope.proto.spec


def test_the_aligned_tab_sets_side_by_side_the_pair_compare_names(hurt):
    """Compare's A and B in its order, whichever order the runs are listed in above."""
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    choose_pair(at, B, A)
    at.session_state["inspect_query"] = hurt[0]
    at.switch_page("inspector/page.py").run()
    at.multiselect(key="insp_runs").set_value([A, B]).run()  # listed the other way round
    at.session_state[state.INSPECT_SECTION_KEY] = state.INSPECT_SECTIONS[2]
    at.run()
    assert not at.exception, at.exception
    said = [m.value for m in at.markdown]
    assert f"**{B}** → **{A}**" in said and f"**{A}** → **{B}**" not in said


def test_a_run_without_its_retriever_shows_scores_and_says_why(tmp_path: Path):
    ranked = _stored("run_it2t_bm25")
    lines = [
        f"{qid} Q0 {doc} {rank} {score} uploaded"
        for queries in ranked.values()
        for qid, docs in queries.items()
        for rank, (doc, score) in enumerate(list(docs.items())[:20], 1)
    ]
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "uploaded.trec").write_text("\n".join(lines) + "\n")
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()
    choose_pair(at, "uploaded", B)
    at.switch_page("inspector/page.py").run()
    assert not at.exception
    first = _blocks(at, "hit_0_1")["hit_0_1"]
    assert _SCORE.search(_markdown(first))
    reasons = [c.value for c in _walk(first) if getattr(c, "type", "") == "caption"]
    assert any("attribution needs the retriever" in r for r in reasons)


def test_task4_pairs_are_one_item_per_passage_with_distinct_grades():
    at = _inspect(fresh(timeout=120), 4)
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "__NO_IMAGE__" not in shown and "|||" not in shown
    groups = _blocks(at, "hit_0_")
    passages = [_markdown(g).split("·", 1)[1].split()[0] for g in groups.values()]
    assert len(passages) == len(set(passages))  # a passage's pairs share one item
    grades = " ".join(_markdown(g) for g in groups.values())
    assert "green-badge[relevant · 2]" in grades or "blue-badge[relevant · 1]" in grades
    assert ":green-badge[relevant · 1]" not in grades


def test_task3_relevant_items_show_as_an_image_grid_without_any_run():
    at = _inspect(fresh(timeout=120), 3)
    assert not at.session_state["insp_runs"]
    relevant = next(e for e in at.expander if e.label.startswith("Relevant items"))
    images = [n for n in _walk(relevant) if getattr(n, "type", "") == "image"]
    assert images and any(getattr(n, "type", "") == "column" for n in _walk(relevant))


def _annotate(at: AppTest, tag: str, note: str) -> None:
    at.text_input(key="insp_new_tag").input(tag)
    at.button(key="insp_add_tag").click().run()
    at.text_input(key="notes_author").input("Ada").run()
    # The tag is stored as it is picked, the note with the button, in the same run here.
    at.multiselect(key="insp_tags").select(tag)
    at.text_area(key="insp_note").input(note)
    at.button(key="insp_save").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_tags_and_notes_are_read_back_by_another_session_and_after_a_restart(hurt):
    first = _inspect(fresh(timeout=120), 2, hurt[0])
    _annotate(first, "ocr noise", "The <OCR> words <b>match</b> a boot log.")
    again = _inspect(fresh(clear=False, timeout=120), 2, hurt[0])  # another browser session
    assert again.multiselect(key="insp_tags").value == ["ocr noise"]
    assert again.text_area(key="insp_note").value == "The <OCR> words <b>match</b> a boot log."
    restarted = _inspect(fresh(timeout=120), 2, hurt[0])  # every cache gone: a new server
    assert restarted.multiselect(key="insp_tags").value == ["ocr noise"]
    assert "Ada" in " ".join(c.value for c in restarted.caption)
    with NotesStore() as store:
        saved = store.get(("demo", 2, "paper", hurt[0].domain, hurt[0].query_id))
    assert saved.tags == ("ocr noise",) and saved.author == "Ada"


def test_a_failed_save_shows_the_message_and_keeps_the_text(hurt, monkeypatch):
    at = _inspect(fresh(timeout=120), 2, hurt[-1])

    def locked(self, key, text, tags, author=None, *, based_on):
        raise NotesError("the notes database is locked", unsaved=text)

    with monkeypatch.context() as patch:
        patch.setattr(NotesStore, "save", locked)
        at.text_area(key="insp_note").input("nothing typed is lost")
        at.button(key="insp_save").click().run()
        assert any("locked" in e.value for e in at.error)
        assert at.text_area(key="insp_note").value == "nothing typed is lost"
    at.button(key="insp_save").click().run()
    assert any("Saved" in s.value for s in at.success)


def test_a_fusion_run_shows_the_text_and_image_split_of_every_hit(tiny_clip, tmp_path: Path):
    from mmbright_core.retrieval import get_retriever
    from mmbright_core.retrieval.runner.task_run import run_task

    clip = get_retriever(
        "clip", model=tiny_clip, pretrained="none", image_policy="concat", cache_dir=str(tmp_path)
    )
    outcome = run_task(
        TaskView(open_source("demo"), 2), clip, tmp_path / "out", domains=["biology"]
    )
    stored = read_outputs(outcome.task_dir).runs["biology"]
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    at.text_input(key="runs_folder").input(str(outcome.task_dir)).run()
    at.button(key="add_folder").click().run()
    query = next(q for q, docs in stored.items() if docs)
    choose_pair(at, A, read_outputs(outcome.task_dir).model)
    at.session_state["inspect_query"] = InspectTarget("biology", query)
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    ranked = list(stored[query].items())
    hits = _blocks(at, "hit_1_")
    assert len(hits) == min(10, len(ranked))
    for key, block in hits.items():
        parts = dict(re.findall(r'data-part="(\w+)" data-value="([^"]+)"', "".join(_html(block))))
        assert set(parts) == {"text", "image"}
        total = float(parts["text"]) + float(parts["image"])
        assert total == pytest.approx(ranked[int(key.rsplit("_", 1)[1]) - 1][1], abs=1e-3)
    policy = " ".join(c.value for c in at.caption)
    assert "image policy concat" in policy


def test_saved_notes_are_back_in_their_boxes_after_another_page(hurt):
    at = _inspect(fresh(timeout=120), 2, hurt[-1])
    _annotate(at, "boot log", "Seen in the OCR words.")
    at.switch_page("home/page.py").run()
    at.switch_page("inspector/page.py").run()
    assert at.multiselect(key="insp_tags").value == ["boot log"]
    assert at.text_area(key="insp_note").value == "Seen in the OCR words."
    at.button(key="insp_save").click().run()  # a save stores what the boxes show
    with NotesStore() as store:
        saved = store.get(("demo", 2, "paper", hurt[-1].domain, hurt[-1].query_id))
    assert saved.tags == ("boot log",) and saved.note == "Seen in the OCR words."


@pytest.mark.parametrize("meanwhile", [None, "saved by another session meanwhile"])
def test_an_unsaved_note_is_kept_when_the_page_is_left_and_saved_on_return(hurt, meanwhile):
    target = hurt[0] if meanwhile is None else hurt[1]
    at = _inspect(fresh(timeout=120), 2, target)
    key = ("demo", 2, "paper", target.domain, target.query_id)
    with NotesStore() as store:
        before = store.get(key)
    draft = f"typed, not saved, then Home was opened ({before.note!r} was stored)"
    at.text_area(key="insp_note").input(draft).run()
    at.switch_page("home/page.py").run()
    if meanwhile is not None:
        with NotesStore() as store:
            before = store.set_note(key, meanwhile)
    at.switch_page("inspector/page.py").run()
    assert at.text_area(key="insp_note").value == draft
    assert any("unsaved note on this query was kept" in i.value for i in at.info)
    with NotesStore() as store:
        assert store.get(key) == before  # kept, not stored behind the user's back
    at.button(key="insp_save").click().run()
    if meanwhile is not None:  # the draft was typed over the older note: no silent overwrite
        assert any("Not saved" in w.value for w in at.warning)
        with NotesStore() as store:
            assert store.get(key).note == meanwhile
        at.button(key="insp_conflict_both").click().run()
    with NotesStore() as store:
        stored = store.get(key).note
    assert stored.endswith(draft) and stored.startswith(meanwhile or draft)


def test_a_tag_is_renamed_in_the_inspector_and_its_labels_follow(hurt):
    at = _inspect(fresh(timeout=120), 2, hurt[1])
    _annotate(at, "ocr words", "The words read from the image.")
    at.text_input(key="insp_new_tag").input("ocr words")
    at.button(key="insp_add_tag").click().run()
    assert any("Rename" in e.value for e in at.error), [e.value for e in at.error]
    at.selectbox(key="insp_rename_from").set_value("ocr words")
    at.text_input(key="insp_rename_to").input("ocr read words")
    at.button(key="insp_rename").click().run()
    assert not at.error, [e.value for e in at.error]
    assert at.multiselect(key="insp_tags").value == ["ocr read words"]
    with NotesStore() as store:
        saved = store.get(("demo", 2, "paper", hurt[1].domain, hurt[1].query_id))
    assert saved.tags == ("ocr read words",)


def _planted_plugin_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *options: str
) -> tuple[Path, Path]:
    """A toy plugin's run whose config.json names a module that leaves a mark when imported.

    ``options`` are its factory's (``NAME=VALUE``, each passed with ``--option``).
    """
    from mmbright_core.cli import main

    marker = tmp_path / "imported"
    (tmp_path / "planted_toy.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('imported')\n"
        "from toy_embedders import make\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / f"out{len(list(tmp_path.glob('out*')))}"
    args = ["run", "--source", "demo", "--task", "2", "--domain", "biology", "--out", str(out)]
    plugin = ["--retriever", "toy_embedders:make", "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, *plugin, *(part for o in options for part in ("--option", o))]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    for path in folder.rglob("config.json"):  # the run's, and each domain's
        path.write_text(path.read_text().replace('"toy_embedders:make"', '"planted_toy:make"'))
    return folder, marker


def _open_plugin_run(folder: Path, *more: Path) -> AppTest:
    """The inspector on ``folder``'s run beside bm25's (or, given ``more``, beside that run)."""
    at = fresh(timeout=120)
    at.selectbox(key="task").set_value(2).run()
    for each in (folder, *more):
        at.text_input(key="runs_folder").input(str(each)).run()
        at.button(key="add_folder").click().run()
    run = read_outputs(folder)
    choose_pair(at, *((run.model, f"{run.model} (2)") if more else (A, run.model)))
    query = next(q for q, docs in run.runs["biology"].items() if docs)
    at.session_state["inspect_query"] = InspectTarget("biology", query)
    at.switch_page("inspector/page.py").run()
    assert not at.exception, at.exception
    return at


def _hit_reasons(at: AppTest) -> list[str]:
    return [
        c.value
        for block in _blocks(at, "hit_1_").values()
        for c in _walk(block)
        if getattr(c, "type", "") == "caption"
    ]


def test_a_shared_server_never_imports_the_module_a_run_folder_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder, marker = _planted_plugin_run(tmp_path, monkeypatch)
    monkeypatch.setenv("MMBRIGHT_DATA_ROOT", str(tmp_path))
    at = _open_plugin_run(folder)
    assert not [b for b in at.button if b.key and b.key.startswith("insp_allow")]
    reasons = _hit_reasons(at)
    assert reasons and all("never imports a module a run folder names" in r for r in reasons)
    assert not marker.exists()


def test_a_local_dashboard_asks_before_importing_the_module_a_run_folder_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    folder, marker = _planted_plugin_run(tmp_path, monkeypatch)
    at = _open_plugin_run(folder)
    (warning,) = [w.value for w in at.warning if "planted" in w.value]
    assert "imports the module planted\\_toy" in warning
    assert all("allow it above" in r for r in _hit_reasons(at)) and not marker.exists()
    at.button(key="insp_allow_0").click().run()
    assert not at.exception, at.exception
    assert marker.read_text() == "imported"
    assert not [w for w in at.warning if "planted" in w.value]
    hits = _blocks(at, "hit_1_")
    assert hits and all(
        re.search(r'data-part="text"', "".join(_html(block))) for block in hits.values()
    )


def test_the_consent_names_the_call_and_its_arguments_and_asks_again_for_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from mmbright_core.ui.common.literal import literal

    plain, marker = _planted_plugin_run(tmp_path, monkeypatch)
    other, _ = _planted_plugin_run(tmp_path, monkeypatch, "fusion=raw-mean")
    at = _open_plugin_run(plain, other)
    calls = ["planted_toy:make()", "planted_toy:make(fusion='raw-mean')"]
    warnings = [w.value for w in at.warning if "planted" in w.value]
    assert len(warnings) == 2 and not marker.exists()
    assert all(any(f"calls {literal(c)}, which" in w for w in warnings) for c in calls)
    at.button(key="insp_allow_0").click().run()  # the first call only
    assert not at.exception, at.exception
    (left,) = [w.value for w in at.warning if "planted" in w.value]
    assert f"calls {literal(calls[1])}, which" in left


def test_the_hub_source_offline_without_its_files_is_one_line_on_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    at = fresh()
    at.radio(key="source_kind").set_value("Hugging Face").run()
    at.switch_page("inspector/page.py").run()
    assert not at.exception
    (error,) = [e.value for e in at.error]
    assert "\n" not in error
    assert "/academia.parquet is not in the local Hugging Face cache, and " in error
    assert "HF\\_HUB\\_OFFLINE=1 allows no download. Fetch the dataset once with" in error
