"""Lucene's English analysis in pure Python: the terms the official BM25 baseline indexes.

The official baseline (BRIGHT's ``retrieval_bm25``, docs/protocol.md, The baselines against the
official harness) analyses passages and queries with pyserini's ``get_lucene_analyzer()`` defaults
(``stemming=True``,
``stemmer='porter'``, ``stopwords=True``), that is Anserini's ``DefaultEnglishAnalyzer``:
``StandardTokenizer`` -> ``EnglishPossessiveFilter`` -> ``LowerCaseFilter`` -> ``StopFilter``
(``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``) -> ``PorterStemFilter``, with Anserini's
``AnalyzerUtils`` dropping empty terms. :class:`EnglishAnalyzer` reproduces that chain
without Java:

- ``StandardTokenizer`` becomes one compiled regular expression whose character classes are
  built from :mod:`unicodedata`, tokens longer than 255 UTF-16 units chopped as Lucene's
  scanner does (:mod:`~mmbright_core.retrieval.lexical.tokenizer`).
- Lower-casing is Java's ``Character.toLowerCase`` per code point (``CharacterUtils``), not
  :meth:`str.lower`: ``İ`` becomes ``i`` and a final ``Σ`` becomes ``σ``.
- Lucene's ``PorterStemmer`` is the C "Release 3" Porter stemmer. PyStemmer's ``porter``
  is the Snowball rendering of the 1980 paper, which differs in three places that are
  corrected here (see :func:`lucene_porter`).

Each distinct raw token is analysed once and cached, so a corpus costs one regular-expression
pass plus one dictionary look-up per token.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from mmbright_core.retrieval.lexical.tokenizer import (
    MAX_TOKEN_LENGTH,
    StandardTokenizer,
    utf16_length,
)

#: ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (Lucene 9): the 33 words Anserini's
#: ``DefaultEnglishAnalyzer.newStemmingInstance`` filters.
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

#: ``EnglishPossessiveFilter``: a trailing ``'s``, ``’s`` or ``＇s`` (either case of s).
_APOSTROPHES = "'\u2019\uff07"

#: Java's ``Character.toLowerCase(int)`` where Python's one-character ``str.lower`` differs:
#: U+0130 lowers to a plain ``i`` in Java and to ``i`` + U+0307 in Python.
_JAVA_LOWER = {"\u0130": "i"}

#: Words that reach Lucene's step 3 ending in ``bli`` / ``logi``: the step 1 forms
#: (plural ``s``/``ies``, ``ed``, ``ing``, and ``y`` -> ``i``) of such stems.
_STEP1_BLI = re.compile(r"bl(?:i|y|is|ys|ies|ied|yed|ying|iing)$")
_STEP1_LOGI = re.compile(r"log(?:i|y|is|ys|ies|ied|yed|ying|iing)$")

_chain = chain.from_iterable

#: ASCII punctuation that no token starts or ends with, stripped from the ends of a piece
#: before the cache look-up so that "word," and "(word" share "word"'s entry. Kept: ``_``
#: (ExtendNumLet ends tokens: ``__init__``), ``'`` (a Hebrew letter keeps a trailing one,
#: WB7a), ``#`` and ``*`` (keycap emoji).
_EDGES = '!"$%&()+,-./:;<=>?@[\\]^`{|}~'

#: The one white space character that no token ends at: U+202F, WB ExtendNumLet
#: (``10\u202f000`` is one token). Every other white space splits.
_JOINING_SPACE = "\u202f"
_BREAKING_SPACE = re.compile(r"[^\S\u202f]+")


def _split(text: str) -> list[str]:
    """Split ``text`` where every token ends: at :meth:`str.split`'s white space but U+202F."""
    if _JOINING_SPACE not in text:
        return text.split()
    return [piece for piece in _BREAKING_SPACE.split(text) if piece]


def _measure(stem: str) -> int:
    """Return Porter's m(): the number of vowel-consonant sequences in ``stem``.

    Follows ``PorterStemmer.cons`` in Lucene: a, e, i, o, u are vowels; ``y`` is a consonant
    at the start or after a vowel, a vowel after a consonant; every other character
    (digits, punctuation, non-ASCII letters) is a consonant.
    """
    m, previous_vowel, previous_consonant = 0, False, True
    for index, ch in enumerate(stem):
        if ch in "aeiou":
            vowel = True
        elif ch == "y":
            vowel = index > 0 and previous_consonant
        else:
            vowel = False
        if previous_vowel and not vowel:
            m += 1
        previous_vowel, previous_consonant = vowel, not vowel
    return m


