import math

import numpy as np
import pandas as pd
import pytest
from results_rows import results_frame
from scipy import stats as sps

from mmbright_core.analysis.compare import (
    POOLED,
    compare_runs,
    most_hurt,
    paired_deltas,
    paired_summary,
)
from mmbright_core.analysis.slices import image_effect
from mmbright_core.errors import InputError, UnknownNameError

# (domain, query, images, decodable, chars, text-only nDCG, multimodal nDCG)
QUERIES = [
    ("academia", "a1", 1, 1, 300, 0.50, 0.25),
    ("academia", "a2", 2, 1, 800, 0.40, 0.40),
    ("academia", "a3", 0, 0, 1500, 0.20, 0.30),
    ("biology", "b1", 3, 3, 2500, 0.90, 0.10),
    ("biology", "b2", 1, 0, 450, 0.00, 0.60),
    ("biology", "b3", 7, 7, 5000, 0.70, 0.50),
]


def _table():
    rows = []
    for domain, qid, images, decodable, chars, text, multi in QUERIES:
        for run, value in (("text", text), ("multi", multi)):
            rank = math.nan if value == 0 else 1.0
            rows.append((run, 2, domain, qid, value, images, decodable, chars, 4, 1, rank, True))
    # A query only the text run was scored on: left out of every statistic.
    rows.append(("text", 2, "biology", "b4", 0.3, 1, 1, 100, 2, 1, 2.0, True))
    rows.append(("multi", 2, "biology", "b4", math.nan, 1, 1, 100, 2, 1, math.nan, False))
    return results_frame(rows)


def test_paired_summary_by_hand():
    # deltas 0.1, -0.2, 0.4: mean 0.1; sd sqrt(((0)^2 + 0.3^2 + 0.3^2) / 2) = 0.3 -> d = 1/3.
    out = paired_summary([0.5, 0.5, 0.1], [0.6, 0.3, 0.5], n_resamples=500)
    assert out["queries"] == 3
    assert out["delta"] == pytest.approx(0.1)
    assert (out["wins"], out["ties"], out["losses"]) == (2, 0, 1)
    assert out["cohens_d"] == pytest.approx(1 / 3)
    # Signed sums ±0.1 ±0.2 ±0.4 have |sum| 0.7, 0.5, 0.3, 0.1, each twice; the observed
    # |0.3| is reached in 6 of 8 patterns.
    assert out["perm_exact"] and out["p_perm"] == pytest.approx(6 / 8)
    assert out["p_t"] == pytest.approx(sps.ttest_rel([0.6, 0.3, 0.5], [0.5, 0.5, 0.1]).pvalue)
    assert out["ci_low"] <= out["delta"] <= out["ci_high"]


def test_compare_runs_per_domain_and_pooled():
    comparison = compare_runs(_table(), "text", "multi", n_resamples=2_000, seed=3)
    assert comparison.unpaired == 1
    assert len(comparison.per_query) == 6
    summary = comparison.summary.set_index("scope")
    assert list(summary.index) == ["academia", "biology", POOLED]
    # academia deltas: -0.25, 0, +0.10 -> mean -0.05; biology -0.8, +0.6, -0.2 -> -0.4/3
    assert summary.loc["academia", "delta"] == pytest.approx(-0.05)
    assert summary.loc["biology", "delta"] == pytest.approx(-0.4 / 3)
    assert summary.loc[POOLED, "delta"] == pytest.approx((-0.15 - 0.4) / 6)
    assert tuple(summary.loc["academia", ["wins", "ties", "losses"]]) == (1, 1, 1)
    assert tuple(summary.loc[POOLED, ["wins", "ties", "losses"]]) == (2, 1, 3)
    # Holm over the two domains: the smaller p doubles, the larger stays (if not smaller).
    raw = summary.loc[["academia", "biology"], "p_perm"].to_numpy()
    adjusted = summary.loc[["academia", "biology"], "p_perm_holm"].to_numpy()
    low, high = np.argsort(raw)
    assert adjusted[low] == pytest.approx(min(1.0, 2 * raw[low]))
    assert adjusted[high] == pytest.approx(min(1.0, max(2 * raw[low], raw[high])))
    assert summary.loc[POOLED, "p_perm_holm"] == summary.loc[POOLED, "p_perm"]


