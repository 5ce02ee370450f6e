"""Measure how closely ``mmbright_core.retrieval.lexical.analyzer`` agrees with pyserini's analyzer.

The reference is the analyzer of the official BM25 baseline:
``pyserini.analysis.Analyzer(get_lucene_analyzer())`` (Anserini's ``DefaultEnglishAnalyzer``
on Lucene 9). It needs Java, which this package never depends on, so this script runs in a
scratch virtual environment of its own, outside the repository's environment:

    python3 -m venv SCRATCH
    SCRATCH/bin/pip install --no-deps pyserini==0.22.1   # Anserini 0.22.1, Lucene 9.5, Java 11+
    SCRATCH/bin/pip install pyjnius numpy pandas pyarrow PyStemmer
    export JAVA_HOME=$(dirname $(dirname $(readlink -f $(which java))))   # a JDK (libjvm)
    SCRATCH/bin/python benchmarks/analyzer_agreement.py [--json OUT.json]

(``--no-deps`` skips pyserini's dense-retrieval dependencies; only its analysis module and
the Anserini jar it ships are used.) Not part of the test suite.

Four measurements, each reported with examples of every remaining disagreement:

1. the demo dataset: every passage (``documents/*.parquet``, ``content``) and every query
   (``examples*/*.parquet``, ``query``): exact list equality per text, and token agreement
   (matching tokens / tokens, over a longest-common-subsequence alignment);
2. a varied sample of a few hundred strings (unicode, code, URLs, e-mail, math, numbers,
   possessives, CJK, emoji, long tokens);
3. the tokenizer alone, character by character: every assigned code point, alone and between
   letters and digits, through the analyzer without stop words and stemming;
4. the stemmer alone: every distinct lower-case word of (1) and (2), plus suffixed variants.
"""

from __future__ import annotations

import argparse
import difflib
import glob
import importlib
import json
import random
import sys
import time
import unicodedata
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_analyzer_module():
    """Import the analyzer module of this checkout (its tokenizer comes with it)."""
    sys.path.insert(0, str(ROOT))
    return importlib.import_module("mmbright_core.retrieval.lexical.analyzer")


def demo_texts() -> list[tuple[str, str]]:
    import pandas as pd

    texts = []
    demo = ROOT / "mmbright_core" / "data" / "demo"
    for path in sorted(glob.glob(str(demo / "documents" / "*.parquet"))):
        texts += [("passage", t) for t in pd.read_parquet(path)["content"].tolist()]
    for folder in ("examples", "examples_multimodal"):
        for path in sorted(glob.glob(str(demo / folder / "*.parquet"))):
            texts += [("query", t) for t in pd.read_parquet(path)["query"].tolist()]
    return texts