def lucene_porter(word: str, snowball: Callable[[str], str]) -> str:
    """Stem a lower-case word as Lucene's ``PorterStemmer`` does.

    Args:
        word: The lower-cased token.
        snowball: PyStemmer's ``porter`` ``stemWord``.

    Returns:
        The stem. Lucene's departures from the Snowball ``porter`` algorithm: words of at
        most two UTF-16 units are left alone (``stem(int)`` runs the steps only when
        ``k > k0 + 1``), step 3 rewrites ``bli`` to ``ble`` (not only ``abli``) and adds
        ``logi`` -> ``log``, each when the part before the suffix has m() > 0.
    """
    if len(word) <= 2 and utf16_length(word) <= 2:
        return word
    stem = snowball(word)
    if stem.endswith("bli") and _STEP1_BLI.search(word) and _measure(stem[:-3]) > 0:
        # Lucene continues with step 4-6 on "...ble": the Snowball steps on that word agree.
        return snowball(stem[:-3] + "ble")
    if stem.endswith("logi") and _STEP1_LOGI.search(word) and _measure(stem[:-4]) > 0:
        # "...log" passes steps 4-6 untouched.
        return stem[:-1]
    return stem


def java_lower(token: str) -> str:
    """Lower-case ``token`` one code point at a time, as Java's ``Character.toLowerCase``."""
    if token.isascii():
        return token.lower()
    return "".join(_JAVA_LOWER.get(ch) or ch.lower() for ch in token)


@dataclass(frozen=True)
class SplitBatch:
    """Texts split at white space together (:meth:`EnglishAnalyzer.split_batch`).

    Attributes:
        distinct: The distinct white-space-free pieces of the texts.
        pieces: Every piece of the texts, one text after another, as an index into
            ``distinct``.
        offsets: Where each text's pieces start in ``pieces``, and where the last ends.
    """

    distinct: list[str]
    pieces: npt.NDArray[np.int32]
    offsets: npt.NDArray[np.int64]


