"""Lucene's English analysis in pure Python: the terms the official BM25 baseline indexes.

The official baseline (BRIGHT's ``retrieval_bm25``, docs/protocol.md, The baselines against the
official harness) analyses passages and queries with pyserini's ``get_lucene_analyzer()`` defaults
(``stemming=True``,
``stemmer='porter'``, ``stopwords=True``), that is Anserini's ``DefaultEnglishAnalyzer``:
``StandardTokenizer`` -> ``EnglishPossessiveFilter`` -> ``LowerCaseFilter`` -> ``StopFilter``
(``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``) -> ``PorterStemFilter``, with Anserini's
``AnalyzerUtils`` dropping empty terms. :class:`EnglishAnalyzer` reproduces that chain
without Java:

- ``StandardTokenizer`` (``StandardTokenizerImpl.jflex``: the UAX#29 word-break rules over
  Unicode 9 data, plus emoji sequences) becomes one compiled regular expression whose
  character classes are built from :mod:`unicodedata` (see :func:`token_pattern`).
- Tokens longer than 255 UTF-16 units are chopped: the scanner's buffer is
  ``maxTokenLength`` long (``%buffer 255``, ``StandardTokenizer.setMaxTokenLength``), so it
  emits the longest token that fits and scans on from its end.
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
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import chain
from typing import Any

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

#: ``StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH``, in UTF-16 code units.
MAX_TOKEN_LENGTH = 255

#: ``EnglishPossessiveFilter``: a trailing ``'s``, ``’s`` or ``＇s`` (either case of s).
_APOSTROPHES = "'\u2019\uff07"

#: Java's ``Character.toLowerCase(int)`` where Python's one-character ``str.lower`` differs:
#: U+0130 lowers to a plain ``i`` in Java and to ``i`` + U+0307 in Python.
_JAVA_LOWER = {"\u0130": "i"}

#: Words that reach Lucene's step 3 ending in ``bli`` / ``logi``: the step 1 forms
#: (plural ``s``/``ies``, ``ed``, ``ing``, and ``y`` -> ``i``) of such stems.
_STEP1_BLI = re.compile(r"bl(?:i|y|is|ys|ies|ied|yed|ying|iing)$")
_STEP1_LOGI = re.compile(r"log(?:i|y|is|ys|ies|ied|yed|ying|iing)$")

#: ASCII punctuation that no token starts or ends with, stripped from the ends of a piece
#: before the cache look-up so that "word," and "(word" share "word"'s entry. Kept: ``_``
#: (ExtendNumLet ends tokens: ``__init__``), ``'`` (a Hebrew letter keeps a trailing one,
#: WB7a), ``#`` and ``*`` (keycap emoji).
_chain = chain.from_iterable

_EDGES = '!"$%&()+,-./:;<=>?@[\\]^`{|}~'

# --- StandardTokenizer as one regular expression -------------------------------------------
# Word_Break classes of UAX#29 (Unicode 9, the data StandardTokenizerImpl.jflex is built on)
# that are not plain general categories, as inclusive code point ranges.

#: \p{Script:Han}: every ideograph is a token of its own (jflex rule ``{HanEx}``).
_HAN = ((0x2E80, 0x2E99), (0x2E9B, 0x2EF3), (0x2F00, 0x2FD5), (0x3007, 0x3007),
        (0x3021, 0x3029), (0x3038, 0x303A), (0x3400, 0x4DB5),
        (0x4E00, 0x9FEF), (0xF900, 0xFA6D), (0xFA70, 0xFAD9), (0x20000, 0x2A6D6),
        (0x2A700, 0x2B734), (0x2B740, 0x2FA1F))  # fmt: skip
#: \p{Script:Hiragana}: one token per character (jflex rule ``{HiraganaEx}``).
_HIRAGANA = ((0x3041, 0x3096), (0x309D, 0x309F), (0x1B001, 0x1B11E), (0x1B150, 0x1B152),
             (0x1F200, 0x1F200))  # fmt: skip
#: \p{WB:Katakana}: runs of it are one token (WB13), joined only by ExtendNumLet.
_KATAKANA = ((0x3031, 0x3035), (0x309B, 0x309C), (0x30A0, 0x30FA), (0x30FC, 0x30FF),
             (0x31F0, 0x31FF), (0x32D0, 0x32FE), (0x3300, 0x3357), (0xFF66, 0xFF9D),
             (0x1B000, 0x1B000), (0x1B164, 0x1B167))  # fmt: skip
#: Scripts with \p{LB:Complex_Context} letters and marks (Thai, Lao, Myanmar, Khmer, Tai
#: scripts, Ahom): a run of them is one token (jflex rule ``{ComplexContextEx}+``).
_SOUTHEAST_ASIAN = ((0x0E00, 0x0EFF), (0x1000, 0x109F), (0x1780, 0x17FF), (0x1950, 0x19FF),
                    (0x1A20, 0x1AAF), (0xA9E0, 0xA9FF), (0xAA60, 0xAADF),
                    (0x11700, 0x1174F))  # fmt: skip
#: Symbols of those scripts that are Complex_Context as well (checked against Lucene).
_SOUTHEAST_ASIAN_SIGNS = ((0x109E, 0x109F), (0x19DA, 0x19DA), (0x19DE, 0x19DF), (0x1AA0, 0x1AA6),
                          (0x1AA8, 0x1AAD), (0xAA77, 0xAA79), (0xAADE, 0xAADF),
                          (0x1173A, 0x1173B), (0x1173F, 0x1173F))  # fmt: skip
#: Ideographs outside Han (Ideographic=Yes, so not ALetter: WB Other, never in a token):
#: 〆, Tangut, Khitan, Nüshu.
_OTHER_IDEOGRAPHS = ((0x3006, 0x3006), (0x17000, 0x18D08), (0x1B170, 0x1B2FB))
#: Extend beyond the marks: halfwidth sound marks, emoji skin tones (Lucene joins a🏻b).
_MORE_EXTEND = ((0xFF9E, 0xFF9F), (0x1F3FB, 0x1F3FF))
#: \p{WB:Hebrew_Letter} (WB7a-c: a trailing ' and an inner " are kept).
_HEBREW = ((0x05D0, 0x05EA), (0x05EF, 0x05F2), (0xFB1D, 0xFB1D), (0xFB1F, 0xFB28),
           (0xFB2A, 0xFB4F))  # fmt: skip
#: Characters that are \p{WB:ALetter} without being letters (UAX#29 table 3): modifier
#: symbols, and the circled / squared Latin letters (Other_Alphabetic).
_EXTRA_LETTERS = ((0x02C2, 0x02C5), (0x02D2, 0x02D7), (0x02DE, 0x02DF), (0x02ED, 0x02ED),
                  (0x02EF, 0x02FF), (0x055B, 0x055C), (0x055E, 0x055E),
                  (0x05F3, 0x05F3), (0x24B6, 0x24E9),
                  (0xA720, 0xA721), (0xA789, 0xA78A), (0xAB5B, 0xAB5B), (0x1F130, 0x1F149),
                  (0x1F150, 0x1F169), (0x1F170, 0x1F189))  # fmt: skip
#: Extended_Pictographic (Lucene's UnicodeEmojiProperties.jflex): emoji sequences are
#: tokens (jflex rule ``EMOJI_TYPE``); © ® ™ and arrows such as ↔ included.
_PICTOGRAPHIC = ((0xA9, 0xA9), (0xAE, 0xAE), (0x203C, 0x203C), (0x2049, 0x2049),
                 (0x2122, 0x2122), (0x2139, 0x2139), (0x2194, 0x2199), (0x21A9, 0x21AA),
                 (0x231A, 0x231B), (0x2328, 0x2328), (0x2388, 0x2388), (0x23CF, 0x23CF),
                 (0x23E9, 0x23F3), (0x23F8, 0x23FA), (0x24C2, 0x24C2), (0x25AA, 0x25AB),
                 (0x25B6, 0x25B6), (0x25C0, 0x25C0), (0x25FB, 0x25FE), (0x2600, 0x2605),
                 (0x2607, 0x2612), (0x2614, 0x2685), (0x2690, 0x2705), (0x2708, 0x2712),
                 (0x2714, 0x2714), (0x2716, 0x2716), (0x271D, 0x271D), (0x2721, 0x2721),
                 (0x2728, 0x2728), (0x2733, 0x2734), (0x2744, 0x2744), (0x2747, 0x2747),
                 (0x274C, 0x274C), (0x274E, 0x274E), (0x2753, 0x2755), (0x2757, 0x2757),
                 (0x2763, 0x2767), (0x2795, 0x2797), (0x27A1, 0x27A1), (0x27B0, 0x27B0),
                 (0x27BF, 0x27BF), (0x2934, 0x2935), (0x2B05, 0x2B07), (0x2B1B, 0x2B1C),
                 (0x2B50, 0x2B50), (0x2B55, 0x2B55), (0x3030, 0x3030), (0x303D, 0x303D),
                 (0x3297, 0x3297), (0x3299, 0x3299), (0x1F000, 0x1F0FF), (0x1F10D, 0x1F10F),
                 (0x1F12F, 0x1F12F), (0x1F16C, 0x1F16F), (0x1F18E, 0x1F18E),
                 (0x1F191, 0x1F19A), (0x1F1AD, 0x1F1E5), (0x1F201, 0x1F20F),
                 (0x1F21A, 0x1F21A), (0x1F22F, 0x1F22F), (0x1F232, 0x1F23A),
                 (0x1F23C, 0x1F23F), (0x1F249, 0x1F3FA), (0x1F400, 0x1F53D),
                 (0x1F546, 0x1F64F), (0x1F680, 0x1F6FF), (0x1F774, 0x1F77F),
                 (0x1F7D5, 0x1F7FF), (0x1F80C, 0x1F80F), (0x1F848, 0x1F84F),
                 (0x1F85A, 0x1F85F), (0x1F888, 0x1F88F), (0x1F8AE, 0x1F8FF),
                 (0x1F90C, 0x1F93A), (0x1F93C, 0x1F945), (0x1F947, 0x1FAFF),
                 (0x1FB00, 0x1FBCA), (0x1FBF0, 0x1FBF9), (0x1FC00, 0x1FFFD))  # fmt: skip

#: WB MidLetter (the colon included: ``foo:bar`` is one token), MidNumLet and MidNum.
_MID_LETTER = "\u003a\u00b7\u0387\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM_LET = "\u002e\u2018\u2019\u2024\ufe52\uff07\uff0e"
_MID_NUM = (
    "\u002c\u003b\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
)
_LETTER_CATEGORIES = frozenset({"Lu", "Ll", "Lt", "Lm", "Lo", "Nl"})
_SCANNED = (*range(0x40000), *range(0xE0000, 0xE1000))  # assigned planes


def _region_table() -> bytearray:
    """Return a code point -> region lookup; later regions override earlier ones.

    Regions: 0 none, 1 pictograph, 2 extra letter, 3 SE Asian, 4 Katakana, 5 Hiragana,
    6 Han, 7 SE Asian sign, 8 other ideograph, 9 extend.
    """
    table = bytearray(0x110000)
    regions = (_PICTOGRAPHIC, _EXTRA_LETTERS, _SOUTHEAST_ASIAN, _KATAKANA, _HIRAGANA, _HAN,
               _SOUTHEAST_ASIAN_SIGNS, _OTHER_IDEOGRAPHS, _MORE_EXTEND)  # fmt: skip
    for value, ranges in enumerate(regions, start=1):
        for low, high in ranges:
            table[low : high + 1] = bytes([value]) * (high + 1 - low)
    return table


def _char_class(codes: Iterable[int]) -> str:
    """Return a regular-expression character class matching exactly ``codes``."""
    codes, parts, index = sorted(codes), [], 0
    if not codes:
        return "(?!)"  # matches nothing
    while index < len(codes):
        end = index
        while end + 1 < len(codes) and codes[end + 1] == codes[end] + 1:
            end += 1
        low, high = re.escape(chr(codes[index])), re.escape(chr(codes[end]))
        parts.append(low if end == index else f"{low}-{high}")
        index = end + 1
    return "[" + "".join(parts) + "]"


@lru_cache(maxsize=2)
def token_pattern(ascii_only: bool = False) -> re.Pattern[str]:
    """Compile ``StandardTokenizerImpl.jflex`` into one regular expression.

    Args:
        ascii_only: Build the same grammar over ASCII alone: much faster on ASCII text, on
            which it gives the same tokens.

    Every alternative starts on a different class of character, so Python's first match
    is jflex's longest match. Word_Break classes come from :mod:`unicodedata`, checked code
    point by code point against Lucene 9.5 (``benchmarks/analyzer_agreement.py``); the one
    known difference: letters assigned after Unicode 12 (Vithkuqi, CJK extension G...) are
    tokens here and ignored by Lucene 9.5.
    """
    classes: dict[str, list[int]] = {key: [] for key in "EHIKSNLWP"}
    region = _region_table()
    for code in range(128) if ascii_only else _SCANNED:
        category, where = unicodedata.category(chr(code)), region[code]
        if (where == 3 and category[0] in "LM") or where == 7:
            classes["S"].append(code)
        if where == 8:
            continue
        if where == 9 or category in ("Mn", "Me", "Mc") or (category == "Cf" and code != 0x200B):
            classes["E"].append(code)  # WB4: Extend | Format | ZWJ attach to what precedes
        elif where in (4, 5, 6):
            classes["KIH"[where - 4]].append(code)
        elif where == 1 and code >= 0x1FB00:
            classes["P"].append(code)  # symbols and segmented digits Lucene emits one by one
        elif category == "Nd" or code == 0x066B:
            classes["N"].append(code)  # WB Numeric
        elif category == "Pc":
            classes["W"].append(code)  # WB ExtendNumLet: foo_bar, __init__
        elif where in (3, 7):
            continue
        elif category in _LETTER_CATEGORIES or where == 2:
            classes["L"].append(code)  # WB ALetter | Hebrew_Letter (Hangul included)
        elif where == 1:
            classes["P"].append(code)
    c = {key: _char_class(codes) for key, codes in classes.items()}
    ext = c["E"] + "*" if classes["E"] else ""
    hebrew_codes = [] if ascii_only else [r for a, b in _HEBREW for r in range(a, b + 1)]
    letter, number, connector = f"{c['L']}{ext}", f"{c['N']}{ext}", f"{c['W']}{ext}"
    katakana, hebrew = f"{c['K']}{ext}", f"{_char_class(hebrew_codes)}{ext}"
    mid_letter = f"[{re.escape(_MID_LETTER + _MID_NUM_LET)}']{ext}"
    mid_num = f"[{re.escape(_MID_NUM + _MID_NUM_LET)}']{ext}"
    # WB5-7 and WB9-13b: letters joined by one MidLetter / MidNumLet / ' (e.g, U.S.A,
    # don't), digits by one MidNum / MidNumLet / ' (3.14, 1,000), letters and digits
    # directly (mp3, h2o), anything by ExtendNumLet (foo_bar); hyphens, slashes and @ split.
    letters = f"{letter}(?:(?:{connector})*{letter}|{mid_letter}{letter})*"
    numbers = f"{number}(?:(?:{connector})*{number}|{mid_num}{number})*"
    hebrews = f"{hebrew}(?:'{ext}|\"{ext}{hebrew})"
    core = f"(?:{katakana}(?:(?:{connector})*{katakana})*|(?:{hebrews}|{numbers}|{letters})+)"
    word = f"(?:{connector})*{core}(?:(?:{connector})+{core})*(?:{connector})*"
    # Emoji sequences (UTS #51 as in the jflex EMOJI rule): pictographs with modifiers,
    # presentation selectors and tags, joined by ZWJ; keycaps; regional indicator pairs.
    joiners = [code for code in classes["E"] if code != 0x200D]
    plain_ext = f"{_char_class(joiners)}*" if joiners else ""
    modifier = "[\U0001f3fb-\U0001f3ff]"
    unit = f"(?:{c['P']}{plain_ext}(?:{modifier}{plain_ext})?|{modifier}{plain_ext})"
    regional = f"[\U0001f1e6-\U0001f1ff]{plain_ext}"
    emoji = f"\u200d*{unit}(?:\u200d+{unit})*\u200d*|[#*]\ufe0f?\u20e3{ext}|{regional}{regional}"
    southeast_asian = f"(?:{c['S']}{ext})+"
    return re.compile(f"{word}|{emoji}|{southeast_asian}|{c['H']}{ext}|{c['I']}{ext}")


def _utf16_length(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units (Java's ``String.length``)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


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
    if len(word) <= 2 and _utf16_length(word) <= 2:
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


class EnglishAnalyzer:
    """pyserini's default English analyzer (Lucene ``StandardTokenizer`` + Porter), in Python.

    Text is split at white space first: no token rule contains a white-space character, so
    the tokenizer sees each piece as it would in context. Each distinct piece is analysed
    once and its terms cached (and each distinct token within pieces stemmed once), so a
    corpus costs one :meth:`str.split` and one dictionary look-up per word.

    Args:
        max_cache: Distinct pieces and tokens kept in each cache before it is emptied (bounds
            memory on very large corpora).

    Example:
        >>> EnglishAnalyzer().analyze("The ponies' caresses: John's running U.S.A. e-mail")
        ['poni', 'caress', 'john', 'run', 'u.s.a', 'e', 'mail']
    """

    def __init__(self, max_cache: int = 2_000_000) -> None:
        import Stemmer

        self._pattern = token_pattern()
        self._ascii_findall = token_pattern(ascii_only=True).findall
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
        tokens = (self._ascii_findall if text.isascii() else self._pattern.findall)(text)
        if all(len(token) <= MAX_TOKEN_LENGTH // 2 for token in tokens):
            return tokens
        return [token for _, token in self._chopped(text)]

    def _token_spans(self, text: str) -> list[tuple[int, str]]:
        """Return :meth:`tokens` of ``text`` with the offset each starts at."""
        pattern = token_pattern(ascii_only=True) if text.isascii() else self._pattern
        found = [(m.start(), m.group()) for m in pattern.finditer(text)]
        if all(len(token) <= MAX_TOKEN_LENGTH // 2 for _, token in found):
            return found
        return list(self._chopped(text))

    def _chopped(self, text: str) -> Iterator[tuple[int, str]]:
        """Scan ``text`` token by token (start, token), chopping tokens longer than the buffer."""
        search, match, position = self._pattern.search, self._pattern.match, 0
        while (found := search(text, position)) is not None:
            token, start = found.group(), found.start()
            if _utf16_length(token) > MAX_TOKEN_LENGTH:
                # The scanner sees 255 units at most and emits the longest token among them.
                end = start + MAX_TOKEN_LENGTH
                while _utf16_length(text[start:end]) > MAX_TOKEN_LENGTH:
                    end -= 1
                short = match(text, start, end)
                token = short.group() if short is not None else text[start:end]
            yield start, token
            position = start + len(token)

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
        split = text.split()
        try:
            # All in C: look every piece up and flatten. A new piece raises KeyError.
            return list(_chain(map(pieces.__getitem__, split)))
        except KeyError:
            pass
        if len(pieces) > self._max_cache:
            pieces.clear()
        for piece in set(split).difference(pieces):
            pieces[piece] = self._piece_terms(piece.strip(_EDGES))
        return list(_chain(map(pieces.__getitem__, split)))

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
        for piece in text.split():
            start = text.find(piece, position)  # split() keeps pieces in order, verbatim
            position = start + len(piece)
            stripped = piece.strip(_EDGES)
            offset = start + len(piece) - len(piece.lstrip(_EDGES))
            for at, token in self._token_spans(stripped):
                term = cache.get(token)
                if term is None:
                    term = self.term(token)
                if term:
                    out.append((term, offset + at, offset + at + len(token)))
        return out

    def analyze_many(self, texts: Iterable[str]) -> Iterator[list[str]]:
        """Yield the terms of each text in turn (the caches are shared)."""
        analyze = self.analyze
        for text in texts:
            yield analyze(text)
