"""Run fusion: several runs of one task combined into one (RRF, CombSUM, CombMNZ, weighted sum).

The scores are ranx's (``ranx.fuse``, ranx 0.3), to float64 rounding:

- ``rrf``: each run's documents are ranked from 1 (:func:`~mmbright_core.ranking.ranked`), and
  a document scores ``1 / (k + rank)`` summed over the runs that hold it (no normalisation:
  only the ranks count).
- ``combsum``: the sum of a document's normalised scores, a run without it adding 0.
- ``combmnz``: that sum times the number of runs that hold the document.
- ``wsum``: ``weights[i]`` times run ``i``'s normalised score, summed (0 where it is absent).

Normalisation is per query and per run, over the documents that run holds for it:
``min-max`` maps them to ``(s - min) / max(max - min, 1e-9)`` (one document: 0), ``zscore``
(ranx's ``zmuv``) to ``(s - mean) / max(std, 1e-9)`` with the population standard deviation
(one document, or all equal: 0); ``None`` keeps the scores as they are.

The fused run is ordered, and cut, by the package's one ranking rule: score descending, ties
by doc id descending (:mod:`mmbright_core.ranking`). ranx breaks ties in an order of its own
(an unstable sort of the scores), so where scores tie two orders can differ, RRF's ranks
included: here a run's tied documents take their ranks by doc id, as everywhere in the
package, so a fused run is the same whatever order its inputs were read in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mmbright_core.errors import InputError

#: The fusion methods, as ``fuse`` and ``mmbright fuse --method`` name them.
METHODS = ("rrf", "combsum", "combmnz", "wsum")
#: The normalisations of the score-based methods (``zscore`` is ranx's ``zmuv``).
NORMS = ("min-max", "zscore")
#: RRF's constant by default (Cormack et al., 2009; ranx's default too).
DEFAULT_K = 60
#: The floor of a normalisation's denominator, ranx's, so that equal scores give 0.
_FLOOR = 1e-9

Scores = Mapping[str, float]
AnyRun = Mapping[str, Scores]


def check_fusion(
    runs: int,
    method: str,
    *,
    k: float = DEFAULT_K,
    norm: str | None = "min-max",
    weights: Sequence[float] | None = None,
) -> None:
    """Raise :class:`InputError` unless ``method`` and its parameters can fuse ``runs`` runs."""
    if method not in METHODS:
        raise InputError(
            "unknown fusion method", expected=f"one of {', '.join(METHODS)}", found=repr(method)
        )
    if norm is not None and norm not in NORMS:
        raise InputError(
            "unknown normalisation", expected=f"one of {', '.join(NORMS)}", found=repr(norm)
        )
    if runs < 2:
        raise InputError("fusion needs two runs or more", found=f"{runs} run(s)")
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k <= 0:
        raise InputError(
            "invalid RRF k", expected="a positive number (60 by default)", found=repr(k)
        )
    if method == "wsum" and weights is None:
        raise InputError(
            "wsum needs one weight per run", found="no weights", hint="Pass --weights."
        )
    if weights is not None and method != "wsum":
        raise InputError(
            f"weights apply to wsum only, not {method}", found=f"{len(weights)} weight(s)"
        )
    if weights is not None and len(weights) != runs:
        raise InputError(
            "one weight per run",
            expected=f"{runs} weights, one per run in the order given",
            found=f"{len(weights)} weight(s)",
        )
    if weights is not None and not all(math.isfinite(w) for w in weights):
        raise InputError("invalid weight", expected="finite numbers", found=repr(list(weights)))


def fuse(
    runs: Sequence[AnyRun],
    method: str = "rrf",
    *,
    k: float = DEFAULT_K,
    norm: str | None = "min-max",
    weights: Sequence[float] | None = None,
    depth: int | None = None,
) -> dict[str, dict[str, float]]:
    """Fuse runs of one task: query_id -> doc_id -> score, each query in ranking order.

    Args:
        runs: Two runs or more; a query absent from a run gets nothing from it.
        method: ``rrf``, ``combsum``, ``combmnz`` or ``wsum``.
        k: RRF's constant (``rrf`` only).
        norm: ``min-max``, ``zscore`` or None, before a score-based method (not ``rrf``).
        weights: One per run (``wsum`` only, which needs them).
        depth: The documents kept per query (None: every one).

    Raises:
        InputError: An unknown method or normalisation, fewer than two runs, ``k <= 0``,
            weights missing, misplaced or not one per run.
    """
    # The ranking rule is imported here: it needs numpy, and `mmbright fuse --help` reads
    # this module's names alone.
    from mmbright_core.ranking import top_k

    check_fusion(len(runs), method, k=k, norm=norm, weights=weights)
    queries = dict.fromkeys(q for run in runs for q in run)
    fused: dict[str, dict[str, float]] = {}
    for query in queries:
        per_run = [run.get(query, {}) for run in runs]
        scores = _fuse_query(per_run, method, k, norm, weights)
        fused[query] = top_k(scores, len(scores) if depth is None else depth)
    return fused


def _fuse_query(
    per_run: Sequence[Scores],
    method: str,
    k: float,
    norm: str | None,
    weights: Sequence[float] | None,
) -> dict[str, float]:
    from mmbright_core.ranking import ranked

    if method == "rrf":
        parts = [{d: 1 / (k + r) for r, (d, _) in enumerate(ranked(s), 1)} for s in per_run]
    else:
        parts = [normalised(s, norm) for s in per_run]
    docs = dict.fromkeys(d for part in parts for d in part)
    if method == "combmnz":
        return {d: _combmnz([p[d] for p in parts if d in p]) for d in docs}
    if method == "wsum" and weights is not None:
        return {
            d: sum([w * p.get(d, 0.0) for w, p in zip(weights, parts, strict=True)]) for d in docs
        }
    return {d: sum([p.get(d, 0.0) for p in parts]) for d in docs}


def _combmnz(present: list[float]) -> float:
    return sum(present) * len(present)


def normalised(scores: Scores, norm: str | None) -> dict[str, float]:
    """Return one query's scores of one run normalised (``min-max``, ``zscore`` or None)."""
    if norm is None or not scores:
        return dict(scores)
    # Summed from the highest score down, one at a time, as ranx sums a run's sorted scores.
    values = sorted(scores.values(), reverse=True)
    if norm == "min-max":
        low = values[-1]
        denominator = max(values[0] - low, _FLOOR)
    else:
        low = sum(values) / len(values)  # the mean
        variance = sum([(v - low) * (v - low) for v in values]) / len(values)
        denominator = max(variance**0.5, _FLOOR)
    return {d: (s - low) / denominator for d, s in scores.items()}