class EnglishAnalyzer:
    """pyserini's default English analyzer (Lucene ``StandardTokenizer`` + Porter), in Python.

    Text is split at white space first: no token rule contains a white-space character but
    U+202F (WB ExtendNumLet), at which nothing is split, so the tokenizer sees each piece as
    it would in context. Each distinct piece is analysed once and its terms cached (and each
    distinct token within pieces stemmed once), so a corpus costs one :meth:`str.split` and
    one dictionary look-up per word.

    Args:
        max_cache: Distinct pieces and tokens kept in each cache before it is emptied (bounds
            memory on very large corpora).

    Example:
        >>> EnglishAnalyzer().analyze("The ponies' caresses: John's running U.S.A. e-mail")
        ['poni', 'caress', 'john', 'run', 'u.s.a', 'e', 'mail']
    """

    def __init__(self, max_cache: int = 2_000_000) -> None:
        import Stemmer

        self._tokenizer = StandardTokenizer()
        self._snowball = Stemmer.Stemmer("porter").stemWord
        self._pieces: dict[str, tuple[str, ...]] = {}
        self._terms: dict[str, str] = {}
        self._max_cache = max_cache

    def settings(self) -> dict[str, Any]:
        """Return a JSON-ready description of the analysis chain."""
        return {
            "name": "lucene-english",
            "reference": "pyserini get_lucene_analyzer() = Anserini DefaultEnglishAnalyzer",
            "tokenizer": "StandardTokenizer (UAX#29 word breaks, Unicode 9, emoji)",
            "possessive": True,
            "lowercase": "java-per-code-point",
            "stopwords": "lucene-english-33",
            "stemmer": "porter",
            "max_token_length": MAX_TOKEN_LENGTH,
        }

    def term(self, token: str) -> str:
        """Return the term of one raw token, or ``""`` for a stop word."""
        if len(token) >= 2 and token[-1] in "sS" and token[-2] in _APOSTROPHES:
            token = token[:-2]
        lowered = java_lower(token)
        if not lowered or lowered in STOP_WORDS:
            return ""
        return lucene_porter(lowered, self._snowball)

    def tokens(self, text: str) -> list[str]:
        """Return the raw ``StandardTokenizer`` tokens of ``text`` (before any filter)."""
        return self._tokenizer.tokens(text)

    def _piece_terms(self, piece: str) -> tuple[str, ...]:
        """Return the terms of one white-space-free piece of text, through the token cache."""
        cache, terms = self._terms, []
        if len(cache) > self._max_cache:
            cache.clear()
        for token in self.tokens(piece):
            term = cache.get(token)
            if term is None:
                term = cache[token] = self.term(token)
            if term:
                terms.append(term)
        return tuple(terms)

    def analyze(self, text: str) -> list[str]:
        """Return the terms of ``text``: tokenised, possessives stripped, lowered, stemmed.

        Args:
            text: Any string (empty and whitespace-only strings give no terms).

        Returns:
            The terms in text order, stop words removed.
        """
        pieces = self._pieces
        split = _split(text)
        try:
            # All in C: look every piece up and flatten. A new piece raises KeyError.
            return list(_chain(map(pieces.__getitem__, split)))
        except KeyError:
            pass
        return list(_chain(self.piece_terms(split)))

    def analyze_spans(self, text: str) -> list[tuple[str, int, int]]:
        """Return the terms of ``text`` with where each one's token lies in ``text``.

        The terms are exactly :meth:`analyze`'s, in the same order; ``text[start:end]`` is the
        raw token a term came from (possessive included), for highlighting. Slower than
        :meth:`analyze` (no piece cache): meant for one passage or query at a time.

        Args:
            text: Any string.

        Returns:
            ``(term, start, end)`` per term, offsets in code points.
        """
        cache, out, position = self._terms, [], 0
        for piece in _split(text):
            start = text.find(piece, position)  # _split keeps pieces in order, verbatim
            position = start + len(piece)
            stripped = piece.strip(_EDGES)
            offset = start + len(piece) - len(piece.lstrip(_EDGES))
            for at, token in self._tokenizer.spans(stripped):
                term = cache.get(token)
                if term is None:
                    term = self.term(token)
                if term:
                    out.append((term, offset + at, offset + at + len(token)))
        return out

    def split_batch(self, texts: Sequence[str]) -> SplitBatch:
        """Split texts at white space together, as arrays: what an index needs.

        The texts are split in C at ASCII white space (pyarrow's ``ascii_split_whitespace``:
        space, tab, LF, VT, FF, CR, each also white space to :meth:`str.split`) and the
        pieces hashed there; only each distinct piece becomes a Python string, whose terms
        :meth:`piece_terms` gives, splitting it further where :meth:`str.split` would (at
        U+001C-U+001F, U+0085, U+3000..., never U+202F). A batch that is no valid UTF-8 (a
        lone surrogate) is split as :meth:`analyze` splits instead, to the same result.

        Args:
            texts: The texts.

        Returns:
            The distinct pieces and, per text, its pieces as indices into them.
        """
        try:
            pieces = pc.ascii_split_whitespace(pa.array(texts, pa.large_string()))
        except (pa.ArrowException, UnicodeEncodeError):
            split = [_split(text) for text in texts]
            distinct = list(dict.fromkeys(_chain(split)))
            code = {piece: i for i, piece in enumerate(distinct)}
            codes = np.fromiter(map(code.__getitem__, _chain(split)), np.int32)
            offsets = np.zeros(len(texts) + 1, np.int64)
            np.cumsum([len(pieces) for pieces in split], out=offsets[1:])
            return SplitBatch(distinct, codes, offsets)
        encoded = pc.dictionary_encode(pieces.flatten())
        codes = encoded.indices.to_numpy(zero_copy_only=False)  # int32: a block's pieces fit
        offsets = pieces.offsets.to_numpy().astype(np.int64)
        return SplitBatch(encoded.dictionary.to_pylist(), codes, offsets)

    def piece_terms(self, distinct: list[str]) -> list[tuple[str, ...]]:
        """The terms of each piece of text (as :meth:`analyze` gives them), cached.

        A piece is analysed as the parts :meth:`analyze`'s split makes of it, one after the other
        (one part for a piece :meth:`analyze` split off, free of white space).
        """
        pieces = self._pieces
        if len(pieces) > self._max_cache:
            pieces.clear()
        for piece in set(distinct).difference(pieces):
            parts = _split(piece)
            if parts == [piece]:
                pieces[piece] = self._piece_terms(piece.strip(_EDGES))
            else:
                terms = (self._piece_terms(part.strip(_EDGES)) for part in parts)
                pieces[piece] = tuple(_chain(terms))
        return [pieces[piece] for piece in distinct]

    def analyze_many(self, texts: Iterable[str]) -> Iterator[list[str]]:
        """Yield the terms of each text in turn (the caches are shared)."""
        analyze = self.analyze
        for text in texts:
            yield analyze(text)
