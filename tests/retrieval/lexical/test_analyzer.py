"""The Python re-implementation of pyserini's default analyzer (Lucene's English chain).

Expected values are Lucene's documented behaviour: cases from Lucene's own tests (named in
comments) and outputs of pyserini 0.22.1's ``Analyzer(get_lucene_analyzer())``.
"""

from __future__ import annotations

import itertools
import json

import pytest
from analyzer_cases import CASES
from hypothesis import given, settings
from hypothesis import strategies as st

from mmbright_core.retrieval.lexical.analyzer import STOP_WORDS, EnglishAnalyzer, java_lower


@pytest.fixture(scope="module")
def analyzer() -> EnglishAnalyzer:
    return EnglishAnalyzer()


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_analyze(analyzer: EnglishAnalyzer, text: str, expected: list[str]) -> None:
    assert analyzer.analyze(text) == expected


def test_second_call_uses_the_cache_and_agrees(analyzer: EnglishAnalyzer) -> None:
    text = "The dogs' owners were running, and (running) again."
    assert (
        analyzer.analyze(text)
        == analyzer.analyze(text)
        == ["dog", "owner", "were", "run", "run", "again"]
    )


def test_tokens_longer_than_255_are_chopped(analyzer: EnglishAnalyzer) -> None:
    # StandardTokenizer's buffer is maxTokenLength (255) long: the rest is a new token.
    assert [len(t) for t in analyzer.tokens("a" * 300)] == [255, 45]
    assert analyzer.tokens("x" * 255 + "'s") == ["x" * 255, "s"]
    assert [len(t) for t in analyzer.tokens("a" * 254 + "bcd")] == [255, 2]


def test_analyze_many_matches_analyze(analyzer: EnglishAnalyzer) -> None:
    texts = ["first text", "", "Second TEXT's"]
    assert list(analyzer.analyze_many(texts)) == [["first", "text"], [], ["second", "text"]]


def test_stop_words_are_lucenes_33() -> None:
    assert len(STOP_WORDS) == 33
    assert {"a", "the", "with", "will", "such"} <= STOP_WORDS
    assert "i" not in STOP_WORDS and "can" not in STOP_WORDS


def test_java_lower_differs_from_str_lower() -> None:
    assert java_lower("İ") == "i" and "İ".lower() != "i"
    assert java_lower("ΟΣ") == "οσ" and "ΟΣ".lower() == "ος"


def test_settings_are_json_ready(analyzer: EnglishAnalyzer) -> None:
    settings = json.loads(json.dumps(analyzer.settings()))
    assert settings["name"] == "lucene-english"
    assert settings["stemmer"] == "porter"
    assert settings["max_token_length"] == 255


def _batch_terms(analyzer: EnglishAnalyzer, texts: list[str]) -> list[list[str]]:
    """Each text's terms as an index reads them: split together, each distinct piece once."""
    batch = analyzer.split_batch(texts)
    terms = analyzer.piece_terms(batch.distinct)
    pieces = batch.pieces.tolist()
    bounds = batch.offsets.tolist()
    return [[t for p in pieces[a:b] for t in terms[p]] for a, b in itertools.pairwise(bounds)]


def test_texts_split_together_give_lucenes_terms_on_every_case() -> None:
    texts = [text for text, _ in CASES]
    assert _batch_terms(EnglishAnalyzer(), texts) == [expected for _, expected in CASES]


# Every character str.split splits at, and the characters around them that word breaks
# care about (format, extend, CR LF, apostrophes, digits).
SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
)
TEXT = st.text(
    st.sampled_from(SPACES + "aé'’s.,-_1\u200b\u200d\u0301\u00ad日ไ😀İΣ")
    | st.characters(codec="utf-8"),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(TEXT, max_size=6))
def test_texts_split_together_give_what_analyze_gives(texts: list[str]) -> None:
    assert _batch_terms(EnglishAnalyzer(), texts) == [EnglishAnalyzer().analyze(t) for t in texts]


def test_a_lone_surrogate_is_split_as_str_split_splits() -> None:
    # No UTF-8 spells a lone surrogate, so pyarrow cannot take it: str.split splits instead.
    texts = ["caresses \ud800 ponies", "", "  running\u3000"]
    assert _batch_terms(EnglishAnalyzer(), texts) == [["caress", "poni"], [], ["run"]]
