"""Lucene's ``StandardTokenizer`` in pure Python: one regular expression over Unicode data.

``StandardTokenizer`` (``StandardTokenizerImpl.jflex``: the UAX#29 word-break rules over
Unicode 9 data, plus emoji sequences) becomes one compiled regular expression whose character
classes are built from :mod:`unicodedata` (see :func:`token_pattern`). Tokens longer than 255
UTF-16 units are chopped: the scanner's buffer is ``maxTokenLength`` long (``%buffer 255``,
``StandardTokenizer.setMaxTokenLength``), so it emits the longest token that fits and scans on
from its end. It is the first stage of the English analysis
(:class:`~mmbright_core.retrieval.lexical.analyzer.EnglishAnalyzer`).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from collections.abc import Iterable, Iterator
from functools import lru_cache

#: ``StandardAnalyzer.DEFAULT_MAX_TOKEN_LENGTH``, in UTF-16 code units.
MAX_TOKEN_LENGTH = 255


def _ranges(spec: str) -> tuple[tuple[int, int], ...]:
    """Parse code points written as the Unicode data files do: ``0E00..0EFF 3007``."""
    found = []
    for item in spec.split():
        low, _, high = item.partition("..")
        found.append((int(low, 16), int(high or low, 16)))
    return tuple(found)


# Word_Break classes of UAX#29 (Unicode 9, the data StandardTokenizerImpl.jflex is built on)
# that are not plain general categories, as inclusive code point ranges.

#: \p{Script:Han}: every ideograph is a token of its own (jflex rule ``{HanEx}``).
_HAN = _ranges(
    "2E80..2E99 2E9B..2EF3 2F00..2FD5 3007 3021..3029 3038..303A 3400..4DB5 4E00..9FEF "
    "F900..FA6D FA70..FAD9 20000..2A6D6 2A700..2B734 2B740..2FA1F"
)
#: \p{Script:Hiragana}: one token per character (jflex rule ``{HiraganaEx}``).
_HIRAGANA = _ranges("3041..3096 309D..309F 1B001..1B11E 1B150..1B152 1F200")
#: \p{WB:Katakana}: runs of it are one token (WB13), joined only by ExtendNumLet.
_KATAKANA = _ranges(
    "3031..3035 309B..309C 30A0..30FA 30FC..30FF 31F0..31FF 32D0..32FE 3300..3357 FF66..FF9D "
    "1B000 1B164..1B167"
)
#: Scripts with \p{LB:Complex_Context} letters and marks (Thai, Lao, Myanmar, Khmer, Tai
#: scripts, Ahom): a run of them is one token (jflex rule ``{ComplexContextEx}+``). U+1A7F,
#: Tai Tham's cryptogrammic dot, is a combining mark of no script's lines (LB CM): left out.
_SOUTHEAST_ASIAN = _ranges(
    "0E00..0EFF 1000..109F 1780..17FF 1950..19FF 1A20..1A7E 1A80..1AAF A9E0..A9FF AA60..AADF "
    "11700..1174F"
)
#: Symbols of those scripts that are Complex_Context as well (checked against Lucene).
_SOUTHEAST_ASIAN_SIGNS = _ranges(
    "109E..109F 19DA 19DE..19DF 1AA0..1AA6 1AA8..1AAD AA77..AA79 AADE..AADF 1173A..1173B 1173F"
)
#: Ideographs outside Han (Ideographic=Yes, so not ALetter: WB Other, never in a token):
#: 〆, Tangut, Khitan, Nüshu.
_OTHER_IDEOGRAPHS = _ranges("3006 17000..18D08 1B170..1B2FB")
#: Extend beyond the marks: halfwidth sound marks, emoji skin tones (Lucene joins a🏻b).
_MORE_EXTEND = _ranges("FF9E..FF9F 1F3FB..1F3FF")
#: \p{WB:Hebrew_Letter} (WB7a-c: a trailing ' and an inner " are kept).
_HEBREW = _ranges("05D0..05EA 05EF..05F2 FB1D FB1F..FB28 FB2A..FB4F")
#: Characters that are \p{WB:ALetter} without being letters (UAX#29 table 3): modifier
#: symbols, and the circled / squared Latin letters (Other_Alphabetic).
_EXTRA_LETTERS = _ranges(
    "02C2..02C5 02D2..02D7 02DE..02DF 02ED 02EF..02FF 055B..055C 055E 05F3 24B6..24E9 "
    "A720..A721 A789..A78A AB5B 1F130..1F149 1F150..1F169 1F170..1F189"
)
#: Extended_Pictographic (Lucene's UnicodeEmojiProperties.jflex): emoji sequences are
#: tokens (jflex rule ``EMOJI_TYPE``); © ® ™ and arrows such as ↔ included.
_PICTOGRAPHIC = _ranges(
    "00A9 00AE 203C 2049 2122 2139 2194..2199 21A9..21AA 231A..231B 2328 2388 23CF 23E9..23F3 "
    "23F8..23FA 24C2 25AA..25AB 25B6 25C0 25FB..25FE 2600..2605 2607..2612 2614..2685 "
    "2690..2705 2708..2712 2714 2716 271D 2721 2728 2733..2734 2744 2747 274C 274E 2753..2755 "
    "2757 2763..2767 2795..2797 27A1 27B0 27BF 2934..2935 2B05..2B07 2B1B..2B1C 2B50 2B55 "
    "3030 303D 3297 3299 1F000..1F0FF 1F10D..1F10F 1F12F 1F16C..1F16F 1F18E 1F191..1F19A "
    "1F1AD..1F1E5 1F201..1F20F 1F21A 1F22F 1F232..1F23A 1F23C..1F23F 1F249..1F3FA "
    "1F400..1F53D 1F546..1F64F 1F680..1F6FF 1F774..1F77F 1F7D5..1F7FF 1F80C..1F80F "
    "1F848..1F84F 1F85A..1F85F 1F888..1F88F 1F8AE..1F8FF 1F90C..1F93A 1F93C..1F945 "
    "1F947..1FAFF 1FB00..1FBCA 1FBF0..1FBF9 1FC00..1FFFD"
)

#: WB MidLetter (the colon included: ``foo:bar`` is one token), MidNumLet and MidNum.
_MID_LETTER = "\u003a\u00b7\u0387\u05f4\u2027\ufe13\ufe55\uff1a"
_MID_NUM_LET = "\u002e\u2018\u2019\u2024\ufe52\uff07\uff0e"
_MID_NUM = (
    "\u002c\u003b\u037e\u0589\u060c\u060d\u066c\u07f8\u2044\ufe10\ufe14\ufe50\ufe54\uff0c\uff1b"
)
#: U+202F, the one space that is WB ExtendNumLet: it joins ``10\u202f000`` into one token.
_NARROW_NO_BREAK_SPACE = 0x202F
#: The presentation selectors U+FE0E and U+FE0F: WB Extend, but an emoji sequence holds at
#: most one U+FE0F, right after its character's other marks, and never U+FE0E (the jflex
#: macro ``ExtFmtZwjSansPresSel``): ``\u2764\ufe0e`` is the token ``\u2764``.
_PRESENTATION_SELECTORS = (0xFE0E, 0xFE0F)
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


@lru_cache(maxsize=4)
def token_pattern(ascii_only: bool = False, *, inside: bool = False) -> re.Pattern[str]:
    """Compile ``StandardTokenizerImpl.jflex`` into one regular expression.

    Args:
        ascii_only: Build the same grammar over ASCII alone: much faster on ASCII text, on
            which it gives the same tokens.
        inside: Match from anywhere, inside a run of ``_`` (ExtendNumLet) or of ZWJ too:
            where the rest of a chopped token starts. Without it, such a run starts a
            token only from its first character, which is where a search reaches it: a
            search from the end of one token finds the same next token, in time linear in
            a run of ``_`` that no letter follows (tried from each of its characters, the
            run was read again from each).

    Every alternative starts on a different class of character, so Python's first match
    is jflex's longest match. Word_Break classes come from :mod:`unicodedata`, checked code
    point by code point against Lucene 9.5 (``benchmarks/analyzer_agreement.py``); the one
    known difference: letters assigned after Unicode 12 (Vithkuqi, CJK extension G...) are
    tokens here and ignored by Lucene 9.5.
    """
    return re.compile("|".join(_rules(ascii_only, inside).values()))


def _rules(ascii_only: bool, inside: bool) -> dict[str, str]:
    """The grammar's rules (:func:`token_pattern`), by name, in the order they are tried."""
    classes = _word_break_classes(ascii_only)
    c = {key: _char_class(codes) for key, codes in classes.items()}
    ext = c["E"] + "*" if classes["E"] else ""
    hebrew_codes = [] if ascii_only else [r for a, b in _HEBREW for r in range(a, b + 1)]
    return {
        "word": _word_rule(c, ext, f"{_char_class(hebrew_codes)}{ext}", inside),
        "emoji": _emoji_rule(c["P"], [code for code in classes["E"] if code != 0x200D], inside),
        "southeast_asian": f"(?:{c['S']}{ext})+",
        "han": f"{c['H']}{ext}",
        "hiragana": f"{c['I']}{ext}",
    }


