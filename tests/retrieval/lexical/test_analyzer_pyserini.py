"""The analyzer against pyserini itself: the same terms, text by text.

The reference is the official BM25 baseline's analyzer, pyserini 0.22.1's
``Analyzer(get_lucene_analyzer())`` (Anserini's ``DefaultEnglishAnalyzer`` on Lucene 9.5), run on
Java in a process of its own (``pyserini_terms.py``). ``make test`` installs pyserini and pyjnius
into the test environment and CI installs a Java 17 runtime; without either the test says so
and skips.

Two samples: texts made to break a tokenizer (possessives, hyphens, numbers and their
separators, URLs, e-mail, CJK, Thai, emoji sequences, marks, apostrophes, the spaces), and
random strings of assigned code points mixed with the characters that join or end tokens.
The random draw leaves out the code points Unicode 13.0 and 14.0 added (DerivedAge.txt): Lucene
9.5 does not know them, and docs/protocol.md states that they form tokens here.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import unicodedata

import numpy as np
import pytest
from locations import SUPPORT

from mmbright_core.retrieval.lexical.analyzer import EnglishAnalyzer

pytestmark = pytest.mark.slow

ADVERSARIAL = [
    "John's Johns' JOHN'S O'Neil's rock'n'roll don\u2019t it\uff07s we're ma'am",
    "state-of-the-art e-mail x-ray -leading trailing- \u2010hyphen\u2011nb \u2013 \u2014",
    "1,000,000 3.14159 1.2.3.4 12:30 1/2 50% $9.99 \u20ac10 10\u202f000 10\u00a0000 10\u2009000",
    "1'000 1\u2019000 0x1F 1e-10 -5 +7 \u0661\u0662\u0663 \u0967\u0968 \uff11\uff12 \u2460 \u00bd",
    "https://www.example.com/a/b?c=1&d=2#frag http://x.y ftp://host:21/file www.site.org",
    "john.doe@example.com first_last@sub.domain.co.uk user+tag@x.io @mention #hashtag",
    "日本語のテキスト 中文分词 한국어 カタカナー ひらがな",
    "ภาษาไทย ລາວ မြန်မာ ខ្មែរ",
    "\u2764 \u2764\ufe0f \u2764\ufe0e love \u263a\ufe0e\ufe0f \u2764\ufe0f\ufe0f",
    "\u00a9\ufe0e \u00ae\ufe0f \u2122\ufe0e\ufe0e \u2194\ufe0e\u0301",
    "👍 👍🏽 👍\ufe0f🏻 👍🏻\ufe0f 🏻 alone",
    "👨\u200d👩\u200d👧 👨\ufe0e\u200d👩 👨\ufe0f\u200d👩 🏳\ufe0f\u200d🌈",
    "👩🏾\u200d💻 \u200d🏻 \u2764\u200d\u0301 😀\u200d\u200d😀 😀\ufe0f\u200d\u200d🏻",
    "🇺🇸 🇺\ufe0f🇸 🇦🇦\u200d 🇦 solo",
    "🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f 🏴\ufe0f\U000e0067\U000e007f",
    "#\ufe0f\u20e3 #\u20e3 1\ufe0f\u20e3 *\ufe0e\u20e3 #\u200d\u20e3 9\u20e3\ufe0f",
    "x\ufe0ey 1\ufe0e2 a\ufe0f किताब cafe\u0301 n\u0303o \u0301lead",
    "na\u00efve co\u00f6perate \u0130stanbul ΣΟΦΟΣ stra\u00dfe АБВ",
    "אב' א\"ב aa'א' שָׁלוֹם' \u1a7f",
    "\u2018quoted\u2019 \u201cdouble\u201d `tick' 'single' '' ''' \u02bcokina \u02b9prime",
    "foo_bar __init__ _ __ a__b 10\u202f000 __\u202f__x \u202flead trail\u202f \u203ftie\u2040",
    "hy\u00adphen zero\u200bwidth join\u200dword \u2060wj \ufeffbom \u2028line\u2029para",
    "U.S.A. e.g. i.e., etc. foo:bar 3:00 a.1 v1.2.3 R2D2 C3PO mp3 h2o",
    "x" * 300 + " " + "ab." * 120 + " " + "_" * 200 + "y",
    "\x00\x01 \t\r\n\x0b\x0c \x1c\x1d\x85 \u1680\u2000\u3000 end",
]

#: A run of ``_`` longer than the scanner's buffer before a letter: Lucene emits the 255
#: units that end with the letter, this tokenizer the first 255 and then the rest.
LONG_UNDERSCORES = "_" * 260 + "y"

#: Code points that Unicode 13.0 and 14.0 assigned (DerivedAge.txt, Age=13.0 and Age=14.0).
_NEWER = (
    "061D 0870..088E 0890..0891 0898..089F 08B5 08BE..08C7 08C8..08D2 0B55 0C3C 0C5D 0CDD "
    "0D04 0D81 170D 1715 171F 180F 1ABF..1AC0 1AC1..1ACE 1B4C 1B7D..1B7E 1DFA 20C0 2B97 2C2F "
    "2C5F 2E50..2E52 2E53..2E5D 31BB..31BF 4DB6..4DBF 9FF0..9FFC 9FFD..9FFF A7C0..A7C1 "
    "A7C7..A7CA A7D0..A7D1 A7D3 A7D5..A7D9 A7F2..A7F4 A7F5..A7F6 A82C AB68..AB6B FBC2 "
    "FD40..FD4F FDCF FDFE..FDFF 1019C 10570..1057A 1057C..1058A 1058C..10592 10594..10595 "
    "10597..105A1 105A3..105B1 105B3..105B9 105BB..105BC 10780..10785 10787..107B0 "
    "107B2..107BA 10E80..10EA9 10EAB..10EAD 10EB0..10EB1 10F70..10F89 10FB0..10FCB "
    "11070..11075 110C2 11147 111CE..111CF 1145A 11460..11461 116B9 11740..11746 "
    "11900..11906 11909 1190C..11913 11915..11916 11918..11935 11937..11938 1193B..11946 "
    "11950..11959 11AB0..11ABF 11FB0 12F90..12FF2 16A70..16ABE 16AC0..16AC9 16FE4 "
    "16FF0..16FF1 18AF3..18CD5 18D00..18D08 1AFF0..1AFF3 1AFF5..1AFFB 1AFFD..1AFFE "
    "1B11F..1B122 1CF00..1CF2D 1CF30..1CF46 1CF50..1CFC3 1D1E9..1D1EA 1DF00..1DF1E "
    "1E290..1E2AE 1E7E0..1E7E6 1E7E8..1E7EB 1E7ED..1E7EE 1E7F0..1E7FE 1F10D..1F10F "
    "1F16D..1F16F 1F1AD 1F6D6..1F6D7 1F6DD..1F6DF 1F6FB..1F6FC 1F7F0 1F8B0..1F8B1 1F90C "
    "1F972 1F977..1F978 1F979 1F9A3..1F9A4 1F9AB..1F9AD 1F9CB 1F9CC 1FA74 1FA7B..1FA7C "
    "1FA83..1FA86 1FA96..1FAA8 1FAA9..1FAAC 1FAB0..1FAB6 1FAB7..1FABA 1FAC0..1FAC2 "
    "1FAC3..1FAC5 1FAD0..1FAD6 1FAD7..1FAD9 1FAE0..1FAE7 1FAF0..1FAF6 1FB00..1FB92 "
    "1FB94..1FBCA 1FBF0..1FBF9 2A6D7..2A6DD 2A6DE..2A6DF 2B735..2B738 30000..3134A"
)


def _newer_code_points() -> set[int]:
    found: set[int] = set()
    for item in _NEWER.split():
        low, _, high = item.partition("..")
        found.update(range(int(low, 16), int(high or low, 16) + 1))
    return found


#: What joins or ends a token, drawn as often as a random code point.
_GLUE = [
    *"aZ9 .,'_-:@/#*\"", "\u200d", "\ufe0e", "\ufe0f", "\u202f", "\u0301", "🏻", "🇦", "\u20e3",
    "\u2764", "😀", "\u00a0", "א", "ก", "日", "カ", "\u2019",
]  # fmt: skip


def random_texts(count: int = 400, seed: int = 29) -> list[str]:
    """``count`` strings of 1-24 characters: half random assigned code points, half glue."""
    # The table covers what a Python of Unicode 14 or older knows and Lucene 9.5 does not.
    version = tuple(map(int, unicodedata.unidata_version.split(".")))
    assert version <= (14, 0, 0), f"Unicode {version}: add its new code points to _NEWER"
    newer = _newer_code_points()
    pool = np.array(
        [
            code
            for code in range(0x110000)
            if unicodedata.category(chr(code)) not in ("Cn", "Cs", "Co") and code not in newer
        ]
    )
    rng = np.random.default_rng(seed)
    texts = []
    for _ in range(count):
        size = int(rng.integers(1, 25))
        drawn = (
            chr(int(rng.choice(pool))) if rng.random() < 0.5 else _GLUE[rng.integers(len(_GLUE))]
            for _ in range(size)
        )
        texts.append("".join(drawn))
    return texts


@pytest.fixture(scope="module")
def pyserini_terms(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """pyserini's terms of every text of both samples."""
    if shutil.which("java") is None:
        pytest.skip(
            "no Java runtime on PATH (Debian: openjdk-17-jre-headless; .ci/run installs it)"
        )
    for module in ("pyserini", "jnius"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed (make test installs pyserini 0.22.1, pyjnius)")
    texts = list(dict.fromkeys([*ADVERSARIAL, *random_texts(), LONG_UNDERSCORES]))
    folder = tmp_path_factory.mktemp("pyserini")
    (folder / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    command = [sys.executable, str(SUPPORT / "pyserini_terms.py"), str(folder / "texts.json")]
    subprocess.run([*command, str(folder / "terms.json")], check=True, timeout=300)
    terms = json.loads((folder / "terms.json").read_text(encoding="utf-8"))
    return dict(zip(texts, terms, strict=True))


def _disagreements(texts: list[str], reference: dict[str, list[str]]) -> list[str]:
    analyzer = EnglishAnalyzer()
    return [
        f"{text!a}: ours {analyzer.analyze(text)!a}, pyserini {reference[text]!a}"
        for text in texts
        if analyzer.analyze(text) != reference[text]
    ]


def test_adversarial_texts_give_pyserinis_terms(pyserini_terms: dict[str, list[str]]) -> None:
    differ = _disagreements(ADVERSARIAL, pyserini_terms)
    assert not differ, f"{len(differ)} of {len(ADVERSARIAL)} differ:\n" + "\n".join(differ)


def test_random_unicode_gives_pyserinis_terms(pyserini_terms: dict[str, list[str]]) -> None:
    texts = random_texts()
    differ = _disagreements(texts, pyserini_terms)
    assert not differ, f"{len(differ)} of {len(texts)} differ:\n" + "\n".join(differ[:20])


@pytest.mark.xfail(strict=True, reason="known: a run of _ longer than 255 before a letter")
def test_a_run_of_underscores_longer_than_the_buffer(pyserini_terms: dict[str, list[str]]) -> None:
    assert not _disagreements([LONG_UNDERSCORES], pyserini_terms)
