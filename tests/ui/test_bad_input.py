"""The dashboard under bad input (AppTest): errors show on the page, the app keeps working.

Uploads go through the real file uploader widget: a malformed file, a file that expands past
the upload limit, and a run for another task each leave one error message and no run. Data
holding HTML, a script and Markdown is shown as text: query and passage text through
``st.text``, ids and run names escaped wherever Markdown renders them.
"""

from __future__ import annotations

import gzip
import html
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from apptest import error_messages, fresh, goto, no_html_from_data, use_folder
from hostile import A1, A3, HOSTILE_NAME, HOSTILE_PASSAGE, HOSTILE_QUERY, SCRIPT, hostile_copy
from streamlit import config
from streamlit.testing.v1 import AppTest

from mmbright_core.data.sources import open_source
from mmbright_core.data.view import TaskView
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner.task_run import run_task
from mmbright_core.ui.common.render import escape_md, escape_message

PAGES = ("home", "per_query", "compare", "inspector", "run")


@pytest.fixture(scope="module")
def hostile(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture dataset with script, HTML and Markdown in query a1 and passage A1."""
    folder = tmp_path_factory.mktemp("hostile")
    return hostile_copy(fixture_dir, folder, HOSTILE_QUERY, HOSTILE_PASSAGE)


@pytest.fixture
def small_uploads() -> Iterator[int]:
    """A 1 MB upload limit for the test (the server's own setting, as --server.maxUploadSize)."""
    before = config.get_option("server.maxUploadSize")
    config.set_option("server.maxUploadSize", 1)
    yield 1
    config.set_option("server.maxUploadSize", before)


def _open(dataset: Path, task: int = 2) -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(dataset)).run()
    at.selectbox(key="task").set_value(task).run()
    assert not at.exception
    return at


def _upload(at: AppTest, name: str, data: bytes) -> None:
    at.file_uploader(key="upload_files").set_value((name, data, "application/octet-stream"))
    at.run()
    at.button(key="add_uploads").click().run()


def _still_works(at: AppTest) -> None:
    for page in PAGES:
        goto(at, page)
        assert not at.exception, page
        no_html_from_data(at)


def _runs(at: AppTest) -> list[str]:
    return list(at.multiselect(key=f"selected_runs_{at.session_state['keep_task']}").value)


def test_malformed_upload_shows_an_error(fixture_dir: Path):
    at = _open(fixture_dir)
    _upload(at, "broken.trec", b"academia/a1 Q0 doc1 1\n")
    errors = error_messages(at)
    assert len(errors) == 1 and "broken.trec:1: wrong number of columns" in errors[0]
    assert _runs(at) == []
    _upload(at, "good.trec", f"academia/a1 Q0 {A1} 1 2.0 t\n".encode())
    assert not error_messages(at) and _runs(at) == ["good"]  # the app takes the next file
    _still_works(at)


def test_upload_expanding_past_the_limit(fixture_dir: Path, small_uploads: int):
    at = _open(fixture_dir)
    bomb = gzip.compress(f"academia/a1 Q0 {A1} 1 2.0 t\n".encode() + b" " * 2**21, mtime=0)
    assert len(bomb) < 2**20 // 10  # well under the limit as uploaded
    _upload(at, "bomb.trec.gz", bomb)
    errors = error_messages(at)
    assert len(errors) == 1 and "expands past the upload limit" in errors[0]
    assert "at most 1 MB" in errors[0] and _runs(at) == []
    _still_works(at)


def test_run_for_another_task_shows_an_error(fixture_dir: Path):
    at = _open(fixture_dir, task=2)
    pairs = f"academia/a1 Q0 {A1}|||__NO_IMAGE__ 1 2.0 t\n".encode()
    _upload(at, "pairs.trec", pairs)
    errors = error_messages(at)
    assert len(errors) == 1 and "do not fit task 2" in errors[0] and "task 4 run" in errors[0]
    assert _runs(at) == []
    _still_works(at)


def test_script_html_and_markdown_in_data_are_shown_as_text(hostile: Path):
    at = _open(hostile)
    run = f"academia/a1 Q0 {A1} 1 2.0 t\nacademia/a1 Q0 {A3} 2 1.0 t\n".encode()
    _upload(at, f"{HOSTILE_NAME}.trec", run)
    assert not error_messages(at)
    assert any(escape_message(HOSTILE_NAME) in s.value for s in at.success)  # escaped
    goto(at, "inspector")
    at.selectbox(key="insp_domain").set_value("academia").run()
    at.selectbox(key="insp_query").set_value("a1").run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert HOSTILE_QUERY in texts  # verbatim, through st.text
    # A passage is folded in one HTML element, every character of it escaped.
    bodies = [h.proto.body for h in at.get("html")]
    assert any(html.escape(HOSTILE_PASSAGE) in b for b in bodies)
    assert not any(SCRIPT in b or "<b>not bold" in b for b in bodies)
    headers = [h.value for h in at.subheader]
    assert escape_md(HOSTILE_NAME) in headers and HOSTILE_NAME not in headers
    markdown = " ".join(m.value for m in at.markdown)
    # A run name in Markdown is escaped ("\\<img"): no tag is left unescaped.
    assert not re.search(r"(?<!\\)<(img|script)", markdown)
    no_html_from_data(at)


LONG = "a" * 100_000  # longer than any path can be


def _one_short_error(errors: list[str], what: str) -> None:
    # One line, quoting at most 80 characters of the value: not the value whole.
    assert len(errors) == 1, errors
    said = errors[0].replace("\\", "")
    assert said.startswith(f"the {what} is longer than a path can be"), said
    assert f"found {'a' * 80!r}… (100,000 characters)" in said
    assert "a" * 81 not in said and "\n" not in said


def _run_page(fixture_dir: Path) -> AppTest:
    at = fresh()
    use_folder(at, fixture_dir)
    goto(at, "run")
    at.selectbox(key="run_retriever").set_value("random").run()
    return at


@pytest.mark.parametrize("typed", ["", "   "])
def test_an_empty_output_folder_is_refused_and_nothing_is_written(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, typed: str
):
    monkeypatch.chdir(tmp_path)  # the server's working folder, where an empty path leads
    at = _run_page(fixture_dir)
    at.text_input(key="run_out").input(typed).run()
    at.button(key="run_start").click().run()
    assert [e.replace("\\", "") for e in error_messages(at)] == [
        "the output folder is empty. Type the output folder's path"
    ]
    assert list(tmp_path.iterdir()) == [] and not at.success


def test_an_overlong_output_folder_or_model_is_refused_in_one_short_line(fixture_dir: Path):
    at = _run_page(fixture_dir)
    at.text_input(key="run_out").input(LONG).run()
    at.button(key="run_start").click().run()
    _one_short_error(error_messages(at), "output folder")
    at.selectbox(key="run_retriever").set_value("dense").run()
    at.text_input(key="run_model").input(LONG).run()
    at.button(key="run_start").click().run()
    _one_short_error(error_messages(at), "model")


def test_an_invalid_number_of_documents_stops_the_run(fixture_dir: Path, tmp_path: Path):
    at = _run_page(fixture_dir)
    at.text_input(key="run_out").input(str(tmp_path)).run()
    for typed in ("0", "1001", "ten", "5.5"):
        at.text_input(key="run_k").input(typed).run()
        (said,) = error_messages(at)
        assert said.startswith("documents kept per query must be a whole number; expected 1")
        assert at.button(key="run_start").disabled
    assert list(tmp_path.iterdir()) == []
    at.text_input(key="run_k").input("5").run()
    assert not error_messages(at) and not at.button(key="run_start").disabled


def test_an_empty_or_overlong_runs_folder_on_home_is_refused(fixture_dir: Path):
    at = fresh()
    use_folder(at, fixture_dir)
    before = list(at.multiselect(key="selected_runs_2").value)
    at.text_input(key="runs_folder").input("").run()
    at.button(key="add_folder").click().run()
    assert [e.replace("\\", "") for e in error_messages(at)] == [
        "the runs folder is empty. Type the runs folder's path"
    ]
    at.text_input(key="runs_folder").input(LONG).run()
    at.button(key="add_folder").click().run()
    _one_short_error(error_messages(at), "runs folder")
    assert list(at.multiselect(key="selected_runs_2").value) == before


def test_an_overlong_local_folder_in_the_sidebar_is_refused_in_one_short_line():
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(LONG).run()
    assert not at.exception
    _one_short_error([e.value for e in at.sidebar.error], "dataset folder")
    assert all(LONG[:300] not in c.value for c in at.caption)  # nor printed whole elsewhere
    _one_short_error([e.value for e in at.main.error], "dataset folder")


def _setting_at_the_top(config: dict) -> str:
    config["seed"] = config["options"].pop("seed")
    return "unknown field 'seed'"


def _options_as_pairs(config: dict) -> str:
    config["options"] = [list(pair) for pair in config["options"].items()]
    return "bad field 'options'; expected an object of the retriever's settings; found an array"


def _k_as_text(config: dict) -> str:
    config["k"] = "1000"
    return "bad field 'k'; expected an integer; found the string '1000'"


def _retriever_as_number(config: dict) -> str:
    config["retriever"] = 5
    return "bad field 'retriever'; expected a string; found the number 5"


def _without_a_task(config: dict) -> str:
    del config["task"]
    return "missing field 'task'"


@pytest.mark.parametrize(
    "edit",
    [_setting_at_the_top, _options_as_pairs, _k_as_text, _retriever_as_number, _without_a_task],
)
def test_a_run_folder_whose_config_is_no_run_configuration_is_one_message(
    fixture_dir: Path, tmp_path: Path, edit
):
    outcome = run_task(
        TaskView(open_source(str(fixture_dir)), 2), get_retriever("random"), tmp_path
    )
    folder = outcome.task_dir
    said = ""
    for path in folder.rglob("config.json"):  # the run's and each domain's, alike
        stored = json.loads(path.read_text())
        said = edit(stored["config"])
        path.write_text(json.dumps(stored))
    at = fresh()
    use_folder(at, fixture_dir)
    before = _runs(at)
    at.text_input(key="runs_folder").input(str(folder)).run()
    at.button(key="add_folder").click().run()
    assert not at.exception, at.exception
    (error,) = [e.replace("\\", "") for e in error_messages(at)]
    assert error.startswith(f"{folder / 'config.json'}: not a run configuration: {said}"), error
    assert "mmbright run" in error and "\n" not in error  # how to fix it, on one line
    assert _runs(at) == before
    _still_works(at)
