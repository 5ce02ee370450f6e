"""A one-domain MM-BRIGHT folder whose corpus images are large but legal PNGs.

``build_large_images(root, count, side)`` writes the five configs for ``academia``: two
passages, two queries with one small image each, and ``count`` corpus images of ``side`` x
``side`` pixels (a flat colour each, so the parquet stays small while every image decodes
to ``side * side * 3`` bytes). The memory tests and ``benchmarks/bench_image_memory.py``
run Task 3 on it.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from fixture_dataset import SCHEMAS, encode

DOMAIN = "academia"


def image_path(k: int) -> str:
    """Return the path of corpus image ``k`` (image keys follow the published convention)."""
    return f"{DOMAIN}/{DOMAIN}_{k:08x}_0001/image_1.png"


def _write(root: Path, config: str, rows: list[dict]) -> None:
    path = root / config / f"{DOMAIN}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS[config]), path, row_group_size=8)


def _queries(multimodal: bool) -> list[dict]:
    rows = []
    for n in (1, 2):
        row = {
            "id": f"q{n}",
            "query": f"which picture is colour {n}?",
            "gold_ids": [f"{DOMAIN}/{n:08x}_1.txt"],
            "negative_ids": ["N/A"],
            "image_paths": [f"{DOMAIN}/query_{n}/image_1.png"],
            "gold_answers": "",
        }
        if multimodal:
            positive = {"image_path": image_path(n), "source_passage_id": row["gold_ids"][0]}
            row |= {"positive_images": [positive], "negative_images": []}
        rows.append(row)
    return rows


def build_large_images(root: Path, count: int = 51, side: int = 4000) -> Path:
    """Write the folder under ``root`` and return ``root``."""
    _write(
        root,
        "documents",
        [{"id": f"{DOMAIN}/{n:08x}_1.txt", "content": f"passage {n}"} for n in (1, 2)],
    )
    _write(
        root,
        "document_images",
        [
            {"path": image_path(k), "bytes": encode((side, side), f"#{(k * 4099) % 2**24:06x}")}
            for k in range(1, count + 1)
        ],
    )
    _write(
        root,
        "examples_images",
        [
            {"path": f"{DOMAIN}/query_{n}/image_1.png", "bytes": encode((64, 48), "red")}
            for n in (1, 2)
        ],
    )
    _write(root, "examples", _queries(multimodal=False))
    _write(root, "examples_multimodal", _queries(multimodal=True))
    return root


# Run in a child process: ``python -c TASK3_CHILD <folder> <cache> <model> <batch> <mode>``
# ranks Task 3 of the folder with the clip retriever (random weights) and prints the
# child's peak resident memory (VmHWM) and its resident memory once imported (bytes).
# <model> is an open_clip name or a JSON model
# config file (registered under its stem); <mode> ``lazy`` is the package as it is,
# ``eager`` decodes each whole batch before preprocessing (the former path).
TASK3_CHILD = """
import json, sys
from pathlib import Path
folder, cache, model, batch, mode = sys.argv[1:6]
import open_clip
if model.endswith(".json"):
    open_clip.add_model_config(model)
    model = Path(model).stem
import mmbright_core.retrieval.dual.encoder as dual_encoder
if mode == "eager":
    dual_encoder.LazyImages = lambda loaders: [load() for load in loaders]
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval.backends.clip import ClipRetriever
def status(field):
    with open("/proc/self/status") as lines:
        return 1024 * int(next(l.split()[1] for l in lines if l.startswith(field)))
imports = status("VmRSS")
source = open_source(folder)
data = source.task(3, "academia")
clip = ClipRetriever(model=model, pretrained="none", batch_size=int(batch), cache_dir=cache)
run = clip.retrieve(data, source, 10)
assert len(data.corpus) > 0 and all(len(r) == 10 for r in run.values()), run
peak = status("VmHWM")
print(json.dumps({"peak_bytes": peak, "imports_bytes": imports, "images": len(data.corpus)}))
"""
