"""Measure reranking throughput on CPU with a tiny random-weight cross-encoder (pairs/s).

The model is built offline (``tests/support/tiny_hf.py``: a one-layer BERT relevance head over a
word-level tokenizer trained on the demo's texts). Three figures over the demo's Task 2
BM25 run, every domain, top ``--depth`` of each query:

- the model alone: ``CrossEncoder.predict`` on the same (query, passage) pairs, the floor;
- ``mmbright rerank``'s stage with a cold answer cache (candidates built, each answer's key
  hashed from the query, passages and images, each answer written atomically, the run
  written in the official layout);
- the same again with the cache warm: what a resumed job costs per pair (no model call).

Run: ``python benchmarks/bench_rerank.py [--depth 50] [--batch-size 32] [--repeat 3]``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))  # the tiny model's builder

import tiny_hf  # noqa: E402
from common import sizes  # noqa: E402

from mmbright_core.data.sources import open_source  # noqa: E402
from mmbright_core.ranking import ranked  # noqa: E402
from mmbright_core.rerank.first_stage import load_first_stage  # noqa: E402
from mmbright_core.rerank.registry import build  # noqa: E402
from mmbright_core.rerank.stage import rerank_task  # noqa: E402
from mmbright_core.ui.workspace import DEMO_RUNS  # noqa: E402

TASK = 2


def pairs_of(depth: int) -> list[list[str]]:
    """Every (query, passage) pair the stage reranks on the demo's Task 2 BM25 run."""
    source = open_source("demo")
    first = load_first_stage(source, TASK, DEMO_RUNS / "run_it2t_bm25")
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
    args = sizes(__doc__.splitlines()[0], depth=50, batch_size=32, repeat=3)
    import torch
    from sentence_transformers import CrossEncoder

    torch.set_num_threads(1)  # one core, as on a shared machine
    source = open_source("demo")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        texts = [q.text for d in source.domains() for q in source.task(TASK, d).queries]
        texts += [p.text for d in source.domains() for p in source.task(TASK, d).corpus]
        model = tiny_hf.cross_encoder_model(root / "tiny-ce", texts)
        pairs = pairs_of(args.depth)
        encoder = CrossEncoder(str(model), device="cpu")
        encoder.predict(pairs[:8], batch_size=args.batch_size)  # one-off setup
        alone = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            encoder.predict(pairs, batch_size=args.batch_size, show_progress_bar=False)
            alone.append(time.perf_counter() - start)
        reranker = build(f"cross-encoder:{model}", batch_size=args.batch_size, device="cpu")
        first = load_first_stage(source, TASK, DEMO_RUNS / "run_it2t_bm25")
        cold, warm = [], []
        for n in range(args.repeat):
            for times in (cold, warm):  # the second pass finds every answer cached
                start = time.perf_counter()
                rerank_task(
                    source,
                    TASK,
                    first,
                    reranker,
                    root / f"out{n}{len(times)}",
                    depth=args.depth,
                    cache_dir=root / f"cache{n}",
                )
                times.append(time.perf_counter() - start)
    best = {name: min(t) for name, t in (("alone", alone), ("cold", cold), ("warm", warm))}
    print(f"pairs: {len(pairs)} (depth {args.depth}, batch {args.batch_size}, 1 thread)")
    print(f"model alone (CrossEncoder.predict): {len(pairs) / best['alone']:,.0f} pairs/s")
    print(f"mmbright rerank, cold cache: {len(pairs) / best['cold']:,.0f} pairs/s")
    print(f"mmbright rerank, warm cache (resume): {len(pairs) / best['warm']:,.0f} pairs/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
