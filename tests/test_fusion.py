"""Fusion equals ranx's on random runs: every score, and the top 100 under the ranking rule."""

from __future__ import annotations

import random

import pytest
from ranx import Run
from ranx import fuse as ranx_fuse

from mmbright_core.errors import InputError
from mmbright_core.fusion import fuse
from mmbright_core.ranking import ranked, ranking_score

QUERIES = [f"q{i}" for i in range(6)]
# ranx's names for the same normalisations.
RANX_NORM = {"min-max": "min-max", "zscore": "zmuv"}


def random_runs(seed: int, count: int, ties: bool) -> list[dict[str, dict[str, float]]]:
    """Runs over one pool of documents: overlapping, each with some of its own, ties if asked."""
    rng = random.Random(seed)
    runs = []
    for r in range(count):
        run = {}
        for q in QUERIES:
            shared = rng.sample([f"d{i:03d}" for i in range(150)], rng.randint(1, 130))
            own = [f"r{r}-{i}" for i in range(rng.randint(0, 20))]
            scale = rng.choice([1.0, 30.0, 0.01])
            if ties:
                run[q] = {d: float(rng.randint(0, 12)) * scale for d in shared + own}
            else:
                run[q] = {d: rng.uniform(-1, 1) * scale for d in shared + own}
        runs.append(run)
    return runs


def by_ranx(runs, method: str, **params):
    """ranx's fusion of ``runs`` (its own names), as plain dicts."""
    norm = RANX_NORM[params.pop("norm")] if params.get("norm") else None
    params.pop("norm", None)
    name = {"combsum": "sum", "combmnz": "mnz"}.get(method, method)
    fused = ranx_fuse([Run(r) for r in runs], norm=norm, method=name, params=params)
    return {q: dict(docs) for q, docs in fused.to_dict().items()}


def assert_same(ours, theirs) -> None:
    """Every score equal; the top 100 the same scores in the same order (ties may differ)."""
    assert ours.keys() == theirs.keys()
    for query in theirs:
        assert ours[query].keys() == theirs[query].keys()
        for doc, score in theirs[query].items():
            assert ours[query][doc] == pytest.approx(score, rel=1e-12, abs=1e-12), (query, doc)
        mine = [ranking_score(s) for _, s in ranked(ours[query])[:100]]
        sorted_theirs = sorted(theirs[query].values(), reverse=True)[:100]
        assert mine == [ranking_score(s) for s in sorted_theirs]
        # Within a tie, the doc id decides (descending), as everywhere in the package.
        top = list(ours[query].items())[:100]
        assert top == ranked(ours[query])[:100]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("norm", ["min-max", "zscore"])
@pytest.mark.parametrize("method", ["combsum", "combmnz"])
def test_comb_methods_equal_ranx(seed: int, ties: bool, norm: str, method: str):
    runs = random_runs(seed, 2 + seed % 2, ties)
    assert_same(fuse(runs, method, norm=norm), by_ranx(runs, method, norm=norm))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("norm", ["min-max", "zscore", None])
def test_weighted_sum_equals_ranx(seed: int, norm: str | None):
    runs = random_runs(seed, 3, ties=seed % 2 == 1)
    weights = [0.7, 0.2, 0.1] if seed < 2 else [2.0, -0.5, 1.25]
    ours = fuse(runs, "wsum", norm=norm, weights=weights)
    assert_same(ours, by_ranx(runs, "wsum", norm=norm, weights=weights))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [60, 1, 7])
def test_rrf_equals_ranx_on_runs_without_ties(seed: int, k: int):
    runs = random_runs(seed, 2 + seed % 2, ties=False)
    assert_same(fuse(runs, "rrf", k=k), by_ranx(runs, "rrf", k=k))


@pytest.mark.parametrize("seed", range(4))
def test_rrf_ranks_tied_documents_by_doc_id(seed: int):
    # ranx ranks tied documents in its sort's order; here they take their ranks by the
    # package's rule, so ranx given each run re-scored by that order agrees exactly.
    runs = random_runs(seed, 3, ties=True)
    by_rule = [
        {
            q: {d: -float(rank) for rank, (d, _) in enumerate(ranked(docs), 1)}
            for q, docs in r.items()
        }
        for r in runs
    ]
    assert_same(fuse(runs, "rrf"), by_ranx(by_rule, "rrf", k=60))
    assert fuse(runs, "rrf") == fuse(by_rule, "rrf")


def test_a_query_absent_from_a_run_gets_only_the_others():
    runs = [{"q1": {"a": 3.0, "b": 1.0}, "q2": {"c": 2.0}}, {"q1": {"b": 5.0, "c": 4.0}}]
    fused = fuse(runs, "combsum")
    assert fused["q2"] == {"c": 0.0}  # one document: min-max gives 0, as ranx's does
    assert fused["q1"] == {"b": 1.0, "a": 1.0, "c": 0.0}


def test_depth_cuts_each_query_by_the_ranking_rule():
    runs = random_runs(5, 2, ties=True)
    full, cut = fuse(runs, "combmnz"), fuse(runs, "combmnz", depth=10)
    assert {q: list(d.items())[:10] for q, d in full.items()} == {
        q: list(d.items()) for q, d in cut.items()
    }


@pytest.mark.parametrize(
    ("method", "params", "said"),
    [
        ("borda", {}, "unknown fusion method"),
        ("rrf", {"k": 0}, "invalid RRF k"),
        ("rrf", {"k": -3}, "invalid RRF k"),
        ("wsum", {"weights": [1.0]}, "one weight per run"),
        ("wsum", {}, "wsum needs one weight per run"),
        ("combsum", {"weights": [1.0, 2.0]}, "weights apply to wsum only"),
        ("combsum", {"norm": "max"}, "unknown normalisation"),
    ],
)
def test_bad_parameters_are_refused(method: str, params, said: str):
    with pytest.raises(InputError, match=said):
        fuse(random_runs(0, 2, ties=False), method, **params)


def test_one_run_is_refused():
    with pytest.raises(InputError, match="two runs or more"):
        fuse(random_runs(0, 1, ties=False), "rrf")