@lru_cache(maxsize=2)
def _word_break_classes(ascii_only: bool) -> dict[str, list[int]]:
    """Return the code points of each class the grammar starts a rule on.

    Keys: E extend, H Han, I Hiragana, K Katakana, S South-East Asian, N numeric,
    L letter, W ExtendNumLet, P pictograph.
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
        elif category == "Pc" or code == _NARROW_NO_BREAK_SPACE:
            classes["W"].append(code)  # WB ExtendNumLet: foo_bar, __init__, 10\u202f000
        elif where in (3, 7):
            continue
        elif category in _LETTER_CATEGORIES or where == 2:
            classes["L"].append(code)  # WB ALetter | Hebrew_Letter (Hangul included)
        elif where == 1:
            classes["P"].append(code)
    return classes


def _word_rule(c: dict[str, str], ext: str, hebrew: str, inside: bool) -> str:
    """Return the rule of words: letters, numbers, Katakana and Hebrew, joined as UAX#29 says."""
    letter, number, connector = f"{c['L']}{ext}", f"{c['N']}{ext}", f"{c['W']}{ext}"
    katakana = f"{c['K']}{ext}"
    mid_letter = f"[{re.escape(_MID_LETTER + _MID_NUM_LET)}']{ext}"
    mid_num = f"[{re.escape(_MID_NUM + _MID_NUM_LET)}']{ext}"
    # WB5-7 and WB9-13b: letters joined by one MidLetter / MidNumLet / ' (e.g, U.S.A,
    # don't), digits by one MidNum / MidNumLet / ' (3.14, 1,000), letters and digits
    # directly (mp3, h2o), anything by ExtendNumLet (foo_bar); hyphens, slashes and @ split.
    # A Hebrew letter keeps a quote after it (WB7a), but not one it was joined by: after
    # "aa'\u05d0" a quote ends the token.
    item = f"(?:{hebrew}'{ext}|{letter}(?:{mid_letter}{letter})*)"
    letters = f"{item}(?:(?:{connector})*{item})*"
    numbers = f"{number}(?:(?:{connector})*{number}|{mid_num}{number})*"
    hebrews = f"{hebrew}(?:'{ext}|\"{ext}{hebrew})"
    core = f"(?:{katakana}(?:(?:{connector})*{katakana})*|(?:{hebrews}|{numbers}|{letters})+)"
    # A run of ExtendNumLet before the first letter: from its start only, unless inside.
    lead = f"(?:{connector})*" if inside else f"(?:(?<!{c['W']})(?:{connector})+)?"
    return f"{lead}{core}(?:(?:{connector})+{core})*(?:{connector})*"


