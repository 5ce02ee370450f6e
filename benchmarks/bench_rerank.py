"""Measure reranking throughput on CPU with a tiny random-weight cross-encoder (pairs/s).

The model is built offline (``tests/support/tiny_hf.py``: a one-layer BERT relevance head over a
word-level tokenizer trained on the demo's texts). Three figures over the demo's Task 2
BM25 run, every domain, top ``--depth`` of each query:

- the model alone: ``CrossEncoder.predict`` on the same (query, passage) pairs, the floor;
- ``mmbright rerank``'s stage with a cold answer cache (candidates built, each answer's key
  hashed from the query, passages and images, each answer written atomically, the run
  written in the official layout);
- the same again with the cache warm: what a resumed job costs per pair (no model call).

The three are interleaved, each repetition timing one of each, and the best of each is
kept; the stage's first run (the model's loading) is not timed, as the model's is not. The
ratio printed is the stage's cold throughput over the model's, in the same run, with the
load average it ran under.

Run: ``python benchmarks/bench_rerank.py [--depth 50] [--batch-size 32] [--repeat 5]``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from functools import partial
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))  # the tiny model's builder

import tiny_hf  # noqa: E402
from common import sizes, timed  # noqa: E402

from mmbright_core.data.sources import open_source  # noqa: E402
from mmbright_core.data.view import TaskView  # noqa: E402
from mmbright_core.ranking import ranked  # noqa: E402
from mmbright_core.rerank.first_stage import load_first_stage  # noqa: E402
from mmbright_core.rerank.registry import build  # noqa: E402
from mmbright_core.rerank.stage import rerank_task  # noqa: E402
from mmbright_core.ui.common.workspace import DEMO_RUNS  # noqa: E402

TASK = 2
#: The stage's cold throughput, as a share of the model's, that the stage must reach.
TARGET = 0.95
NAMES = {
    "alone": "model alone (CrossEncoder.predict)",
    "cold": "mmbright rerank, cold cache",
    "warm": "mmbright rerank, warm cache (resume)",
}


def pairs_of(depth: int) -> list[list[str]]:
    """Every (query, passage) pair the stage reranks on the demo's Task 2 BM25 run."""
    source = open_source("demo")
    first = load_first_stage(TaskView(source, TASK), DEMO_RUNS / "run_it2t_bm25")
    out: list[list[str]] = []
    for domain, run in first.runs.items():
        data = source.task(TASK, domain)
        texts = {d.doc_id: d.text for d in data.corpus}
        for query in data.queries:
            top = [d for d, _ in ranked(run.get(query.query_id, {}))][:depth]
            out += [[query.text, texts[d]] for d in top]
    return out


def main() -> int:
    """Run the benchmark and print one line per figure."""
    args = sizes(__doc__.splitlines()[0], depth=50, batch_size=32, repeat=5)
    import torch
    from sentence_transformers import CrossEncoder

    torch.set_num_threads(1)  # one core, as on a shared machine
    source = open_source("demo")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        texts = [q.text for d in source.domains() for q in source.task(TASK, d).queries]
        texts += [p.text for d in source.domains() for p in source.task(TASK, d).corpus]
        model = tiny_hf.cross_encoder_model(root / "tiny-ce", texts)
        pairs = pairs_of(args.depth)
        encoder = CrossEncoder(str(model), device="cpu")
        encoder.predict(pairs[:8], batch_size=args.batch_size)  # one-off setup
        reranker = build(f"cross-encoder:{model}", batch_size=args.batch_size, device="cpu")
        first = load_first_stage(TaskView(source, TASK), DEMO_RUNS / "run_it2t_bm25")

        def rerank(out: str, cache: str) -> None:
            rerank_task(
                TaskView(source, TASK),
                first,
                reranker,
                root / out,
                depth=args.depth,
                cache_dir=root / cache,
            )

        rerank("setup", "setup")  # one-off setup: the model loaded
        alone = partial(encoder.predict, pairs, batch_size=args.batch_size, show_progress_bar=False)
        times: dict[str, list[tuple[float, float]]] = {"alone": [], "cold": [], "warm": []}
        for n in range(args.repeat):  # interleaved; the warm pass finds every answer cached
            times["alone"].append(timed(alone))
            times["cold"].append(timed(partial(rerank, f"cold{n}", f"cache{n}")))
            times["warm"].append(timed(partial(rerank, f"warm{n}", f"cache{n}")))
    wall = {name: len(pairs) / min(w for w, _ in t) for name, t in times.items()}
    cpu = {name: len(pairs) / min(c for _, c in t) for name, t in times.items()}
    load = max(load, os.getloadavg()[0])
    print(f"pairs: {len(pairs)} (depth {args.depth}, batch {args.batch_size}, 1 thread)")
    for name, what in NAMES.items():
        print(f"{what}: {wall[name]:,.0f} pairs/s wall, {cpu[name]:,.0f} pairs/s CPU")
    ratio, ratio_cpu = wall["cold"] / wall["alone"], cpu["cold"] / cpu["alone"]
    verdict = "met" if ratio >= TARGET else "NOT met"
    print(
        f"cold / model alone: {ratio:.2f}x wall (target >= {TARGET}x: {verdict}), "
        f"{ratio_cpu:.2f}x CPU; load average up to {load:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
