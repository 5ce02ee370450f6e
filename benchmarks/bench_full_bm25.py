"""BM25 over a corpus the size of MM-BRIGHT's largest domain, end to end, on one machine.

A synthetic copy of the published layout is written to a temporary folder: ``physics`` with
338,291 passages of about 2,200 characters (docs/protocol.md, The benchmark), one of them 25 MB like
the real outlier, 100 long queries with gold and negative ids, and a few small extra domains. Then
``mmbright run --task 1 --retriever bm25`` runs over every domain in a child process: the
script reports its wall time and peak memory (max RSS from ``wait4``), and checks that the
extra domains do not raise the peak (the source keeps one domain's corpus at a time).

rank_bm25 is timed on a sample (index + the same queries) in another child and projected
linearly to the full size: its index build and its per-query scoring both walk the corpus.

Run: ``python benchmarks/bench_full_bm25.py [--scale 0.1]`` (``--scale 1``, the default, takes
about 6 minutes on 2 cores). Exits non-zero when the peak memory exceeds ``--max-gib`` (4) or
the wall time ``--max-s`` (120).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
from fixture_dataset import SCHEMAS

LARGEST = 338_291  # physics, the largest domain (docs/protocol.md, The benchmark)
MEAN_CHARS = 2_200
QUERY_WORDS = 200  # Task 1 queries are long: about 1,300 characters
VOCABULARY = 40_000
CHARS_PER_WORD = 7.0  # with its space, under the Zipf weights below
ROW_GROUP = 16_384

# The published schema, as the tests' fixture dataset writes it.
_SCHEMA_EXAMPLES = SCHEMAS["examples"]
_SCHEMA_DOCUMENTS = SCHEMAS["documents"]


class Words:
    """A Zipf-distributed vocabulary of pseudo-words (2-12 letters)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        lengths = self.rng.integers(2, 10, VOCABULARY) + (self.rng.random(VOCABULARY) < 0.1) * 3
        self.vocab = np.array(["".join(self.rng.choice(letters, n)) for n in lengths])
        weights = 1.0 / np.arange(1, VOCABULARY + 1) ** 1.05
        self.cdf = np.cumsum(weights / weights.sum())
        self.lengths = np.char.str_len(self.vocab)

    def draw(self, n_words: int) -> np.ndarray:
        """Return the vocabulary indices of ``n_words`` words."""
        return np.minimum(np.searchsorted(self.cdf, self.rng.random(n_words)), VOCABULARY - 1)

    def text(self, n_words: int) -> str:
        """Return ``n_words`` words joined by spaces."""
        return " ".join(self.vocab[self.draw(n_words)].tolist())

    def texts(self, lengths: np.ndarray) -> list[str]:
        """Return one text per entry of ``lengths`` (words), cut from one joined stream."""
        idx = self.draw(int(lengths.sum()))
        stream = " ".join(self.vocab[idx].tolist()) + " "
        # Character offset of every word start, so each text is one slice of the stream.
        starts = np.concatenate(([0], np.cumsum(self.lengths[idx] + 1)))
        bounds = starts[np.concatenate(([0], np.cumsum(lengths)))]
        return [stream[a : b - 1] for a, b in itertools.pairwise(bounds)]


def write_domain(root: Path, domain: str, n: int, words: Words, long_mb: int) -> list[str]:
    """Write ``documents`` and ``examples`` for one domain; return its passage ids."""
    ids = [f"{domain}/{k:08x}_{k}.txt" for k in range(n)]
    per_doc = MEAN_CHARS / CHARS_PER_WORD
    (root / "documents").mkdir(parents=True, exist_ok=True)
    with pq.ParquetWriter(root / "documents" / f"{domain}.parquet", _SCHEMA_DOCUMENTS) as out:
        for start in range(0, n, ROW_GROUP):
            stop = min(n, start + ROW_GROUP)
            lengths = np.maximum(5, words.rng.normal(per_doc, per_doc / 3, stop - start))
            texts = words.texts(lengths.astype(np.int64))
            if start == 0 and long_mb:
                texts[0] = words.text(int(long_mb * 2**20 / CHARS_PER_WORD))  # the 25 MB outlier
            out.write_table(pa.table({"id": ids[start:stop], "content": texts}, _SCHEMA_DOCUMENTS))
    return ids


def write_queries(root: Path, domain: str, ids: list[str], n: int, words: Words) -> None:
    """Write ``n`` queries with two gold and one negative passage each (or ``N/A``)."""
    rows = []
    for q in range(n):
        gold = words.rng.choice(len(ids), 2, replace=False)
        negatives = [ids[int(words.rng.integers(len(ids)))]] if q % 2 else ["N/A"]
        rows.append(
            {
                "id": str(q),
                "query": words.text(QUERY_WORDS),
                "gold_ids": [ids[int(g)] for g in gold],
                "negative_ids": negatives,
                "image_paths": [],
                "gold_answers": "",
            }
        )
    (root / "examples").mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows, schema=_SCHEMA_EXAMPLES)
    pq.write_table(table, root / "examples" / f"{domain}.parquet")