def _emoji_rule(pictograph: str, joiners: list[int], inside: bool) -> str:
    """Return the rule of emoji sequences (UTS #51 as in the jflex EMOJI rule).

    ``joiners``: the extend code points but ZWJ. In jflex terms, a sequence is
    ``ZWJ* EmojiChar S U+FE0F?`` or ``EmojiModifier S`` (``S``: extend and ZWJ but the
    presentation selectors, ``ExtFmtZwjSansPresSel``), sequences joined by one ZWJ, or one
    sequence and a tag sequence; then keycaps ``[#*] S U+FE0F? U+20E3 S`` and regional
    indicator pairs, each with all its marks. So a text presentation selector (U+FE0E) ends
    an emoji token and starts none (``\u2764\ufe0e`` is the token ``\u2764``), and so does a
    second U+FE0F. Written so that every step is decided by the next character, which makes
    Python's first match the longest one.
    """
    sans = _char_class(code for code in joiners if code not in _PRESENTATION_SELECTORS)
    modifier = "[\U0001f3fb-\U0001f3ff]"
    # After a pictograph: marks, and ZWJ runs each optionally followed by a new pictograph.
    # A run is taken whole ((?!\u200d)), so that no failed match tries every split of it.
    after_pictograph = f"(?:{sans}|\u200d+(?!\u200d){pictograph}?)*"
    # After a modifier that starts a sequence: marks, and ZWJ runs before no pictograph.
    after_modifier = f"(?:{sans}|\u200d+(?!\u200d|{pictograph}))*"
    joined = f"\u200d+{pictograph}{after_pictograph}"  # a modifier's sequence, then one
    lead = "\u200d*" if inside else "(?:(?<!\u200d)\u200d+)?"  # as in _word_rule
    presented = f"(?:{lead}{pictograph}{after_pictograph}|{modifier}{after_modifier}{joined})"
    # After U+FE0F: one ZWJ and a sequence, again and again; or a whole tag sequence.
    chained = (
        f"(?:\u200d(?:\u200d*{pictograph}{after_pictograph}\ufe0f?"
        f"|{modifier}{after_modifier}(?:{joined}\ufe0f?)?))*"
    )
    tags = "[\U000e0020-\U000e007e]+\U000e007f"
    sequence = f"{presented}(?:\ufe0f(?:{tags}|{chained}))?|{modifier}{after_modifier}"
    marks = f"(?:{sans}|\u200d)*"
    keycap = f"[#*]{marks}\ufe0f?\u20e3{marks}"
    regional = f"[\U0001f1e6-\U0001f1ff]{_char_class([*joiners, 0x200D])}*"
    return f"{sequence}|{keycap}|{regional}{regional}"


