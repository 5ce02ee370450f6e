"""The published scores (docs/protocol.md, Published numbers), kept once as data.

``reference.json`` beside this module holds every published average with its source: the
paper's baselines and MTEB's reproductions. The catalogue's presets name the paper's numbers
they should reproduce by task and model (:mod:`~mmbright_core.retrieval.catalogue.presets`), and the
leaderboard flags each matching run against them (:mod:`~mmbright_core.analysis.leaderboard`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class ReferenceScore:
    """One published score.

    Attributes:
        task: The task number.
        model: The model name the score is reported under.
        value: nDCG@10 x100, mean over the 29 domains, as published.
        source: Key of ``reference.json``'s ``sources`` (``"paper"`` or ``"mteb"``).
        citation: Where the number is published.
        checkpoint: The checkpoint or configuration behind it, where known.
    """

    task: int
    model: str
    value: float
    source: str
    citation: str
    checkpoint: str | None = None


def load_reference() -> tuple[ReferenceScore, ...]:
    """Load the published scores packaged with this module (``reference.json``)."""
    text = (
        resources.files("mmbright_core.retrieval.catalogue")
        .joinpath("reference.json")
        .read_text("utf-8")
    )
    data = json.loads(text)
    sources = data["sources"]
    return tuple(
        ReferenceScore(
            task=int(item["task"]),
            model=str(item["model"]),
            value=float(item["value"]),
            source=str(item["source"]),
            citation=str(sources[item["source"]]),
            checkpoint=item.get("checkpoint"),
        )
        for item in data["scores"]
    )