FRAGMENTS = [
    "John's",
    "JOHN'S",
    "James'",
    "the dogs’ bowls",
    "it's",
    "don't",
    "rock'n'roll",
    "O'Neil's",
    "U.S.A.",
    "e.g.",
    "i.e.,",
    "Ph.D.",
    "3.14",
    "1,000,000",
    "1.000,50",
    "10.5%",
    "$5.00",
    "v1.2.3",
    "mp3",
    "h2o",
    "H2SO4",
    "COVID-19",
    "e-mail",
    "state-of-the-art",
    "x=y+1",
    "a/b",
    "a\\b",
    "a|b",
    "C++",
    "C#",
    ".NET",
    "node.js",
    "foo_bar",
    "__init__",
    "_x_",
    "snake_case_name",
    "camelCaseName",
    "foo:bar",
    "3:00",
    "12:30:45",
    "a.1",
    "1.a",
    "https://www.example.com/path/to/page.html?q=1&r=two#frag",
    "http://localhost:8080/",
    "ftp://ftp.example.org/pub",
    "john.doe@example.com",
    "user+tag@mail.co.uk",
    "/usr/local/bin/python3",
    "C:\\Windows\\System32",
    "~/.bashrc",
    "sudo apt-get install",
    "ls -la | grep foo",
    "$HOME/.config",
    "def f(x): return x**2",
    "if (a && b) { c(); }",
    "arr[0]",
    "dict['key']",
    "x²+y²=z²",
    "∑_{i=1}^n x_i",
    "∫f(x)dx",
    "α+β=γ",
    "Δx→0",
    "½",
    "№5",
    "3×4",
    "≈",
    "≤",
    "E=mc^2",
    "f'(x)",
    "ΣΟΦΟΣ",
    "Straße",
    "İstanbul",
    "ǅ",
    "naïve café résumé",
    "Ωmega",
    "Привет мир",
    "Ελληνικά",
    "日本語のテキスト",
    "中文分词",
    "ひらがな",
    "カタカナ",
    "ﾃｽﾄ",
    "한국어 텍스트",
    "ภาษาไทย",
    "עברית",
    "ש'",
    "العربية ١٢٣",
    "हिन्दी",
    "👍🏽",
    "❤️",
    "🇺🇸",
    "#️⃣",
    "1️⃣",
    "👨‍👩‍👧",
    "©2020",
    "™",
    "↔",
    "→",
    "✔",
    "★",
    "hy\u00adphen",
    "zero\u200bwidth",
    "join\u200dner",
    "a\u0301b",
    "ﬁle",
    "Ⅻ",
    "①②",
    "running",
    "ponies",
    "caresses",
    "possibly",
    "biology",
    "analogy",
    "generalization",
    "relational",
    "conditional",
    "hopefulness",
    "is",
    "as",
    "us",
    "The",
    "AND",
    "Their",
    "a" * 300,
    "b" * 255 + "'s",
    "1" * 260,
    "x" * 254 + ".y",
    "𝐀" * 130,
]