def measured(command: list[str]) -> tuple[float, float, str]:
    """Run ``command``; return its wall seconds, its peak RSS in GiB and its stdout."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read() if child.stdout else ""
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{out}")
    return wall, usage.ru_maxrss / 2**20, out  # ru_maxrss is in KiB on Linux


_RANK_BM25 = """
import json, re, sys, time
import pyarrow.parquet as pq
from rank_bm25 import BM25Okapi
root, domain, n, n_queries = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
token = re.compile(r"(?u)\\b\\w\\w+\\b")
table = pq.ParquetFile(f"{root}/documents/{domain}.parquet").iter_batches(batch_size=n)
texts = next(table).column("content").to_pylist()[1:n]  # skip the 25 MB outlier
queries = pq.read_table(f"{root}/examples/{domain}.parquet").column("query").to_pylist()
queries = queries[:n_queries]
start = time.perf_counter()
bm25 = BM25Okapi([token.findall(t.lower()) for t in texts], k1=0.9, b=0.4)
index = time.perf_counter() - start
start = time.perf_counter()
for q in queries:
    bm25.get_scores(token.findall(q.lower()))
search = time.perf_counter() - start
print(json.dumps({"n": len(texts), "queries": len(queries), "index_s": index, "search_s": search}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of 338,291 passages")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--extra-domains", type=int, default=2, help="small domains beside it")
    parser.add_argument("--long-mb", type=int, default=25, help="size of the outlier passage")
    parser.add_argument("--sample", type=int, default=20_000, help="rank_bm25 sample size")
    parser.add_argument("--sample-queries", type=int, default=5, help="rank_bm25 queries timed")
    parser.add_argument("--alone", action="store_true", help="also run the largest domain alone")
    parser.add_argument("--max-gib", type=float, default=4.0, help="peak memory bound")
    parser.add_argument("--max-s", type=float, default=120.0, help="wall time bound")
    parser.add_argument("--workdir", help="where to write the synthetic data (default: temp)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp) / "data"
        n = round(LARGEST * args.scale)
        start = time.perf_counter()
        words = Words(0)
        domains = {"physics": n} | {f"extra{i}": max(1, n // 20) for i in range(args.extra_domains)}
        for domain, size in domains.items():
            ids = write_domain(
                root, domain, size, words, args.long_mb if domain == "physics" else 0
            )
            write_queries(root, domain, ids, args.queries, words)
        size_mb = sum(p.stat().st_size for p in root.rglob("*.parquet")) / 2**20
        print(f"synthetic data: {domains} in {time.perf_counter() - start:.0f} s, {size_mb:.0f} MB")
        python = [sys.executable, "-m", "mmbright_core", "run", "--source", str(root)]
        common = ["--task", "1", "--retriever", "bm25", "--out"]
        # Each run gets an empty BM25 index cache (removed with the folder): both build.
        os.environ["MMBRIGHT_CACHE"] = f"{tmp}/cache-all"
        every = measured([*python, *common, f"{tmp}/all"])
        os.environ["MMBRIGHT_CACHE"] = f"{tmp}/cache-one"
        one = (
            measured([*python, "--domain", "physics", *common, f"{tmp}/one"])
            if args.alone
            else None
        )
        scores = json.loads((Path(tmp) / "all/run_t2t_bm25/physics/scores.json").read_text())
        sample = [str(min(args.sample, n)), str(min(args.sample_queries, args.queries))]
        rank = json.loads(
            measured([sys.executable, "-c", _RANK_BM25, str(root), "physics", *sample])[2]
        )
    # rank_bm25's index build and each query's scoring are both linear in the corpus size.
    factor = (n - 1) / rank["n"]
    projected = factor * (rank["index_s"] + rank["search_s"] * args.queries / rank["queries"])
    print(
        f"mmbright bm25, {len(domains)} domains ({sum(domains.values()):,} passages, "
        f"physics {n:,}; "
        f"{args.queries} queries each; outputs written): {every[0]:.1f} s, "
        f"peak RSS {every[1]:.2f} GiB ({len(scores)} physics queries ranked)"
    )
    if one is not None:
        print(
            f"mmbright bm25, physics alone: {one[0]:.1f} s, peak RSS {one[1]:.2f} GiB; the extra "
            f"domains moved the peak by {(every[1] - one[1]) * 1024:+.0f} MiB"
        )
    print(
        f"rank_bm25 on {rank['n']:,} passages: index {rank['index_s']:.1f} s, "
        f"{rank['queries']} queries {rank['search_s']:.1f} s; projected to {n:,} passages and "
        f"{args.queries} queries: {projected:.0f} s "
        f"({projected / every[0]:.1f}x mmbright's whole run)"
    )
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")
    failed = False
    if every[1] > args.max_gib:
        print(f"FAIL: peak RSS above {args.max_gib} GiB")
        failed = True
    if every[0] > args.max_s:
        print(f"FAIL: wall time above {args.max_s:.0f} s")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
