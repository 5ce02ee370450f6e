import math

import pandas as pd
import pytest

from mmbright_core.analysis.leaderboard import (
    AVERAGE,
    ReferenceScore,
    domain_scores,
    leaderboard,
    published_table,
    reproduction,
    status,
)
from mmbright_core.errors import InputError


def _table(rows):
    return pd.DataFrame(rows, columns=["run", "task", "domain", "query_id", "nDCG@10"])


def test_leaderboard_macro_average_by_hand():
    table = _table(
        [
            # run "bm25", task 1: academia mean (0.2 + 0.4) / 2 = 0.3; apple 0.1 (q3 not scored)
            ("bm25", 1, "academia", "q1", 0.2),
            ("bm25", 1, "academia", "q2", 0.4),
            ("bm25", 1, "apple", "q3", math.nan),
            ("bm25", 1, "apple", "q4", 0.1),
            # run "dense": academia 0.5, apple 0.25
            ("dense", 1, "academia", "q1", 0.5),
            ("dense", 1, "apple", "q4", 0.25),
        ]
    )
    board = leaderboard(table)
    assert list(board.columns) == ["academia", "apple", AVERAGE, "domains"]
    assert board.loc[(1, "bm25"), "academia"] == 30.0
    assert board.loc[(1, "bm25"), "apple"] == 10.0
    # Macro over domains (0.3 + 0.1) / 2 = 0.2, not over queries (0.7 / 3).
    assert board.loc[(1, "bm25"), AVERAGE] == 20.0
    # (0.5 + 0.25) / 2 = 0.375 -> 37.5
    assert board.loc[(1, "dense"), AVERAGE] == 37.5
    assert board.loc[(1, "dense"), "domains"] == 2
    counts = domain_scores(table).set_index(["run", "domain"])["queries"]
    assert counts[("bm25", "apple")] == 1


def test_leaderboard_averages_before_rounding():
    # Domain means 12.24 and 12.34 (x100) print as 12.2 and 12.3; averaging the printed
    # values gives 12.25 -> 12.2, averaging the raw ones 12.29 -> 12.3 (the rule).
    table = _table([("r", 2, "a", "q1", 0.1224), ("r", 2, "b", "q2", 0.1234)])
    board = leaderboard(table)
    assert (board.loc[(2, "r"), "a"], board.loc[(2, "r"), "b"]) == (12.2, 12.3)
    assert board.loc[(2, "r"), AVERAGE] == 12.3


def test_unknown_measure_is_an_input_error():
    with pytest.raises(InputError, match="P@5"):
        leaderboard(_table([("r", 1, "a", "q", 0.5)]), measure="P@5")


@pytest.mark.parametrize(
    ("ours", "reported", "expected"),
    [
        (8.5, 8.5, "OK"),
        (9.6, 9.57, "OK"),  # equal at one decimal
        (8.9, 8.5, "OKish"),
        (8.0, 8.5, "OKish"),
        (9.1, 8.5, "differs"),
        (0.0, 3.23, "differs"),
    ],
)
def test_status(ours, reported, expected):
    assert status(ours, reported) == expected


def test_reproduction_matches_runs_by_model_name():
    table = _table(
        [
            ("bm25-run", 1, "a", "q1", 0.085),
            ("clip", 3, "a", "q1", 0.332),
            ("mine", 1, "a", "q1", 0.5),
        ]
    )
    board = leaderboard(table)
    out = reproduction(board, models={"bm25-run": "bm25"})
    assert set(out["run"]) == {"bm25-run", "clip"}
    bm25 = out.set_index("run").loc["bm25-run"]
    assert (bm25["model"], bm25["ours"], bm25["reported"], bm25["status"]) == (
        "BM25",
        8.5,
        8.5,
        "OK",
    )
    clip = out.set_index("run").loc["clip"]
    assert clip["reported"] == 33.6 and clip["status"] == "OKish"
    assert clip["difference"] == pytest.approx(-0.4)


def test_reproduction_with_explicit_reference():
    board = leaderboard(_table([("x", 2, "a", "q", 0.2)]))
    ref = [ReferenceScore(2, "X", 25.0, "paper", "somewhere")]
    out = reproduction(board, reference=ref)
    assert list(out["status"]) == ["differs"]


def test_published_table_puts_reproducing_runs_beside_their_row():
    # task 1: "p" averages (0.1 + 0.2) / 2 = 15.0, reproducing X (reported 14.6): +0.4, OKish;
    # "q" has the same scores but reproduces nothing; task 2's "p" row is another task's.
    board = leaderboard(
        _table(
            [
                ("p", 1, "a", "q1", 0.1),
                ("p", 1, "b", "q1", 0.2),
                ("q", 1, "a", "q1", 0.1),
                ("p", 2, "a", "q1", 0.9),
            ]
        )
    )
    ref = [
        ReferenceScore(1, "X", 14.6, "paper", "paper"),
        ReferenceScore(1, "X", 14.0, "mteb", "mteb"),  # another harness: not a preset's
        ReferenceScore(1, "Y", 20.0, "paper", "paper"),
        ReferenceScore(2, "X", 30.0, "paper", "paper"),
    ]
    out = published_table(1, board, {"p": "x", "gone": "Y"}, reference=ref)
    assert out[["model", "source", "run"]].fillna("").values.tolist() == [
        ["X", "paper", "p"],
        ["X", "mteb", ""],
        ["Y", "paper", ""],  # "gone" is not on the board
    ]
    assert out["ours"][0] == 15.0 and out["ours"][1:].isna().all()
    assert out["difference"][0] == pytest.approx(0.4) and out["status"][0] == "OKish"
    assert published_table(1, None, {"p": "X"}, reference=ref)["run"].isna().all()
