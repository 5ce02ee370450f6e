"""Lucene EnglishAnalyzer cases (input, expected terms), shared by the analyzer's tests and the
attribution spans' tests."""

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
