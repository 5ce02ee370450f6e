"""One helper makes text literal in Markdown, and every Streamlit call of the UI uses it.

``literal`` is checked against a Markdown parser (what each hostile string would render,
before and after); the code of ``mmbright_core/ui`` is walked for every Streamlit call whose
text renders as Markdown (bodies, labels, help texts, captions, tab names, progress texts):
each such text is a literal string, a number, or goes through ``literal``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

import pytest
from literal_check import active_parts, shown
from locations import ROOT

from mmbright_core.ui.common.literal import LINE_MARK, literal, visible

HOSTILE = [
    "x\n\n# BIG\n\nwww.evil.example",
    "biology/[lnk](http://127.0.0.1:9/x) ![t](http://127.0.0.1:9/t.png).png",
    "<img src=x onerror=alert(1)> <script>alert(2)</script> &lt;b&gt; &#x202e;",
    "# heading",
    "Heading\n===",
    "- item\n1. item\n> quote\n---",
    "    indented code",
    "```\nfenced\n```",
    "a | b\n--|--\n1 | 2",
    "**bold** _em_ ~~struck~~ `code` $x^2$",
    ":red[red] :material/home: :smile: mail@evil.example https://evil.example",
    "right\u202eto left\u2066isolate\u2069 \x1b[31m nul\x00",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_renders_as_itself(text: str):
    assert active_parts(text)  # each would do something as Markdown
    made = literal(text)
    assert active_parts(made) == []
    expected = visible(text).replace("\r\n", "\n").replace("\t", " ").replace("\n", LINE_MARK)
    assert shown(made) == expected  # the same characters, read as text


def test_plain_text_and_messages_stay_readable():
    message = "broken.trec:1: wrong number of columns; expected 6 (a, b); found 5."
    assert literal(message) == message  # sentence punctuation is no Markdown
    assert literal("a.py:12") == "a.py:12" and literal(3.5) == "3.5"
    assert literal("nDCG@10 of mteb/m@v1") == "nDCG@10 of mteb/m@v1"  # no e-mail address
    assert visible("tag\u202e") == "tag\\u202e" and visible("esc\x1b") == "esc\\x1b"
    assert visible("two\nlines\tand a tab") == "two\nlines\tand a tab"


# Streamlit calls whose first argument renders as Markdown (the body, or the label).
MARKDOWN_BODY = {
    "markdown", "caption", "write", "title", "header", "subheader", "error", "warning",
    "info", "success", "toast", "expander", "popover", "button", "download_button",
    "form_submit_button", "link_button", "checkbox", "toggle", "radio", "selectbox",
    "multiselect", "select_slider", "slider", "text_input", "text_area", "number_input",
    "date_input", "time_input", "color_picker", "file_uploader", "metric", "spinner",
    "status", "dialog", "tabs", "pills", "segmented_control",
}  # fmt: skip
COLUMNS = {"Column", "TextColumn", "NumberColumn", "CheckboxColumn", "ProgressColumn"}
# Keywords whose text renders as Markdown (a tooltip, an image caption, a progress text).
MARKDOWN_KEYWORDS = {"label", "help", "caption", "captions", "text", "title"}
ESCAPERS = {"literal", "escape_md", "escape_message"}
NUMBERS = {"len", "sum", "int", "float", "round", "min", "max", "abs"}
# Functions returning Markdown whose data parts are literal, or text of the package's own.
SAFE_MARKDOWN = {
    "judgment_badge",  # fixed words and colours
    "score_text",  # a number
    "points",  # a number
    "summary",  # presets.summary: the package's model catalogue
    "label",  # presets.label: the catalogue (shown by a selectbox, plain text)
    "order_caption",  # inspect.order_caption: returned through literal by its caller
    "cautions",  # presets.cautions: the catalogue
}
# Names bound to text of the package's own (or numbers), by file: checked by reading.
TRUSTED_NAMES = {
    "run/page.py": {"task", "caution", "label", "help_text"},  # FIELD_LABELS, presets.cautions
    "home/page.py": {"task", "t"},
    "run/running.py": {"where"},  # literal(step.domain) and numbers, the line above
    "inspector/explain_view.py": {"line", "ranks", "what", "head", "badge", "shown"},
    "common/render.py": {"label", "help", "badge"},
    "common/widgets.py": {"label", "help"},  # pick_run: the caller's label and tooltip
    "per_query/page.py": {"a_name", "b_name"},  # literal(run) a few lines up
}


def _calls(tree: ast.AST) -> Iterator[tuple[ast.Call, str]]:
    """Each call with the Streamlit function it calls, also when chosen at run time.

    ``st.error(x)``; ``{"warning": st.warning}.get(kind, st.error)(x)`` and ``show(x)``
    after ``show = st.error if ... else st.success`` count as calls of the first one named.
    """
    aliases = {
        target.id: name
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and (name := _streamlit_function(node.value))
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute):
            yield node, node.func.attr
        elif isinstance(node.func, ast.Name) and node.func.id in aliases:
            yield node, aliases[node.func.id]
        elif name := _streamlit_function(node.func):
            yield node, name


def _st_function(node: ast.AST) -> str | None:
    """The name of ``st.<function>`` when ``node`` is one that renders Markdown, else None."""
    if not isinstance(node, ast.Attribute) or node.attr not in MARKDOWN_BODY:
        return None
    is_st = isinstance(node.value, ast.Name) and node.value.id == "st"
    return node.attr if is_st else None


def _streamlit_function(node: ast.expr) -> str | None:
    # A Markdown-rendering function of st named, not called, in the expression: st.dialog(...)
    # returns a decorator, and st.error(...) nothing to call.
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    for part in ast.walk(node):
        if id(part) not in called and (name := _st_function(part)):
            return name
    return None


def _text_args(call: ast.Call, name: str) -> Iterator[ast.expr]:
    if (name in MARKDOWN_BODY or name in COLUMNS) and call.args:  # a body, a label, a header
        yield call.args[0]
    for keyword in call.keywords:
        markdown_keyword = keyword.arg in MARKDOWN_KEYWORDS
        if markdown_keyword and (name in MARKDOWN_BODY or name in COLUMNS or name in
                                 {"image", "progress"}):  # fmt: skip
            yield keyword.value


def _safe(node: ast.expr, trusted: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.JoinedStr):
        return all(_safe_part(v, trusted) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _safe(node.left, trusted) and _safe(node.right, trusted)
    if isinstance(node, ast.IfExp):
        return _safe(node.body, trusted) and _safe(node.orelse, trusted)
    if isinstance(node, ast.List | ast.Tuple):
        return all(_safe(e, trusted) for e in node.elts)
    if isinstance(node, ast.Name):
        return node.id.isupper() or node.id in trusted
    if isinstance(node, ast.Attribute):  # state.COMPARE_SECTIONS
        return node.attr.isupper()
    if isinstance(node, ast.Subscript):  # TASK_LABELS[task]
        return _safe(node.value, trusted)
    if isinstance(node, ast.Call):
        return _safe_call(node, trusted)
    if isinstance(node, ast.GeneratorExp | ast.ListComp):
        return _safe(node.elt, trusted)
    return False


def _safe_part(part: ast.expr, trusted: set[str]) -> bool:
    if isinstance(part, ast.FormattedValue):
        numeric = part.format_spec is not None  # {x:.4f}, {n:,}
        return numeric or _safe(part.value, trusted)
    return True


def _safe_call(node: ast.Call, trusted: set[str]) -> bool:
    func = node.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
    if name in ESCAPERS | NUMBERS | SAFE_MARKDOWN:
        return True
    if name == "join" and isinstance(func, ast.Attribute):  # ", ".join(parts)
        return all(_safe(a, trusted) for a in node.args)
    if name == "get":  # state.current_task() and the like are not text
        return False
    return name in {"current_task", "current_protocol"}  # an int, a fixed choice


def test_every_markdown_text_of_the_ui_is_literal():
    ui = ROOT / "mmbright_core" / "ui"
    unsafe = []
    for path in sorted(ui.rglob("*.py")):
        tree = ast.parse(path.read_text())
        trusted = TRUSTED_NAMES.get(path.relative_to(ui).as_posix(), set())
        for call, name in _calls(tree):
            for arg in _text_args(call, name):
                if not _safe(arg, trusted):
                    unsafe.append(f"{path.relative_to(ui)}:{arg.lineno}: {ast.unparse(arg)}")
    assert not unsafe, "Markdown text not made literal:\n" + "\n".join(unsafe)
