"""Slices of the image effect, failure tags, Judged@10 pairing and the judgment-gap flag."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mmbright_core.analysis import stats
from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.rankdiff import judgment_gap, unjudged_lead
from mmbright_core.analysis.slices import (
    NO_IMAGE,
    NO_TAG,
    NOT_READ,
    UNKNOWN,
    slice_effect,
    slice_groups,
    tagged,
    with_tags,
)
from mmbright_core.errors import InputError, UnknownNameError

# (query, images, text-only nDCG, with-image nDCG, Judged@10 A, Judged@10 B)
QUERIES = [
    ("q1", 1, 0.50, 0.25, 0.3, 0.1),
    ("q2", 2, 0.40, 0.40, 0.2, 0.2),
    ("q3", 0, 0.20, 0.30, 0.1, 0.1),
    ("q4", 1, 0.90, 0.10, 0.4, 0.0),
]
# (query, OCR words, width, height): q1 small and tall, no words; q2 large, wide, many
# words; q4 an image whose header could not be read and never OCR'd.
FEATURES = pd.DataFrame(
    [
        ("physics", "q1", 0.0, 100.0, 300.0),
        ("physics", "q2", 12.0, 2000.0, 1000.0),
        ("physics", "q3", math.nan, math.nan, math.nan),
        ("physics", "q4", math.nan, math.nan, math.nan),
    ],
    columns=["domain", "query_id", "ocr_words", "image_width", "image_height"],
)
TAGS = {("physics", "q1"): ["OCR noise"], ("physics", "q4"): ["OCR noise", "other"]}


def _table() -> pd.DataFrame:
    rows = []
    for qid, images, text, multi, judged_a, judged_b in QUERIES:
        for run, value, judged in (("text", text, judged_a), ("multi", multi, judged_b)):
            rows.append((run, 2, "physics", qid, value, judged, images, images, 100, 2, 1, 1.0))
    columns = ["run", "task", "domain", "query_id", "nDCG@10", "Judged@10", "n_images"]
    columns += ["n_decodable_images", "query_chars", "n_judged", "n_relevant"]
    return pd.DataFrame(rows, columns=[*columns, "first_relevant_rank"]).assign(covered=True)


def _comparison():
    return compare_runs(_table(), "text", "multi", n_resamples=500, seed=2)


def test_judged_at_10_is_paired_per_run():
    per_query = _comparison().per_query.set_index("query_id")
    assert per_query.loc["q4", ["judged_a", "judged_b"]].tolist() == [0.4, 0.0]


def test_slice_by_ocr_words_never_guesses_an_unread_image():
    groups = slice_groups(_comparison().per_query, "ocr-words", features=FEATURES)
    assert groups.astype(str).tolist() == ["none", "many (6+)", NO_IMAGE, NOT_READ]


def test_slice_by_image_size_and_aspect_from_the_header():
    per_query = _comparison().per_query
    size = slice_groups(per_query, "image-size", features=FEATURES).astype(str).tolist()
    # 100 x 300 = 0.03 MP; 2000 x 1000 = 2 MP.
    assert size == ["small (<0.25 MP)", "large (1+ MP)", NO_IMAGE, UNKNOWN]
    aspect = slice_groups(per_query, "aspect", features=FEATURES).astype(str).tolist()
    # 300 / 100 = 3 (tall); 1000 / 2000 = 0.5 (wide).
    assert aspect == ["tall", "wide", NO_IMAGE, UNKNOWN]


def test_slice_effect_has_the_delta_ci_and_counts_per_group_in_order():
    out = slice_effect(_comparison(), "images").set_index("group")
    assert list(out.index) == ["0", "1", "2"]
    # q1 (0.25 - 0.50) and q4 (0.10 - 0.90): mean -0.525, one loss each.
    assert out.loc["1", "delta"] == pytest.approx((-0.25 - 0.80) / 2)
    assert out.loc["1", ["wins", "ties", "losses"]].tolist() == [0, 0, 2]
    low, high = stats.bootstrap_ci([-0.25, -0.80], n_resamples=500, seed=2)
    assert (out.loc["1", "ci_low"], out.loc["1", "ci_high"]) == (low, high)
    assert out.loc["2", "ci_low"] == out.loc["2", "ci_high"] == 0.0


def test_slice_by_tag_counts_a_query_under_each_of_its_tags():
    out = slice_effect(_comparison(), "tag", tags=TAGS).set_index("group")
    assert list(out.index) == ["OCR noise", "other", NO_TAG]
    assert out.loc["OCR noise", "queries"] == 2  # q1 and q4
    assert out.loc["other", "delta"] == pytest.approx(-0.8)
    assert out.loc[NO_TAG, "queries"] == 2  # q2 and q3


def test_unknown_slice_and_missing_features_are_refused():
    with pytest.raises(UnknownNameError, match="did you mean"):
        slice_groups(_comparison().per_query, "image_size")
    with pytest.raises(InputError, match="features"):
        slice_groups(_comparison().per_query, "aspect")


def test_tags_column_and_any_tag_filter():
    rows = _comparison().per_query
    assert with_tags(rows, TAGS)["tags"].tolist() == ["OCR noise", "", "", "OCR noise; other"]
    assert tagged(rows, TAGS, ["other"]).tolist() == [False, False, False, True]
    assert tagged(rows, TAGS, ["other", "OCR noise"]).tolist() == [True, False, False, True]
    assert tagged(rows, TAGS, []).all()


QRELS = {"r1": 1, "r2": 2, "n0": 0}  # u* are unjudged, n0 judged non-relevant


@pytest.mark.parametrize(
    ("ranking", "lead"),
    [
        (["r1", "u1"], 0),
        (["u1", "u2", "r1"], 2),
        (["n0", "u1", "r2"], 1),  # the judged non-relevant document is not counted
        (["u1", "n0", "u2"], 2),  # no relevant document: every unjudged one counts
        ([], 0),
    ],
)
def test_unjudged_lead(ranking, lead):
    assert unjudged_lead(ranking, QRELS) == lead


def test_unjudged_lead_stops_at_the_cut_off():
    assert unjudged_lead(["u1", "u2", "u3", "r1"], QRELS, k=2) == 2


def test_judgment_gap_definition():
    # B lost its first place to an unjudged passage: lead 0 -> 1.
    assert judgment_gap(QRELS, ["r1", "u1"], ["u9", "r1"], delta=-0.37)
    # The same move with a judged non-relevant passage is a failure, not a gap.
    assert not judgment_gap(QRELS, ["r1", "u1"], ["n0", "r1"], delta=-0.37)
    # Relevant passages reordered (r2 above r1 lost gain): no unjudged one moved up.
    assert not judgment_gap(QRELS, ["r2", "r1"], ["r1", "r2"], delta=-0.1)
    # A win is never a gap.
    assert not judgment_gap(QRELS, ["u9", "r1"], ["u8", "u9", "r1"], delta=0.0)


def test_judgments_of_relevant_items_only_flag_no_gap():
    """Where the qrels list only relevant items, every other one is "unjudged": no flag."""
    relevant_only = {"r1": 1, "r2": 2}
    assert not judgment_gap(relevant_only, ["r1", "u1"], ["u9", "r1"], delta=-0.37)
    assert not judgment_gap(relevant_only, ["r1"], ["u1", "u2", "u3", "r1"], delta=-0.5)
    assert judgment_gap({**relevant_only, "n0": 0}, ["r1", "u1"], ["u9", "r1"], delta=-0.37)


def test_permutation_test_by_bytes_is_one_sign_flip_per_bit():
    # The same bytes, unpacked to one sign per delta and multiplied out: the same p-value.
    deltas = np.random.default_rng(7).normal(0.02, 0.1, size=300)
    flips = np.random.default_rng(3).integers(0, 256, size=(2_000, 38), dtype=np.uint8)
    bits = np.unpackbits(flips, axis=1, bitorder="little", count=deltas.size)
    signs = bits.astype(np.float64) * 2 - 1
    hits = int(np.sum(np.abs(signs @ deltas) >= abs(deltas.sum()) - 1e-9))
    result = stats.permutation_test(deltas, n_resamples=2_000, seed=3)
    assert result.p_value == (hits + 1) / 2_001