def test_compare_is_stable_with_a_fixed_seed():
    first = compare_runs(_table(), "text", "multi", n_resamples=1_000, seed=9).summary
    second = compare_runs(_table(), "text", "multi", n_resamples=1_000, seed=9).summary
    pd.testing.assert_frame_equal(first, second)


def test_most_hurt_ranks_the_worst_losses():
    comparison = compare_runs(_table(), "text", "multi", n_resamples=100)
    hurt = most_hurt(comparison, top=2)
    assert list(hurt["query_id"]) == ["b1", "a1"]
    assert list(hurt["delta"]) == pytest.approx([-0.8, -0.25])
    assert len(most_hurt(comparison, top=10)) == 3  # only losses are listed
    # The deltas alone (no statistics) order the same queries the same way.
    deltas = paired_deltas(_table(), "text", "multi")
    pd.testing.assert_frame_equal(most_hurt(deltas, top=10), most_hurt(comparison, top=10))


def test_image_effect_breakdowns():
    effect = image_effect(compare_runs(_table(), "text", "multi", n_resamples=100))
    assert set(effect) == {"domain", "query images", "images decoded", "query length"}
    images = effect["query images"].set_index("group")
    # 1 image: a1 (-0.25), b2 (+0.6); 0: a3; 2: a2; 3-5: b1; 6+: b3.
    assert list(images.index) == ["0", "1", "2", "3-5", "6+"]
    assert images.loc["1", "queries"] == 2
    assert images.loc["1", "delta"] == pytest.approx(0.175)
    decoded = effect["images decoded"].set_index("group")
    # all: a1, b1, b3; some: a2; none: b2; no images: a3.
    assert decoded["queries"].to_dict() == {"all": 3, "some": 1, "none": 1, "no images": 1}
    assert decoded.loc["all", "delta"] == pytest.approx((-0.25 - 0.8 - 0.2) / 3)
    length = effect["query length"].set_index("group")
    # <500: a1 (300), b2 (450); 500-999: a2; 1000-1999: a3; 2000-3999: b1; 4000+: b3.
    assert length["queries"].to_dict() == {
        "<500": 2,
        "500-999": 1,
        "1000-1999": 1,
        "2000-3999": 1,
        "4000+": 1,
    }
    assert length.loc["<500", "wins"] == 1 and length.loc["<500", "losses"] == 1


def test_unknown_decodability_and_no_paired_query():
    table = _table()
    table["n_decodable_images"] = pd.array([pd.NA] * len(table), dtype="Int64")
    effect = image_effect(compare_runs(table, "text", "multi", n_resamples=100))
    decoded = effect["images decoded"].set_index("group")["queries"].to_dict()
    assert decoded == {"no images": 1, "unknown": 5}
    # Runs with no query in common: nothing to test, every statistic is NaN.
    disjoint = table[~((table["run"] == "multi") & table["nDCG@10"].notna())]
    comparison = compare_runs(disjoint, "text", "multi", n_resamples=10)
    assert comparison.per_query.empty and comparison.unpaired == 7
    pooled = comparison.summary.iloc[-1]
    assert pooled["queries"] == 0 and math.isnan(pooled["delta"]) and math.isnan(pooled["p_perm"])


def test_compare_rejects_unknown_runs_and_measures():
    with pytest.raises(UnknownNameError, match="did you mean 'multi'"):
        compare_runs(_table(), "text", "mult")
    with pytest.raises(InputError):
        compare_runs(_table(), "text", "multi", measure="P@5")
    with pytest.raises(InputError):
        compare_runs(_table(), "text", "text")
