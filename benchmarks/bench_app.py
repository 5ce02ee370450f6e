"""Dashboard responsiveness at benchmark size, measured through Streamlit's AppTest.

Builds a synthetic copy with the real query counts of Task 1 and Task 2 in all 29 domains
(docs/protocol.md, The benchmark), eight synthetic runs per task with 1,000 scored documents per
query, puts them in the session, then times the first render of the Home page and each interaction:
switching the run on the per-query page, filtering it by domain, and opening a query in the
inspector.
Targets: first render < 3 s, each interaction < 0.5 s (on 2 cores).

Usage: ``python benchmarks/bench_app.py [--runs 8] [--depth 1000]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import streamlit as st
from streamlit.testing.v1 import AppTest

from mmbright_core.data.layout import DOMAINS
from mmbright_core.ui.common.state import RunEntry, fingerprint

APP = Path(__file__).resolve().parent.parent / "mmbright_core" / "ui" / "app.py"
# domain -> (Task 1 queries, Task 2 queries), docs/protocol.md, The benchmark.
QUERIES = {
    "academia": (26, 22), "apple": (14, 13), "askubuntu": (35, 28), "aviation": (125, 111),
    "bioacoustics": (41, 39), "bioinformatics": (90, 46), "biology": (99, 64),
    "bitcoin": (64, 54), "chemistry": (65, 51), "christianity": (30, 22), "crypto": (74, 51),
    "earthscience": (85, 72), "economics": (31, 28), "gaming": (26, 19), "gis": (44, 34),
    "islam": (27, 24), "law": (30, 24), "math": (45, 39), "medicalsciences": (55, 43),
    "philosophy": (50, 38), "physics": (100, 81), "pm": (50, 43), "psychology": (87, 46),
    "quant": (34, 28), "quantumcomputing": (88, 65), "robotics": (30, 24),
    "salesforce": (10, 8), "sustainability": (62, 55), "travel": (68, 46),
}  # fmt: skip
POOL = 5_000  # distinct passage ids per domain that runs draw from


def _passage(domain: str, n: int) -> str:
    return f"{domain}/{n:08x}_{n}.txt"


def build_dataset(root: Path) -> None:
    """Write queries and qrels only (runs are scored without reading the corpus)."""
    rng = np.random.default_rng(0)
    for domain, (n1, n2) in QUERIES.items():
        rows = []
        for i in range(n1):
            gold = [_passage(domain, int(g)) for g in rng.choice(POOL, size=2, replace=False)]
            images = [f"{domain}/{domain}_{i:08x}_0000/image_{k}.png" for k in range(i % 4)]
            rows.append({"id": f"{domain}_{i}", "query": f"question {i} of {domain} " * 40,
                         "gold_ids": gold, "negative_ids": ["N/A"], "image_paths": images,
                         "gold_answers": ""})  # fmt: skip
        multimodal = [{**row, "positive_images": [], "negative_images": []} for row in rows[:n2]]
        for config, table in (("examples", rows), ("examples_multimodal", multimodal)):
            (root / config).mkdir(exist_ok=True)
            pq.write_table(pa.Table.from_pylist(table), root / config / f"{domain}.parquet")
        for config in ("examples_images", "document_images"):
            (root / config).mkdir(exist_ok=True)
            empty = pa.table(
                {"path": pa.array([], pa.string()), "bytes": pa.array([], pa.binary())}
            )
            pq.write_table(empty, root / config / f"{domain}.parquet")
        (root / "documents").mkdir(exist_ok=True)
        ids = [_passage(domain, n) for n in range(POOL)]
        pq.write_table(
            pa.table({"id": ids, "content": ["text"] * POOL}),
            root / "documents" / f"{domain}.parquet",
        )


def build_runs(spec: str, n_runs: int, depth: int) -> dict[tuple[int, str], RunEntry]:
    """``n_runs`` runs for each of Task 1 and Task 2: random scores over each domain's pool."""
    rng = np.random.default_rng(1)
    pools = {d: [_passage(d, n) for n in range(POOL)] for d in DOMAINS}
    entries: dict[tuple[int, str], RunEntry] = {}
    for task, column in ((1, 0), (2, 1)):
        for r in range(n_runs):
            runs = {}
            for domain, counts in QUERIES.items():
                picks = rng.integers(0, POOL, size=(counts[column], depth))
                scores = rng.random((counts[column], depth)).round(6).tolist()
                runs[domain] = {
                    f"{domain}_{q}": {pools[domain][d]: s for d, s in zip(row, srow, strict=True)}
                    for q, (row, srow) in enumerate(zip(picks.tolist(), scores, strict=True))
                }
            name = f"t{task}-run{r}"
            entries[(task, name)] = RunEntry(name, spec, task, runs, "synthetic", fingerprint(name))
    return entries


def timed(label: str, action, results: dict[str, float]) -> AppTest:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    at = action()
    results[label] = time.perf_counter() - start
    if at.exception:
        raise RuntimeError(f"{label}: {at.exception[0].value}")
    return at


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs per task")
    parser.add_argument("--depth", type=int, default=1000, help="scored documents per query")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        start = time.perf_counter()
        build_dataset(root)
        entries = build_runs(str(root), args.runs, args.depth)
        print(f"workspace built in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        st.cache_data.clear()
        st.cache_resource.clear()
        at = AppTest.from_file(str(APP), default_timeout=600)
        at.session_state["demo_runs_loaded"] = True
        at.session_state["keep_source_kind"] = "Local folder"
        at.session_state["keep_source_folder"] = str(root)
        at.session_state["keep_task"] = 2
        at.session_state["runs"] = entries
        results: dict[str, float] = {}
        timed("first render (Home)", at.run, results)
        timed("open per-query page", lambda: at.switch_page("per_query/page.py").run(), results)
        timed("switch run", lambda: at.selectbox(key="pq_run").set_value("t2-run1").run(), results)
        timed(
            "filter by domain",
            lambda: at.multiselect(key="pq_domains").set_value(["physics"]).run(),
            results,
        )
        at.selectbox(key="pq_query").set_value("physics / physics_3")
        timed("open a query (inspector)", lambda: at.button(key="pq_open").click().run(), results)
        at.switch_page("inspector/page.py")
        timed("next most-hurt query", lambda: at.button(key="insp_next").click().run(), results)
        timed("open compare page", lambda: at.switch_page("compare/page.py").run(), results)
    for label, seconds in results.items():
        print(f"{label:28s} {seconds:7.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