def varied_sample(count: int = 400, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    sample = list(FRAGMENTS)
    separators = [" ", "  ", ", ", ". ", "\n", "\t", "-", "/", "(", ")", "'", '"', ":", "_"]
    while len(sample) < count:
        parts = rng.sample(FRAGMENTS[:-5], rng.randint(2, 6))
        sample.append("".join(p + rng.choice(separators) for p in parts).strip())
    return sample


def lcs_matches(a: list[str], b: list[str]) -> int:
    return sum(
        block.size for block in difflib.SequenceMatcher(None, a, b, False).get_matching_blocks()
    )


def compare(texts, ours, theirs, label, examples=8):
    exact = matched = total = 0
    diffs = []
    for text in texts:
        mine, ref = ours(text), theirs(text)
        total += max(len(mine), len(ref))
        if mine == ref:
            exact += 1
            matched += len(ref)
            continue
        matched += lcs_matches(mine, ref)
        if len(diffs) < examples:
            sm = difflib.SequenceMatcher(None, mine, ref, False)
            hunks = [
                (mine[i1:i2], ref[j1:j2])
                for op, i1, i2, j1, j2 in sm.get_opcodes()
                if op != "equal"
            ]
            diffs.append({"text": text[:160], "ours_vs_pyserini": hunks[:5]})
    result = {
        "texts": len(texts),
        "exact_texts": exact,
        "exact_rate": exact / max(len(texts), 1),
        "tokens": total,
        "token_agreement": matched / max(total, 1),
        "disagreements": diffs,
    }
    print(
        f"{label}: {exact}/{len(texts)} texts equal, "
        f"token agreement {result['token_agreement']:.6f}"
    )
    return result


def probe_code_points(ours, theirs):
    """Compare the tokenizer on every assigned code point in four contexts."""
    cases = []
    for code in range(0x110000):
        ch = chr(code)
        if unicodedata.category(ch) in ("Cn", "Cs", "Co") or ch.isspace():
            continue
        cases += [ch, f"a{ch}b", f"1{ch}2", f"{ch}a", f"a{ch}", f"{ch}{ch}"]
    mismatched, batch = [], 400
    for start in range(0, len(cases), batch):
        chunk = cases[start : start + batch]
        joined = " ".join(chunk)
        if ours(joined) == theirs(joined):
            continue
        mismatched += [(c, ours(c), theirs(c)) for c in chunk if ours(c) != theirs(c)]
    by_category = Counter(
        unicodedata.category(next(ch for ch in c if not ch.isascii() or c.isascii()))
        for c, _, _ in mismatched
    )
    print(
        f"code points: {len(cases)} probes, {len(mismatched)} differ; "
        f"by category {dict(by_category)}"
    )
    return {
        "probes": len(cases),
        "differ": len(mismatched),
        "by_category": dict(by_category),
        "examples": [
            {"text": c, "code": [f"U+{ord(x):04X}" for x in c], "ours": o, "pyserini": t}
            for c, o, t in mismatched[:60]
        ],
    }


def probe_stemmer(words, ours, theirs):
    differ = [(w, ours(w), theirs(w)) for w in sorted(words)]
    differ = [d for d in differ if d[1] != d[2]]
    print(f"stemmer: {len(words)} words, {len(differ)} differ")
    return {"words": len(words), "differ": len(differ), "examples": differ[:60]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="write the full report here")
    parser.add_argument("--skip-code-points", action="store_true")
    args = parser.parse_args()

    import pyserini
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    module = load_analyzer_module()
    analyzer = module.EnglishAnalyzer()
    reference = Analyzer(get_lucene_analyzer())
    plain_reference = Analyzer(get_lucene_analyzer(stemming=False, stopwords=False))
    stem_reference = Analyzer(get_lucene_analyzer(stopwords=False))

    def plain_ours(text):
        terms = []
        for token in analyzer.tokens(text):
            if len(token) >= 2 and token[-1] in "sS" and token[-2] in "'\u2019\uff07":
                token = token[:-2]
            if token:
                terms.append(module.java_lower(token))
        return terms

    report = {"pyserini": getattr(pyserini, "__version__", "?"), "settings": analyzer.settings()}
    started = time.time()
    demo = demo_texts()
    report["demo_passages"] = compare(
        [t for k, t in demo if k == "passage"], analyzer.analyze, reference.analyze, "demo passages"
    )
    report["demo_queries"] = compare(
        [t for k, t in demo if k == "query"], analyzer.analyze, reference.analyze, "demo queries"
    )
    sample = varied_sample()
    report["varied_sample"] = compare(sample, analyzer.analyze, reference.analyze, "varied sample")
    report["varied_sample_tokenizer"] = compare(
        sample, plain_ours, plain_reference.analyze, "varied sample, no stop/stem"
    )

    words = set()
    for _, text in demo:
        words.update(t for t in plain_ours(text) if t.isalpha() and t.isascii())
    for text in sample:
        words.update(t for t in plain_ours(text) if t.isalpha() and t.isascii())
    suffixes = [
        "",
        "s",
        "es",
        "ies",
        "ed",
        "ing",
        "ly",
        "bly",
        "ness",
        "ation",
        "ational",
        "logy",
        "logies",
        "ility",
        "ize",
        "izer",
        "ement",
        "al",
        "ful",
        "ous",
        "ive",
        "ity",
    ]
    words |= {w + s for w in list(words) for s in suffixes}
    words = {w for w in words if len(w) <= 200}  # longer ones are chopped by the tokenizer
    report["stemmer"] = probe_stemmer(
        words,
        lambda w: module.lucene_porter(w, analyzer._snowball),
        lambda w: (stem_reference.analyze(w) or [""])[0],
    )
    if not args.skip_code_points:
        report["code_points"] = probe_code_points(plain_ours, plain_reference.analyze)
    report["seconds"] = round(time.time() - started, 1)
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1))
    else:
        print(json.dumps(report, ensure_ascii=False, indent=1)[:20000])


if __name__ == "__main__":
    main()
