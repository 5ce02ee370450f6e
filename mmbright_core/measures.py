"""Measures as values: ``nDCG@10`` parses from its text, prints back to it, and hashes by it.

This module only declares what a measure is; :mod:`mmbright_core.metrics` computes them.
The families and their definitions follow trec_eval (docs/protocol.md, Scoring): relevant means a
label of 1 or more, gains are linear, the ideal ranking is built from every judgment of the query.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from mmbright_core.errors import InputError, UnknownNameError

CutoffRule = Literal["required", "optional"]


@dataclass(frozen=True)
class Family:
    """One family of measures, such as nDCG or P.

    Attributes:
        name: The family's name as written in measure texts (``"nDCG"``).
        cutoff: Whether a cutoff ``@k`` must be given or may be left out.
        description: What the measure computes, in one sentence.
    """

    name: str
    cutoff: CutoffRule
    description: str


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("nDCG", "required", "trec_eval ndcg_cut: linear gain, ideal from all judgments"),
        Family("P", "required", "relevant documents in the top k, divided by k"),
        Family("R", "required", "relevant documents in the top k over all relevant ones"),
        Family("AP", "optional", "average precision (trec_eval map, or map_cut at k)"),
        Family("RR", "optional", "reciprocal rank of the first relevant document (within k)"),
        Family("Judged", "required", "share of the top k that has a judgment of any label"),
        Family(
            "OracleNDCG",
            "required",
            "the official oracle: nDCG@k of the run rescored, its top 100 by their labels "
            "and every other document by 0 (ties at 0 by doc id, as in trec_eval)",
        ),
    )
}
"""The registry of measure families, in the order they are listed to users."""

# Names other tools use, mapped to ours, so that an unknown name gets a useful hint
# (trec_eval / pytrec_eval keys, the official harness's metrics.json keys, ir_measures).
_ALIASES = {
    "ndcg_cut": "nDCG",
    "ndcg": "nDCG",
    "p": "P",
    "precision": "P",
    "recall": "R",
    "r": "R",
    "map_cut": "AP",
    "map": "AP",
    "ap": "AP",
    "recip_rank": "RR",
    "mrr": "RR",
    "rr": "RR",
    "judged": "Judged",
    "oraclendcg": "OracleNDCG",
    "oracle ndcg": "OracleNDCG",
}
_TEXT = re.compile(r"(?P<family>[^@]+?)(?:@(?P<cutoff>.*))?")
_FOREIGN = re.compile(r"(?P<family>[A-Za-z_ ]+?)(?:[_.@](?P<cutoff>\d+))?")


@dataclass(frozen=True, eq=False)
class Measure:
    """A measure: a family and, where the family takes one, a cutoff.

    A measure is a value: ``str(m)`` gives its canonical text (``"nDCG@10"``), and two
    measures are equal, and hash the same, exactly when their texts are equal. A measure
    also equals its own text, so ``result.aggregate[m]`` style lookups by text work.

    Attributes:
        family: A key of :data:`FAMILIES`.
        cutoff: The rank cutoff ``k``, or ``None`` for a whole-ranking measure.
    """

    family: str
    cutoff: int | None = None

    def __post_init__(self) -> None:
        spec = FAMILIES.get(self.family)
        if spec is None:
            raise UnknownNameError("measure family", self.family, FAMILIES)
        if self.cutoff is None:
            if spec.cutoff == "required":
                raise InputError(
                    f"measure {self.family} needs a cutoff",
                    expected=f"{self.family}@k with k a positive integer, e.g. {self.family}@10",
                    found=self.family,
                )
            return
        if isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int) or self.cutoff < 1:
            raise InputError(
                f"bad cutoff for measure {self.family}",
                expected="a positive integer",
                found=repr(self.cutoff),
            )

    def __str__(self) -> str:
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"

    def __repr__(self) -> str:
        return f"Measure({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Measure | str):
            return str(self) == str(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))


def parse_measure(name: str | Measure) -> Measure:
    """Parse a measure from its text, such as ``"nDCG@10"``, ``"AP"`` or ``"RR@10"``.

    Args:
        name: The measure's text, or a measure (returned unchanged).

    Returns:
        The measure.

    Raises:
        UnknownNameError: The family is not registered; the message suggests the closest
            name (``"ndcg@10"`` and trec_eval's ``"ndcg_cut_10"`` both suggest ``"nDCG@10"``).
        InputError: The cutoff is missing where required, or not a positive integer.
    """
    if isinstance(name, Measure):
        return name
    if not isinstance(name, str):
        raise InputError("a measure must be given by name", expected="str", found=repr(name))
    match = _TEXT.fullmatch(name.strip())
    if match is None:
        raise InputError("bad measure name", expected="a name such as nDCG@10", found=repr(name))
    family, cutoff = match["family"], match["cutoff"]
    if family not in FAMILIES:
        raise UnknownNameError("measure", name, _suggestions(name))
    if cutoff is None:
        return Measure(family)
    if not re.fullmatch(r"\d+", cutoff):
        raise InputError(
            f"bad cutoff in measure {name!r}", expected="a positive integer", found=repr(cutoff)
        )
    return Measure(family, int(cutoff))


def parse_measures(names: Iterable[str | Measure] | str | Measure) -> tuple[Measure, ...]:
    """Parse several measures, dropping repeats but keeping the first-seen order.

    Args:
        names: Measure texts or measures; a single one is accepted too.

    Returns:
        The distinct measures, in the order given.
    """
    if isinstance(names, str | Measure):
        names = (names,)
    return tuple(dict.fromkeys(parse_measure(n) for n in names))


def _suggestions(name: str) -> list[str]:
    """Candidate spellings to offer for an unknown measure name."""
    foreign = _FOREIGN.fullmatch(name.strip())
    if foreign is not None:
        family = _ALIASES.get(foreign["family"].lower())
        if family is not None:
            cutoff = foreign["cutoff"]
            return [family if cutoff is None else f"{family}@{int(cutoff)}"]
    cutoff = _TEXT.fullmatch(name.strip())
    k = cutoff["cutoff"] if cutoff is not None else None
    suffix = f"@{k}" if k else "@10"
    return [f + ("" if f in ("AP", "RR") and not k else suffix) for f in FAMILIES]
