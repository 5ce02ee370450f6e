"""The Python re-implementation of pyserini's default analyzer (Lucene's English chain).

Expected values are Lucene's documented behaviour: cases from Lucene's own tests (named in
comments) and outputs of pyserini 0.22.1's ``Analyzer(get_lucene_analyzer())``.
"""

from __future__ import annotations

import json

import pytest

from mmbright_core.retrieval.analyzer import STOP_WORDS, EnglishAnalyzer, java_lower

CASES = [
    # TestEnglishAnalyzer.testBasics: stemming, stop words, the three possessive apostrophes.
    ("books book the", ["book", "book"]),
    ("steven's steven\u2019s steven\uff07s", ["steven", "steven", "steven"]),
    # TestPorterStemFilter / Porter's paper examples.
    ("running ponies caresses relational hopefulness", ["run", "poni", "caress", "relat", "hope"]),
    # Lucene's PorterStemmer departures from Snowball porter: bli -> ble, logi -> log,
    # words of two letters untouched.
    ("possibly analogy biology us", ["possibl", "analog", "biologi", "us"]),
    # TestStandardAnalyzer.testApostrophesSA: apostrophes are word-internal.
    ("O'Reilly don't rock'n'roll John's", ["o'reilli", "don't", "rock'n'rol", "john"]),
    # TestStandardAnalyzer.testNumericSA: numbers with dots and commas stay whole.
    ("21.35 R2D2 C3PO 1,000 3.14 v1.2.3", ["21.35", "r2d2", "c3po", "1,000", "3.14", "v1.2.3"]),
    # Letters joined by MidLetter (colon included) / MidNumLet; digits not by a colon;
    # "a" of "a.1" is a stop word.
    ("U.S.A. e.g. foo:bar 3:00 a.1", ["u.s.a", "e.g", "foo:bar", "3", "00", "1"]),
    # ExtendNumLet joins, hyphens split.
    (
        "foo_bar __init__ e-mail state-of-the-art",
        ["foo_bar", "__init__", "e", "mail", "state", "art"],
    ),
    # StandardTokenizer is not UAX29URLEmailTokenizer: URLs and e-mails split at / : @.
    (
        "http://www.example.com/path john.doe@example.com",
        ["http", "www.example.com", "path", "john.do", "example.com"],
    ),
    # Non-ASCII letters; Java's per-code-point lower-casing (no final sigma, İ -> i).
    ("Straße naïve ΣΟΦΟΣ İstanbul Привет", ["straße", "naïv", "σοφοσ", "istanbul", "привет"]),
    # Han and Hiragana one character each, Katakana and Hangul runs, Thai runs.
    (
        "日本語 ひらがな カタカナ 한국어 ไทยภาษา",
        ["日", "本", "語", "ひ", "ら", "が", "な", "カタカナ", "한국어", "ไทยภาษา"],
    ),
    # Emoji are tokens (StandardTokenizer's EMOJI type); © ™ too, but not ½ or ².
    ("I ❤️ 👍🏽 🇺🇸 © ™ ½ x²", ["i", "❤️", "👍🏽", "🇺🇸", "©", "™", "x"]),
    # Format characters stay inside words; a zero-width space splits.
    ("hy\u00adphen zero\u200bwidth", ["hy\u00adphen", "zero", "width"]),
    ("", []),
    (" \t\n  ", []),
    ("The AND a an of", []),
]


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
