"""pyserini's own analyzer, in a process of its own: the texts of a JSON file, their terms out.

The reference of docs/protocol.md, The analyzer: ``Analyzer(get_lucene_analyzer())`` of pyserini
0.22.1 (Anserini's ``DefaultEnglishAnalyzer`` on Lucene 9.5), run on Java through pyjnius. A
process of its own, so the JVM it starts ends with it.

    python pyserini_terms.py TEXTS.json TERMS.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main() -> None:
    from pyserini.analysis import Analyzer, get_lucene_analyzer

    texts = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    analyzer = Analyzer(get_lucene_analyzer())
    terms = [list(analyzer.analyze(text)) for text in texts]
    Path(sys.argv[2]).write_text(json.dumps(terms), encoding="utf-8")


if __name__ == "__main__":
    main()
