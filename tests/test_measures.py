from __future__ import annotations

import dataclasses

import pytest

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.measures import FAMILIES, Measure, parse_measure, parse_measures

CANONICAL = [
    "nDCG@10",
    "nDCG@1",
    "P@5",
    "R@100",
    "AP",
    "AP@10",
    "RR",
    "RR@10",
    "Judged@10",
    "OracleNDCG@10",
]


@pytest.mark.parametrize("text", CANONICAL)
def test_text_round_trips(text: str) -> None:
    measure = parse_measure(text)
    assert str(measure) == text
    assert parse_measure(str(measure)) == measure
    assert repr(measure) == f"Measure({text!r})"


def test_every_registered_family_parses() -> None:
    for name, family in FAMILIES.items():
        text = f"{name}@3" if family.cutoff == "required" else name
        assert str(parse_measure(text)) == text


def test_a_measure_is_a_value() -> None:
    a, b = parse_measure("nDCG@10"), Measure("nDCG", 10)
    assert a == b and hash(a) == hash(b)
    assert a == "nDCG@10" and hash(a) == hash("nDCG@10")  # equal to its own text
    assert a != parse_measure("nDCG@5") and a != "nDCG@5"
    assert a != 10
    assert len({a, b, "nDCG@10"}) == 1
    assert {a: 1}["nDCG@10"] == 1
    assert parse_measure(a) is a
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.cutoff = 5  # type: ignore[misc]


def test_surrounding_spaces_and_leading_zeros_are_canonicalised() -> None:
    assert str(parse_measure(" P@010 ")) == "P@10"


def test_parse_measures_keeps_first_seen_order_and_drops_repeats() -> None:
    parsed = parse_measures(["RR", "nDCG@10", Measure("RR"), "nDCG@10", "P@5"])
    assert [str(m) for m in parsed] == ["RR", "nDCG@10", "P@5"]
    assert parse_measures("AP") == (Measure("AP"),)


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("NDCG_cut_10", "nDCG@10"),
        ("ndcg_cut.10", "nDCG@10"),
        ("MAP@10", "AP@10"),
        ("map", "AP"),
        ("Recall@100", "R@100"),
        ("recall_100", "R@100"),
        ("P_5", "P@5"),
        ("MRR", "RR"),
        ("recip_rank", "RR"),
        ("Oracle NDCG@10", "OracleNDCG@10"),
        ("judged@10", "Judged@10"),
    ],
)
def test_unknown_names_suggest_the_right_spelling(name: str, suggestion: str) -> None:
    with pytest.raises(UnknownNameError) as caught:
        parse_measure(name)
    message = str(caught.value)
    assert message.startswith(f"unknown measure {name!r}")
    assert message.endswith((f"did you mean {suggestion!r}?", f"known: {suggestion}"))
    assert isinstance(caught.value, KeyError)


def test_an_unknown_family_gets_candidates_with_its_cutoff() -> None:
    with pytest.raises(UnknownNameError) as caught:
        parse_measure("xyzzy@10")
    message = str(caught.value)
    assert message.startswith("unknown measure 'xyzzy@10'; did you mean")
    assert "P@10" in message  # candidates carry the cutoff the user wrote


@pytest.mark.parametrize("name", ["nDCG@0", "nDCG@-1", "nDCG@1.5", "nDCG@x", "nDCG@", "P@ 5"])
def test_bad_cutoffs_are_input_errors(name: str) -> None:
    with pytest.raises(InputError, match="cutoff"):
        parse_measure(name)


@pytest.mark.parametrize("name", ["nDCG", "P", "R", "Judged", "OracleNDCG"])
def test_families_that_need_a_cutoff_say_so(name: str) -> None:
    with pytest.raises(InputError, match=f"{name}@k"):
        parse_measure(name)


@pytest.mark.parametrize("cutoff", [0, -3, 2.0, True, "10"])
def test_the_constructor_checks_cutoffs_too(cutoff: object) -> None:
    with pytest.raises(InputError):
        Measure("P", cutoff)  # type: ignore[arg-type]


def test_the_constructor_rejects_unknown_families() -> None:
    with pytest.raises(UnknownNameError, match="nDCG"):
        Measure("ndcg", 10)


@pytest.mark.parametrize("name", ["", "@10", 10, None])
def test_malformed_names_are_input_errors(name: object) -> None:
    with pytest.raises(InputError):
        parse_measure(name)  # type: ignore[arg-type]
