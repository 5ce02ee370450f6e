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
from mmbright_core.retrieval.lexical.tokenizer import (
    MAX_TOKEN_LENGTH,
    StandardTokenizer,
    token_pattern,
    utf16_length,
)


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


def _scanned(text: str) -> list[tuple[int, str]]:
    """Lucene's scanning, step by step: from where the last token ended, the next match of
    the grammar whole; past 255 UTF-16 units, the longest token within the first 255."""
    pattern, position, found = token_pattern(inside=True), 0, []
    while (whole := pattern.search(text, position)) is not None:
        start, token = whole.start(), whole.group()
        if utf16_length(token) > MAX_TOKEN_LENGTH:
            stop = start + MAX_TOKEN_LENGTH
            while utf16_length(text[start:stop]) > MAX_TOKEN_LENGTH:
                stop -= 1
            short = pattern.match(text, start, stop)
            token = short.group() if short is not None else text[start:stop]
        found.append((start, token))
        position = start + len(token)
    return found


# Runs of what joins a token or ends it: "_", marks, ZWJ, emoji modifiers, regional
# indicators, Thai vowels (a token of their own and a mark), letters and separators.
MOTIF = st.text(
    st.sampled_from("a9_.',#*\u0301\u0e31\u200d\ufe0f\u20e3😀🏻🇦🇨漢カא𐐀 "), min_size=1, max_size=3
)
RUNS = st.lists(st.tuples(MOTIF, st.sampled_from([1, 2, 40, 130, 300])), max_size=5)


@settings(max_examples=300, deadline=None)
@given(RUNS)
def test_long_tokens_are_cut_as_the_scanner_cuts_them(runs: list[tuple[str, int]]) -> None:
    text = "".join(motif * times for motif, times in runs)
    tokenizer = StandardTokenizer()
    assert tokenizer.spans(text) == _scanned(text)
    assert tokenizer.tokens(text) == [token for _, token in _scanned(text)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("size", [200_000, 1_000_000])
def test_a_one_word_text_of_a_megabyte_is_cut_in_time_proportional_to_it(size: int) -> None:
    # Each cut once searched the rest of the word: a megabyte took minutes.
    tokenizer = StandardTokenizer()
    cuts = range(0, size, MAX_TOKEN_LENGTH)
    assert tokenizer.tokens("a" * size) == ["a" * len(range(c, size)[:255]) for c in cuts]
    # The 255 units of each window end with ".", which no token ends with: 254 kept.
    dotted = ("ab." * size)[:size]
    assert tokenizer.tokens(dotted) == [dotted[c : c + 254].rstrip(".") for c in cuts]
    # A run of "_" holds no token, and after the first cut none of a word's trailing "_"
    # starts one (no letter follows); each start inside the run once read the rest of it.
    assert tokenizer.tokens("_" * size) == []
    assert tokenizer.tokens("x" + "_" * size + " y") == ["x" + "_" * 254, "y"]
    # Before a letter, each "_" of the run starts one: cut every 255 characters.
    joined = "x" + "_" * size + "y"
    assert tokenizer.tokens(joined) == [joined[c : c + 255] for c in range(0, size + 2, 255)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("start", ["\U0001f3fb", "\U0001f600", "\U0001f600\ufe0f\u200d\U0001f3fb"])
def test_a_run_of_zwj_that_joins_nothing_is_read_once(start: str) -> None:
    # A run of ZWJ after an emoji modifier, matched by a loop of runs, was tried split in
    # every way before the match gave up on it: 40 took hours.
    # pyserini: the run stays in the emoji's token.
    assert StandardTokenizer().tokens(start + "\u200d" * 40 + "x") == [start + "\u200d" * 40, "x"]