def utf16_length(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units (Java's ``String.length``)."""
    return len(text) + sum(1 for ch in text if ord(ch) > 0xFFFF)


class StandardTokenizer:
    """The raw tokens of a text as Lucene's ``StandardTokenizer`` emits them.

    ASCII text is scanned with the ASCII-only grammar (the same tokens, much faster). Time
    is linear in the text, a token longer than the scanner's buffer included (a word of
    1 MB is cut in 4,000 windows of 255 characters, each read once or twice).
    """

    def __init__(self) -> None:
        self._pattern = token_pattern()
        self._ascii = token_pattern(ascii_only=True)
        self._ascii_findall = self._ascii.findall
        self._inside = token_pattern(inside=True)
        self._ascii_inside = token_pattern(ascii_only=True, inside=True)

    def tokens(self, text: str) -> list[str]:
        """Return the tokens of ``text`` in order."""
        tokens = (self._ascii_findall if text.isascii() else self._pattern.findall)(text)
        if all(len(token) <= MAX_TOKEN_LENGTH // 2 for token in tokens):
            return tokens
        return [token for _, token in self._chopped(text)]

    def spans(self, text: str) -> list[tuple[int, str]]:
        """Return :meth:`tokens` of ``text`` with the offset each starts at."""
        pattern = self._ascii if text.isascii() else self._pattern
        found = [(m.start(), m.group()) for m in pattern.finditer(text)]
        if all(len(token) <= MAX_TOKEN_LENGTH // 2 for _, token in found):
            return found
        return list(self._chopped(text))

    def _chopped(self, text: str) -> Iterator[tuple[int, str]]:
        """Scan ``text`` token by token (start, token), chopping tokens longer than the buffer.

        A token of at most 255 UTF-16 units is the pattern's match. A longer one is cut as
        the scanner, which sees 255 units at most, cuts it: the longest token among them,
        then the same again from its end (:func:`_cut`).
        """
        plain = text.isascii()
        scan, inside = (self._ascii, self._ascii_inside) if plain else (self._pattern, self._inside)
        position = 0
        while (found := scan.search(text, position)) is not None:
            token, position = found.group(), found.end()
            if utf16_length(token) <= MAX_TOKEN_LENGTH:
                yield found.start(), token
                continue
            for start, piece in _cut((scan, inside), plain, text, found.start(), position):
                yield start, piece
                position = max(position, start + len(piece))


@lru_cache(maxsize=2)
def _run_patterns(ascii_only: bool) -> dict[str, re.Pattern[str]]:
    """Patterns of the runs a token may start with, which a search inside them misses.

    The runs: ``_`` before a letter, marks between two regional indicators.

    ``lead``: a run of ``_`` (ExtendNumLet), each with its marks; ``inert``: marks that
    start no token (Extend and Format characters that are neither South-East Asian, a
    token of their own, nor an emoji modifier nor ZWJ, each of which may start an emoji);
    ``joined`` and ``marks``: ``_`` or marks, and marks alone; ``connector``: one ``_``;
    ``regional``: a regional indicator; ``marked``: the rules that may start on a mark
    (emoji, South-East Asian), each run of ZWJ tried from its start only.
    """
    classes = _word_break_classes(ascii_only)
    connector, ext = _char_class(classes["W"]), _char_class(classes["E"])
    starting = {*classes["S"], *range(0x1F3FB, 0x1F400), 0x200D}
    rules = _rules(ascii_only, inside=False)
    inert = _char_class(code for code in classes["E"] if code not in starting)
    return {
        "lead": re.compile(f"(?:{connector}{ext}*)*"),
        "inert": re.compile(f"{inert}*"),
        "joined": re.compile(f"(?:{connector}|{ext})*"),
        "marks": re.compile(f"{ext}*"),
        "connector": re.compile(connector),
        "regional": re.compile("[\U0001f1e6-\U0001f1ff]"),
        "marked": re.compile(f"{rules['emoji']}|{rules['southeast_asian']}"),
    }


def _earlier_start(runs: dict[str, re.Pattern[str]], text: str, low: int, found: int) -> int | None:
    """Where a token that a search from ``low`` did not see in its window may start.

    ``found`` is the start the windowed search found, a mark that starts a token of its own;
    it may lie inside a run of ``_`` before a letter, or of marks between two regional
    indicators, that began after ``low`` and ran past the window. Returns the run's first
    ``_`` or its regional indicator, for the caller to match, or None.
    """
    before = text[low:found][::-1]
    joined = found - _reach(runs["joined"], before, 0)
    first = runs["connector"].search(text, joined, found)
    if first is not None:
        return first.start()
    marked = found - _reach(runs["marks"], before, 0) - 1
    if marked >= low and runs["regional"].match(text, marked):
        return marked
    return None


def _cut(
    patterns: tuple[re.Pattern[str], re.Pattern[str]],
    ascii_only: bool,
    text: str,
    start: int,
    end: int,
) -> Iterator[tuple[int, str]]:
    """Cut the token ``text[start:end]``, longer than the buffer, as the scanner does.

    ``patterns``: :func:`token_pattern`'s, and its pattern that matches from inside a run
    of ``_`` too. Each piece is the longest token among the 255 units from where it starts
    (the first match is the longest), or the 255 units themselves where no token fits in
    them (a run of ``_`` longer than that). The next piece starts where the pattern next matches,
    looked for in the next 255 characters first: a match there is the first one, since a
    match that began earlier and ran past them would begin a run of ``_``, ZWJ or marks
    holding them. Only where they hold no token start is the rest of the text searched;
    when that finds a run of ``_`` before a letter, every ``_`` of the run starts a token,
    and before none, none does, so the pieces after it are cut without searching the run
    again. The last piece may end past ``end``, where the token would have; the next
    search starts after it. One shape is still searched again at each cut: a run of more
    than 255 ZWJ before an emoji.
    """
    scan, inside = patterns
    match, search = inside.match, inside.search
    runs = _run_patterns(ascii_only)
    lead, inert = runs["lead"], runs["inert"]
    run_end = start  # every "_" before this is followed, through "_" and marks, by a letter
    dead_end = start  # no "_" before this is followed, through "_" and marks, by a letter
    while True:
        stop = _units_end(text, start)
        short = match(text, start, stop)
        piece = short.group() if short is not None else text[start:stop]
        yield start, piece
        position = start + len(piece)
        if position >= end:
            return
        if position < run_end:
            start = _reach(inert, text, position, run_end)
            if start < run_end and _reach(lead, text, start, start + 1) > start:
                continue  # the next "_" of the run
        if position < dead_end:  # no "_" of this run starts a token: a mark may
            found = runs["marked"].search(text, position, dead_end + 1)
            found = found or scan.search(text, dead_end)
        else:
            found = search(text, position, min(end, position + MAX_TOKEN_LENGTH))
        if found is None:
            joined = _reach(runs["joined"], text, position)
            first = runs["connector"].search(text, position, joined)
            if first is not None and match(text, first.start()) is None:
                dead_end = joined  # "_" and marks before no letter: each "_" starts nothing
                found = runs["marked"].search(text, position, joined + 1)
                found = found or scan.search(text, joined)
            else:
                found = search(text, position)
        if found is None or found.start() >= end:
            return
        start = found.start()
        if _reach(runs["marks"], text, start) > start:  # a mark: maybe inside a run
            earlier = _earlier_start(runs, text, position, start)
            if earlier is not None and match(text, earlier) is not None:
                start = earlier
        run_end = max(run_end, _reach(lead, text, start))


def _reach(run: re.Pattern[str], text: str, start: int, stop: int = sys.maxsize) -> int:
    """Where ``run`` (a pattern that may match nothing) ends, matched at ``start``."""
    found = run.match(text, start, stop)
    return start if found is None else found.end()


def _units_end(text: str, start: int) -> int:
    """Where the first 255 UTF-16 units of ``text`` from ``start`` end (a code point index)."""
    end = min(len(text), start + MAX_TOKEN_LENGTH)
    while utf16_length(text[start:end]) > MAX_TOKEN_LENGTH:
        end -= 1
    return end
