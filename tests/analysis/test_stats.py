import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from mmbright_core.analysis.stats import (
    bootstrap_ci,
    cohens_d_paired,
    holm,
    paired_t_test,
    permutation_test,
    wins_ties_losses,
)
from mmbright_core.errors import InputError


def _scipy_sign_flip(a, b, *, exact):
    def mean_diff(x, y, axis):
        return np.mean(y - x, axis=axis)

    return sps.permutation_test(
        (a, b),
        mean_diff,
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf if exact else 20_000,
        alternative="two-sided",
        rng=np.random.default_rng(123),
    ).pvalue


def test_exact_enumeration_by_hand():
    # deltas (1, 2, 3): the 8 signed sums are ±1±2±3 = 6, 4, 2, 0, 0, -2, -4, -6.
    # |sum| >= 6 in 2 of 8 patterns.
    result = permutation_test([1.0, 2.0, 3.0])
    assert result.exact
    assert result.p_value == pytest.approx(2 / 8)
    # Observed |sum| = 2 (deltas 1, -2, 3): |sums| >= 2 in 6 of 8 patterns.
    assert permutation_test([1.0, -2.0, 3.0]).p_value == pytest.approx(6 / 8)


def test_zero_deltas_do_not_count_and_identical_runs_give_one():
    assert permutation_test([0.0, 1.0, 2.0, 3.0, 0.0]).p_value == pytest.approx(2 / 8)
    result = permutation_test([0.0, 0.0, 0.0])
    assert result.p_value == 1.0 and result.exact


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_exact_matches_scipy_full_enumeration(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(9)
    b = a + rng.normal(0.1, 0.2, size=9)
    ours = permutation_test(b - a)
    assert ours.exact
    assert ours.p_value == pytest.approx(_scipy_sign_flip(a, b, exact=True), abs=1e-12)


def test_monte_carlo_matches_scipy_within_error():
    rng = np.random.default_rng(7)
    a = rng.random(60)
    b = a + rng.normal(0.03, 0.15, size=60)
    ours = permutation_test(b - a, n_resamples=20_000, seed=5)
    assert not ours.exact and ours.n_resamples == 20_000
    theirs = _scipy_sign_flip(a, b, exact=False)
    # Two independent estimates of p; the sd of each is sqrt(p(1-p)/N) < 0.004.
    assert abs(ours.p_value - theirs) < 0.02
    assert 0.0 < ours.p_value < 1.0


def test_monte_carlo_is_reproducible_and_seeded():
    deltas = np.random.default_rng(0).normal(0.02, 0.2, size=200)
    first = permutation_test(deltas, seed=11, n_resamples=3_000)
    assert first == permutation_test(deltas, seed=11, n_resamples=3_000)
    assert (
        f"{first.p_value:.4f}"
        == f"{permutation_test(deltas, seed=11, n_resamples=3_000).p_value:.4f}"
    )


def test_monte_carlo_small_p_has_floor():
    result = permutation_test(np.full(40, 0.5), n_resamples=999)
    assert result.p_value == pytest.approx(1 / 1000)


@pytest.mark.parametrize("seed", range(4))
def test_t_test_equals_scipy_ttest_rel(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(30)
    b = rng.random(30)
    ours = paired_t_test(b - a)
    theirs = sps.ttest_rel(b, a)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12)
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-10)


def test_t_test_degenerate_cases():
    identical = paired_t_test([0.0, 0.0, 0.0])
    assert (identical.statistic, identical.p_value) == (0.0, 1.0)
    result = paired_t_test([0.2, 0.2])
    assert result.statistic == math.inf and result.p_value == 0.0
    assert math.isnan(paired_t_test([0.3]).p_value)


def test_bootstrap_matches_scipy_percentile_interval():
    deltas = np.random.default_rng(3).normal(0.05, 0.3, size=150)
    low, high = bootstrap_ci(deltas, n_resamples=20_000, seed=1)
    theirs = sps.bootstrap(
        (deltas,), np.mean, method="percentile", n_resamples=20_000, rng=np.random.default_rng(2)
    ).confidence_interval
    assert low == pytest.approx(theirs.low, abs=0.01)
    assert high == pytest.approx(theirs.high, abs=0.01)
    assert low < deltas.mean() < high
    assert bootstrap_ci(deltas, n_resamples=2_000, seed=4) == bootstrap_ci(
        deltas, n_resamples=2_000, seed=4
    )


def test_bootstrap_of_constant_deltas_is_a_point():
    assert bootstrap_ci([0.25, 0.25, 0.25], n_resamples=100) == (0.25, 0.25)
    assert all(math.isnan(v) for v in bootstrap_ci([], n_resamples=10))


def test_cohens_d_paired_by_hand():
    # deltas 1, 2, 3: mean 2, sample sd 1 -> d = 2.
    assert cohens_d_paired([1.0, 2.0, 3.0]) == pytest.approx(2.0)
    assert cohens_d_paired([0.0, 0.0]) == 0.0
    assert cohens_d_paired([-0.1, -0.1]) == -math.inf


def test_wins_ties_losses():
    assert wins_ties_losses([0.1, 0.0, -0.2, 0.3, 0.0]) == (2, 2, 1)


def test_holm_worked_example():
    # Four tests, p = 0.01, 0.04, 0.03, 0.005 (m = 4).
    # Sorted: 0.005, 0.01, 0.03, 0.04; multiplied by 4, 3, 2, 1:
    #   0.020, 0.030, 0.060, 0.040; running maximum: 0.020, 0.030, 0.060, 0.060.
    # Back in input order: 0.01 -> 0.030, 0.04 -> 0.060, 0.03 -> 0.060, 0.005 -> 0.020.
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    np.testing.assert_allclose(adjusted, [0.03, 0.06, 0.06, 0.02])


def test_holm_caps_at_one_and_keeps_nan_out_of_the_family():
    # NaN is not a test: m = 2. 0.3 * 2 = 0.6, then max(0.6, 0.7 * 1) = 0.7.
    adjusted = holm([0.7, math.nan, 0.3])
    assert math.isnan(adjusted[1])
    np.testing.assert_allclose(adjusted[[0, 2]], [0.7, 0.6])
    np.testing.assert_allclose(holm([0.6, 0.9]), [1.0, 1.0])
    assert holm([]).size == 0


def test_holm_never_lowers_a_p_value_and_keeps_order():
    rng = np.random.default_rng(0)
    for _ in range(20):
        raw = rng.random(rng.integers(1, 12))
        adj = holm(raw)
        assert np.all(adj >= raw - 1e-15)
        for i, j in itertools.combinations(range(raw.size), 2):
            if raw[i] < raw[j]:
                assert adj[i] <= adj[j]


def test_non_finite_deltas_are_rejected():
    with pytest.raises(InputError, match="finite"):
        permutation_test([0.1, math.nan])
