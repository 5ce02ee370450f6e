"""Checks that Markdown text holds nothing active: no link, image, heading, list or HTML.

Streamlit renders Markdown with remark (CommonMark and GFM); markdown-it-py parses the same
CommonMark, with GFM's tables and strike-through. GFM's bare autolinks (``www.x``,
``http://x``, ``a@b.co``) are not in markdown-it-py's core: they are looked for as GFM
does, in the text that renders (escapes resolved).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_PARSER = MarkdownIt("commonmark").enable(["table", "strikethrough"])
ACTIVE = {
    "link_open",
    "image",
    "heading_open",
    "html_inline",
    "html_block",
    "bullet_list_open",
    "ordered_list_open",
    "blockquote_open",
    "code_block",
    "fence",
    "hr",
    "table_open",
    "s_open",
}
# What GFM links on its own: it searches the text once parsed (escapes resolved) for these
# (mdast-util-gfm-autolink-literal): a URL, "www." or an e-mail address.
_AUTOLINK = re.compile(r"(?i)(https?://|www(?=\.)|[-.\w+]+@[-\w]+(\.[-\w]+)+)", re.ASCII)
_DIRECTIVE = re.compile(r"(?<!\\):(?:[a-z]+\[|material/|[a-z_]+:)")
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def active_parts(markdown: str, directives: bool = True) -> list[str]:
    """The active parts of ``markdown``: token types, autolinks, directives, bidi controls.

    ``directives=False`` leaves out Streamlit's colours and badges (``:gray[...]``), which
    a page's own Markdown uses.
    """
    found = [t.type for t in _walk(_PARSER.parse(markdown)) if t.type in ACTIVE]
    found += [f"autolink {m.group(0)!r}" for m in _AUTOLINK.finditer(_resolved(markdown))]
    if directives:
        found += [f"directive {m.group(0)!r}" for m in _DIRECTIVE.finditer(markdown)]
    found += [f"control {m.group(0)!r}" for m in BIDI.finditer(markdown)]
    return found


def _walk(tokens: list) -> list:  # type: ignore[type-arg]
    out = []
    for token in tokens:
        out.append(token)
        out += _walk(token.children or [])
    return out


def shown(markdown: str) -> str:
    """What escaped Markdown reads as once rendered: escapes resolved, word joiners unseen."""
    return _resolved(markdown).replace("\u2060", "")


def _resolved(markdown: str) -> str:
    # The text GFM's autolink search sees: escapes and the blank entity resolved.
    return re.sub(r"\\(.)|&#32;", lambda m: m.group(1) or " ", markdown)
