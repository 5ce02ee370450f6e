"""Hostile text in every place the dashboard shows it renders as text (AppTest).

Query text, a passage, image paths, a doc id, run and upload file names, a failure tag and a
note's author each hold Markdown links and images, headings after blank lines, HTML and bidi
controls. Every page is drawn with them; every element whose text Streamlit renders as
Markdown (bodies, alerts, captions, headers, labels, help texts, expander and tab titles,
column tooltips) is parsed: no link, image, heading, list, HTML or autolink comes out of it,
and the hostile text is there, as its literal characters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apptest import chart_traces, error_messages, fresh, goto, open_tab, stay, use_folder
from hostile import A1, A3, hostile_copy, replace_cell
from literal_check import BIDI, active_parts, shown
from streamlit.proto.Block_pb2 import Block as BlockProto
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Block, Node

from mmbright_core.ui.common import state

LINK = "[lnk](http://127.0.0.1:9/x) ![t](http://127.0.0.1:9/t.png)"
BIG = "\n\n# BIG\n\nwww.evil.example"
QUERY = f"{LINK}{BIG} <b>html</b> right\u202eleft"
PASSAGE = f"# Heading\n{LINK}\n<img src=x onerror=alert(1)>"
IMAGE = f"academia/academia_a1b2c3d4_0000/{LINK}.png"  # decodes: shown with its caption
MISSING = f"academia/academia_0badf00d_0000/{LINK}# x.png"  # missing: named in a warning
DOC = f"academia/{LINK.replace(' ', '')}.txt"  # ranked by the runs, in no corpus
# Run names come from the uploads' file names (no "/" in a file name).
RUN_A, RUN_B = "A [lnk](mailto:x@evil.example) ![t](t.png)", "B\u202e [w](www.evil.example) <b>b"
TAG = f"tag {LINK}"
AUTHOR = f"x{BIG}"
AQ1 = "academia/academia_a1b2c3d4_0000/image_1.png"
AQ_MISSING = "academia/academia_0badf00d_0000/image_2.png"
# Element types whose value Streamlit renders as Markdown.
MARKDOWN_VALUES = {"markdown", "caption", "title", "header", "subheader", "error", "warning",
                   "info", "success", "toast"}  # fmt: skip


def _rename_image(root: Path, old: str, new: str) -> None:
    """Rename a query image in the three files naming it (its list cells included)."""
    for config in ("examples", "examples_multimodal"):
        path = root / config / "academia.parquet"
        table = pq.read_table(path)
        lists = [[new if p == old else p for p in ps] for ps in table["image_paths"].to_pylist()]
        index = table.schema.get_field_index("image_paths")
        column = pa.array(lists, table.schema.field("image_paths").type)
        pq.write_table(table.set_column(index, "image_paths", column), path)
    replace_cell(root / "examples_images" / "academia.parquet", "path", old, "path", new)


@pytest.fixture(scope="module")
def hostile(fixture_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = hostile_copy(fixture_dir, tmp_path_factory.mktemp("hostile"), QUERY, PASSAGE)
    _rename_image(root, AQ1, IMAGE)
    _rename_image(root, AQ_MISSING, MISSING)
    return root


def _walk(node: Node) -> Iterator[Node]:
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _walk(child)


def _markdown_texts(at: AppTest) -> list[str]:
    """Every text on the page that Streamlit renders as Markdown."""
    texts: list[str] = []
    for node in _walk(at._tree):
        if isinstance(node, Block):
            proto = getattr(node, "proto", None)
            for kind in ("expandable", "tab", "popover", "dialog"):
                if isinstance(proto, BlockProto) and proto.HasField(kind):
                    part = getattr(proto, kind)
                    texts.append(getattr(part, "label", "") or getattr(part, "title", ""))
            continue
        if node.type in MARKDOWN_VALUES:
            texts.append(str(node.value))
        for name in ("label", "help"):
            value = getattr(node.proto, name, None) if hasattr(node, "proto") else None
            if isinstance(value, str) and value:
                texts.append(value)
        if node.type == "dataframe":
            columns = json.loads(node.proto.columns or "{}")
            texts += [c["help"] for c in columns.values() if isinstance(c, dict) and "help" in c]
    return texts


def _plain_texts(at: AppTest) -> list[str]:
    """Every text on the page shown as it is: text elements, HTML, the options of widgets."""
    texts: list[str] = []
    for node in _walk(at._tree):
        if node.type == "text":
            texts.append(str(node.value))
        elif node.type == "html":
            texts.append(node.proto.body)
        texts += list(getattr(getattr(node, "proto", None), "options", []) or [])
    return [t for t in texts if isinstance(t, str)]


def _check(at: AppTest, page: str) -> str:
    """Assert nothing on the page is active Markdown or a raw bidi control; return its text."""
    assert not at.exception, (page, at.exception)
    texts = _markdown_texts(at)
    for text in texts:
        assert not active_parts(text, directives=False), (page, text)
    for text in _plain_texts(at):  # shown as is: the controls must be written out
        assert not BIDI.search(text), (page, text)
    return "\n".join(shown(t) for t in [*texts, *_plain_texts(at)])


def _every_tab(at: AppTest, page: str, key: str, labels: tuple[str, ...]) -> str:
    """Open each tab of the page in turn (only the open one is drawn) and check it."""
    said = [_check(open_tab(at, key, label), f"{page}, tab {label}") for label in labels]
    return "\n".join(said)


def _upload(at: AppTest, name: str, lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    at.file_uploader(key="upload_files").set_value((name, data, "text/plain")).run()
    at.button(key="add_uploads").click().run()
    for button in at.button:  # it matches a little of the task: added when asked
        if str(button.key).startswith("upload_add_"):
            button.click().run()
            break


def test_hostile_text_is_literal_on_every_page(hostile: Path):
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(str(hostile)).run()
    at.selectbox(key="task").set_value(2).run()
    ranked = [f"academia/a1 Q0 {doc} {n} {9 - n}.0 t" for n, doc in enumerate((A1, DOC, A3), 1)]
    _upload(at, f"{RUN_A}.trec", ranked)
    _upload(at, f"{RUN_B}.trec", [*reversed(ranked), "academia/a4 Q0 " + A3 + " 1 1.0 t"])
    _upload(at, f"broken {LINK}\n# x.trec", ["academia/a1 Q0 doc 1"])
    said = _check(at, "home")
    assert at.multiselect(key="selected_runs_2").value == [RUN_A, RUN_B]
    assert any("wrong number of columns" in e for e in error_messages(at))
    assert f"broken {LINK}" in said  # the upload's file name, literal

    at.session_state["keep_run_a"], at.session_state["keep_run_b"] = RUN_A, RUN_B
    for page in ("per_query", "compare", "run"):
        goto(at, page)
        said = _check(at, page)
        if page == "compare":
            said += _every_tab(at, page, state.COMPARE_SECTION_KEY, state.COMPARE_SECTIONS)
        if page != "run":
            assert RUN_A in said and "B\\u202e [w](www.evil.example)" in said, page

    goto(at, "inspector")
    at.selectbox(key="insp_domain").set_value("academia").run()
    at.selectbox(key="insp_query").set_value("a1").run()
    at.multiselect(key="insp_runs").set_value([RUN_A, RUN_B]).run()
    stay(at, "inspector")
    at.text_input(key="insp_new_tag").input(TAG)
    at.button(key="insp_add_tag").click().run()
    at.text_input(key="notes_author").input(AUTHOR).run()
    at.multiselect(key="insp_tags").select(TAG)
    at.button(key="insp_save").click().run()
    said = _check(at, "inspector a1")
    said += _every_tab(at, "inspector a1", state.INSPECT_SECTION_KEY, state.INSPECT_SECTIONS)
    assert f"{DOC} is not in the corpus" in said  # the doc id, literal
    assert "x↵↵# BIG↵↵www.evil.example" in said  # the author, on one line
    assert "B\\u202e" in said and not BIDI.search(said)  # the control written out
    assert any("right\\u202eleft" in t.value for t in at.text)  # the query, written out
    at.selectbox(key="insp_query").set_value("a4").run()
    said = _check(at, "inspector a4")
    assert f"{LINK}# x.png" in said  # the missing image's path, in its warning


def test_the_home_heatmap_shows_a_run_names_controls_written_out(hostile: Path):
    at = fresh()
    use_folder(at, hostile)
    _upload(at, f"{RUN_B}.trec", [f"academia/a1 Q0 {A1} 1 1.0 t"])
    (heat,) = chart_traces(at, "leaderboard_heatmap")
    assert heat["y"] == ["T2 · B\\u202e [w](www.evil.example) &lt;b&gt;b · partial 1/2"]
    assert not any(BIDI.search(label) for label in heat["y"])
