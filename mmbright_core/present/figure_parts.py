"""What every figure of the dashboard shares: text shown as written, category axes, the look.

Plotly reads every text it draws (titles, axis titles, tick labels and categories, legend
names, hover text, annotations) as pseudo-HTML: ``<b>``, ``<a href>``... are rendered, and
the entities ``&lt;``, ``&gt;``, ``&amp;`` are shown as the characters (plotly.js decodes
entities after tags, since 1.41). Every text that comes from users or data (run names,
domains, query ids, measures, groups) therefore goes through :func:`plain` once, in the
figure modules, so a run named ``<b>x</b>.trec`` is shown as written, not in bold, and
a control or bidi character in it (U+202E would show the label in another order) is
written out as its escape, as everywhere else on the page.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence

import pandas as pd

from mmbright_core.errors import printable

MARGIN = {"l": 10, "r": 10, "t": 30, "b": 10}
"""The margins of a dashboard figure (the HTML report fits its own to the labels)."""
# Every delta is coloured on palette.DIVERGING (red below zero, blue above); the grey
# outline keeps pale points visible on both themes.
OUTLINE = {"width": 0.8, "color": "rgba(120, 120, 120, 0.9)"}


def plain(text: object) -> str:
    """Escape ``&``, ``<`` and ``>`` so Plotly shows ``text`` as written, never as markup.

    Control and bidi characters are written out (:func:`~mmbright_core.errors.printable`).
    """
    return html.escape(printable(str(text)), quote=False)


def plain_all(values: Iterable[object]) -> list[str]:
    """Each of ``values`` through :func:`plain`."""
    return [plain(v) for v in values]


def categorical(labels: Sequence[str]) -> dict[str, object]:
    """An axis showing exactly ``labels``, in that order, as categories.

    Labels that look like numbers (image counts ``"0"``, ``"3-5"``, numeric domain names or
    query ids) would otherwise make Plotly guess a numeric or date axis and drop the rest.
    """
    return {"type": "category", "categoryorder": "array", "categoryarray": list(labels)}


def ci_bars(frame: pd.DataFrame) -> dict[str, object]:
    """Error bars from a table's ``delta`` to its ``ci_low`` and ``ci_high`` (a bootstrap CI)."""
    return {
        "type": "data",
        "array": frame["ci_high"] - frame["delta"],
        "arrayminus": frame["delta"] - frame["ci_low"],
    }
