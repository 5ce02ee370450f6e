"""The dashboard's colours, named once: the delta scale, runs A and B, and the grades.

Every chart and every coloured piece of HTML takes its colours from here, so that a
negative delta is red and a positive one blue on every chart, and a pair graded 2 never
looks like one graded 1 (``docs/protocol.md``: Task 4 grades pairs 2, 1 or 0).
"""

from __future__ import annotations

from typing import NamedTuple

# Red for B losing, grey for a tie, blue for B winning: the grey midpoint and both ends stay
# visible on a white and on a near-black background (a white midpoint vanishes on the light
# theme, a dark end on the dark one).
DELTA_NEGATIVE = "#d7301f"
"""B − A below zero: B loses."""
DELTA_ZERO = "#9e9e9e"
"""B − A equal to zero: a tie."""
DELTA_POSITIVE = "#2c7fb8"
"""B − A above zero: B wins."""
DIVERGING = ((0.0, DELTA_NEGATIVE), (0.5, DELTA_ZERO), (1.0, DELTA_POSITIVE))
"""The continuous scale of B − A, centred on zero (Plotly ``colorscale``)."""

RUN_A = "#5e3c99"
"""Run A's bars and dots (purple: not a delta colour, so a run never reads as a loss)."""
RUN_B = "#e66101"
"""Run B's bars and dots (orange)."""
POOLED = "#555555"
"""The pooled row of a per-domain chart (every domain together)."""


class Grade(NamedTuple):
    """How a relevance grade is coloured.

    Attributes:
        badge: Streamlit's name of the colour (``:green-badge[...]``).
        hex: The same hue for charts.
    """

    badge: str
    hex: str


GRADES = {
    2: Grade("green", "#21a354"),
    1: Grade("blue", "#1c83e1"),
    0: Grade("red", "#d7301f"),
}
"""Relevance grade -> colour (grades above 2 take grade 2's)."""


def delta_color(delta: float) -> str:
    """The colour of one delta B − A: red below zero, grey at zero, blue above."""
    if delta < 0:
        return DELTA_NEGATIVE
    return DELTA_POSITIVE if delta > 0 else DELTA_ZERO


def grade(relevance: float) -> Grade:
    """The colour of a judged grade (0, 1, 2; higher grades as 2, negative as 0)."""
    return GRADES[min(max(int(relevance), 0), 2)]


REGION_RAISED = DELTA_NEGATIVE
"""A region of an image that raised the item compared (the wrong hit) over the other: red."""
REGION_LOWERED = DELTA_POSITIVE
"""A region that lowered it (raised the relevant item instead): blue."""
