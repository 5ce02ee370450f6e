"""Text from data and users shown literally wherever Streamlit renders Markdown.

Streamlit renders Markdown in far more places than ``st.markdown``: captions, titles and
headers, alerts and toasts, and the labels, help texts, expander titles, tab names and
progress texts of widgets. A dataset's image path, a run or file name, a note's author or
an error quoting any of them would turn there into a link, an image the viewer's browser
fetches, a heading, a list or HTML, and a bidi control would show the text in another
order than it has. :func:`literal` is the one helper that makes such text literal; every
such call of the dashboard goes through it (``tests/ui/common/test_literal.py`` walks the code).
Plain-text places (``st.text``, table cells, the options of a selectbox, input values)
show text as it is and take :func:`visible` alone, where controls matter.
"""

from __future__ import annotations

import re

from mmbright_core.errors import printable

# Line breaks of every kind: a new line in Markdown can start a heading, a list, a quote,
# a code block or a table; shown as one visible mark instead.
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x85\u2028\u2029]")
LINE_MARK = "↵"
"""What a line break in the text shows as."""
# Kept by visible(): plain text shows them as breaks and a tab; literal() marks the breaks.
_KEPT = "\n\r\t\u2028\u2029"

# Inside a line: emphasis and code (* _ `), links and images (they need "["), HTML and
# autolinks (<), entities (&: "&lt;" or "&#x202e;" would decode), tables, strike-through
# and maths (| ~ $), and Streamlit's colours, icons and emoji (a colon before a letter:
# ":red[", ":material/", ":smile:"; "a.py:12" stays).
_INLINE = re.compile(r"[\\`*_\[\]<>|~$&]|:(?=[A-Za-z])")
# GFM links bare URLs and e-mail addresses (www.x, http://x, a@b.co) by a search of the
# text once parsed, escapes gone: an invisible word joiner breaks each pattern instead.
_BARE_LINK = re.compile(r"(?i)(?<=www)(?=\.)|(?<=:)(?=//)|(?<=[-.\w+])(?=@[-\w]+\.[-\w])", re.ASCII)
WORD_JOINER = "\u2060"
# At the start of the text (which may start a line of the page's Markdown): headings,
# quotes, lists (- + * 1. 1)) and setext underlines (= -); leading blanks (a code block).
_BLOCK_MARK = "#>+=-"
_NUMBERED = re.compile(r"\d{1,9}(?=[.)](?: |$))")
_LEADING_BLANKS = re.compile(r"^ +")


def visible(text: object) -> str:
    r"""``text`` with control and bidi characters shown as ``\uXXXX`` (line breaks kept).

    Control characters (ESC, NUL...) and invisible format characters (bidi overrides and
    isolates, zero-width spaces) change how the text around them reads; written out
    (:func:`~mmbright_core.errors.printable`) they are seen for what they are.
    """
    return printable(str(text), keep=_KEPT)


def literal(text: object) -> str:
    """Markdown that renders as ``text`` itself: no link, image, heading, list or HTML.

    Args:
        text: Anything; its ``str()`` is shown.

    Returns:
        ``text`` on one line (breaks as :data:`LINE_MARK`), control and bidi characters
        written out (:func:`visible`), every character Markdown would act on escaped.
    """
    one_line = _LINE_BREAK.sub(LINE_MARK, visible(text).replace("\t", " "))
    escaped = _INLINE.sub(lambda found: "\\" + found.group(0), one_line)
    escaped = _BARE_LINK.sub(WORD_JOINER, escaped)
    escaped = _LEADING_BLANKS.sub(lambda found: "&#32;" * len(found.group(0)), escaped)
    return _block_safe(escaped)


def _block_safe(text: str) -> str:
    if text[:1] and text[0] in _BLOCK_MARK:
        return "\\" + text
    numbered = _NUMBERED.match(text)  # "1." is a list item only with its dot: escape the dot
    if numbered is None:
        return text
    return text[: numbered.end()] + "\\" + text[numbered.end() :]
