"""Paired statistics over per-query deltas: tests, intervals, effect size, Holm correction.

Every function takes the per-query differences ``delta = b - a`` of two runs scored on the
same queries (docs/protocol.md, What peer tools do differently: no peer publishes paired tests with
multiple-comparison correction). Resampling methods take an explicit ``seed`` so that a printed
result can be reproduced.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mmbright_core.errors import InputError

FloatArray = npt.NDArray[np.float64]

EXACT_MAX_NONZERO = 16
"""Sign-flip tests enumerate all 2**n sign patterns up to this many non-zero deltas."""

DEFAULT_RESAMPLES = 10_000
DEFAULT_SEED = 0
_CHUNK = 2_000  # resamples drawn per batch: bounds memory at 2,803 queries


@dataclass(frozen=True)
class PermutationResult:
    """The outcome of a paired randomisation test.

    Attributes:
        p_value: Two-sided p-value of the mean delta under random sign flips.
        exact: True when every sign pattern was enumerated (no Monte Carlo error).
        n_resamples: Sign patterns drawn (Monte Carlo) or enumerated (exact).
    """

    p_value: float
    exact: bool
    n_resamples: int


@dataclass(frozen=True)
class TTestResult:
    """A paired t-test: statistic and two-sided p-value with ``n - 1`` degrees of freedom."""

    statistic: float
    p_value: float


def as_deltas(deltas: npt.ArrayLike) -> FloatArray:
    """Return the deltas as a 1-d float64 array, rejecting NaN and infinite values.

    Args:
        deltas: Per-query differences.

    Returns:
        A float64 copy.

    Raises:
        InputError: If the values are not one-dimensional and finite.
    """
    arr = np.asarray(deltas, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError("per-query deltas must be a flat list", found=f"shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(
            "per-query deltas must be finite",
            found=f"{int(np.sum(~np.isfinite(arr)))} NaN or infinite values",
            hint="pair only queries that both runs were scored on",
        )
    return arr


def wins_ties_losses(deltas: npt.ArrayLike) -> tuple[int, int, int]:
    """Count queries where B beat A, tied, and lost (exact float comparison with 0)."""
    arr = as_deltas(deltas)
    return int(np.sum(arr > 0)), int(np.sum(arr == 0)), int(np.sum(arr < 0))


def _tolerance(values: FloatArray) -> float:
    # Flipped sums are added in another order than the observed one; a relative slack of
    # a few hundred ulps keeps equal statistics equal (scipy's permutation_test does the same).
    return float(np.sum(np.abs(values))) * np.finfo(np.float64).eps * 100


def permutation_test(
    deltas: npt.ArrayLike,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    exact_max: int = EXACT_MAX_NONZERO,
) -> PermutationResult:
    """Paired randomisation test of the mean delta (random sign flips, two-sided).

    Under the null hypothesis the two runs are exchangeable on each query, so each delta's
    sign is a fair coin. Zero deltas do not change under a flip, so only the non-zero ones
    are flipped; with at most ``exact_max`` of them all patterns are enumerated. The Monte
    Carlo p-value counts the observed pattern, ``(hits + 1) / (n_resamples + 1)``, as
    ``scipy.stats.permutation_test`` does.

    Args:
        deltas: Per-query differences ``b - a``.
        n_resamples: Sign patterns drawn when not enumerating.
        seed: Seed of the random generator (the result is a function of it).
        exact_max: Largest number of non-zero deltas enumerated exactly.

    Returns:
        The p-value and how it was obtained.
    """
    if n_resamples < 1:
        raise InputError("n_resamples must be positive", found=str(n_resamples))
    arr = as_deltas(deltas)
    nonzero = arr[arr != 0]
    if nonzero.size == 0:
        return PermutationResult(1.0, True, 1)
    observed = abs(float(np.sum(nonzero)))
    threshold = observed - _tolerance(nonzero)
    if nonzero.size <= exact_max:
        patterns = np.arange(2**nonzero.size)[:, None] >> np.arange(nonzero.size) & 1
        null = np.abs((1 - 2 * patterns) @ nonzero)
        return PermutationResult(float(np.mean(null >= threshold)), True, int(null.size))
    rng = np.random.default_rng(seed)
    table = _byte_sums(nonzero)
    columns = np.arange(table.shape[1])
    hits = 0
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        # Each random byte flips eight deltas at once and picks their signed sum from the
        # table: one draw and one lookup per eight queries (padding zeros never count).
        flips = rng.integers(0, 256, size=(size, columns.size), dtype=np.uint8)
        hits += int(np.sum(np.abs(table[flips, columns].sum(axis=1)) >= threshold))
    return PermutationResult((hits + 1) / (n_resamples + 1), False, n_resamples)


def _byte_sums(values: FloatArray) -> FloatArray:
    """The signed sums of each run of eight values under every sign pattern of a byte.

    Entry ``[pattern, j]`` is ``sum(s_i * values[8j + i])`` with ``s_i = +1`` where bit ``i``
    of ``pattern`` is set and ``-1`` elsewhere (the values padded with zeros to a multiple of
    eight). A resample then costs one lookup per eight queries instead of eight products.
    """
    groups = -(-values.size // 8)
    padded = np.zeros(groups * 8)
    padded[: values.size] = values
    signs = ((np.arange(256)[:, None] >> np.arange(8)) & 1) * 2.0 - 1.0
    sums: FloatArray = signs @ padded.reshape(groups, 8).T
    return sums


def paired_t_test(deltas: npt.ArrayLike) -> TTestResult:
    """Paired t-test on the deltas (equal to ``scipy.stats.ttest_rel(b, a)``).

    Degenerate cases, where scipy answers NaN or infinity, are given a meaning: fewer than
    two queries gives NaN; all deltas zero gives ``t = 0, p = 1`` (nothing differs); equal
    non-zero deltas give ``t = ±inf, p = 0``.

    Args:
        deltas: Per-query differences ``b - a``.

    Returns:
        The t statistic and its two-sided p-value.
    """
    arr = as_deltas(deltas)
    if arr.size < 2:
        return TTestResult(math.nan, math.nan)
    mean = float(np.mean(arr))
    sd = float(np.std(arr, ddof=1))
    if sd == 0.0:
        if mean == 0.0:
            return TTestResult(0.0, 1.0)
        return TTestResult(math.copysign(math.inf, mean), 0.0)
    t = mean / (sd / math.sqrt(arr.size))
    # Student's t CDF from scipy.special, imported here: it loads in a fraction of the
    # second scipy.stats takes, which the dashboard would otherwise pay on its first page.
    from scipy.special import stdtr

    p = 2.0 * float(stdtr(arr.size - 1, -abs(t)))
    return TTestResult(t, min(p, 1.0))


def bootstrap_ci(
    deltas: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean delta.

    Args:
        deltas: Per-query differences ``b - a``.
        confidence: Coverage of the interval, in (0, 1).
        n_resamples: Bootstrap samples drawn.
        seed: Seed of the random generator.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when there are no deltas.
    """
    if not 0.0 < confidence < 1.0:
        raise InputError("confidence must lie strictly between 0 and 1", found=str(confidence))
    if n_resamples < 1:
        raise InputError("n_resamples must be positive", found=str(n_resamples))
    arr = as_deltas(deltas)
    if arr.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, _CHUNK):
        size = min(_CHUNK, n_resamples - start)
        picks = rng.integers(0, arr.size, size=(size, arr.size))
        means[start : start + size] = arr[picks].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def cohens_d_paired(deltas: npt.ArrayLike) -> float:
    """Cohen's d for paired samples (d_z): mean delta over the deltas' standard deviation.

    Returns NaN for fewer than two deltas, 0 when all are zero, and ±inf when they are equal
    and non-zero (the same conventions as :func:`paired_t_test`).
    """
    arr = as_deltas(deltas)
    if arr.size < 2:
        return math.nan
    mean = float(np.mean(arr))
    sd = float(np.std(arr, ddof=1))
    if sd == 0.0:
        return 0.0 if mean == 0.0 else math.copysign(math.inf, mean)
    return mean / sd


def holm(p_values: npt.ArrayLike) -> FloatArray:
    """Holm-Bonferroni adjusted p-values for one family of tests.

    The i-th smallest of m p-values is multiplied by ``m - i`` (i from 0), the running
    maximum is taken so the adjusted values keep the raw order, and results are capped at 1.
    NaN p-values (tests that could not be run) stay NaN and do not count towards m.

    Args:
        p_values: The family's raw p-values, in any order.

    Returns:
        Adjusted p-values in the input order.
    """
    raw = np.asarray(p_values, dtype=np.float64)
    out = np.full(raw.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(raw))
    if valid.size == 0:
        return out
    order = valid[np.argsort(raw[valid], kind="stable")]
    factors = np.arange(valid.size, 0, -1)
    adjusted = np.minimum(np.maximum.accumulate(raw[order] * factors), 1.0)
    out[order] = adjusted
    return out
