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
    # U+202F is the one space that is ExtendNumLet: it joins numbers and words.
    ("10\u202f000 euros, __\u202f__x", ["10\u202f000", "euro", "__\u202f__x"]),
    # Emoji hold one U+FE0F and no U+FE0E: the text presentation selector ends the token
    # and starts none, as does a second U+FE0F; a modifier after U+FE0F is a token of its own.
    (
        "\u2764\ufe0e love \u263a\ufe0e\ufe0f \u2764\ufe0f\ufe0f",
        ["\u2764", "love", "\u263a", "\u2764\ufe0f"],
    ),
    (
        "\U0001f44d\ufe0f\U0001f3fb \U0001f468\ufe0e\u200d\U0001f469",
        ["\U0001f44d\ufe0f", "\U0001f3fb", "\U0001f468", "\u200d\U0001f469"],
    ),
    # ZWJ and marks inside an emoji sequence and after a regional indicator pair; no ZWJ
    # before a lone modifier.
    (
        "\u2764\u200d\u0301 \U0001f1e6\U0001f1e6\u200d \u200d\U0001f3fb #\u200d\u20e3",
        ["\u2764\u200d\u0301", "\U0001f1e6\U0001f1e6\u200d", "\U0001f3fb", "#\u200d\u20e3"],
    ),
    # A Hebrew letter keeps a quote after it (WB7a), not one after a MidLetter join;
    # Tai Tham's cryptogrammic dot is a mark, not a South-East Asian letter.
    ("aa'\u05d0' \u05d0' \u1a7f", ["aa'\u05d0", "\u05d0'"]),
    ("", []),
    (" \t\n  ", []),
    ("The AND a an of", []),
]
