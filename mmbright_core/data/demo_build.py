"""Build the embedded demo dataset: synthetic, small, deterministic, in the published layout.

Run ``python -m mmbright_core.data.demo_build [--out DIR]``. The content (passages, queries,
image descriptions) lives in ``demo/source/<domain>.json``, read into rows by
:mod:`mmbright_core.data.demo_source`; this script writes them as
``{config}/{domain}.parquet`` files with exactly the published columns and id conventions
(docs/protocol.md, The data as published), renders every image with Pillow, and writes
``MANIFEST.json`` (file hashes and the library versions that produced them). Two builds with
the same libraries are byte-identical:
ids and numbers derive from SHA-256 of names, filler text from seeded RNGs, parquet is
written with fixed settings and images carry no time metadata.

The dirty cases of the real data are deliberate (docs/protocol.md, The data as published): SVG
payloads, 1x1 PNGs, truncated PNGs, a positive image absent from the corpus, an orphan image whose
key matches no passage, backslash paths, an empty and a duplicate passage, ``"N/A"`` negatives.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import PIL
import pyarrow as pa
import pyarrow.parquet as pq

from mmbright_core.data.demo_pictures import FONT_SOURCE
from mmbright_core.data.demo_source import DOMAINS, SOURCE_DIR, DomainRows, load_domain
from mmbright_core.data.layout import CONFIGS
from mmbright_core.io.atomic import atomic_write_bytes, atomic_write_text

DEMO_DIR = Path(__file__).parent / "demo"

_LIST = pa.list_(pa.string())
_IMAGE_REF = pa.list_(pa.struct([("image_path", pa.string()), ("source_passage_id", pa.string())]))
_TYPES: Mapping[str, pa.DataType] = {
    "id": pa.string(),
    "content": pa.string(),
    "query": pa.string(),
    "gold_ids": _LIST,
    "negative_ids": _LIST,
    "image_paths": _LIST,
    "gold_answers": _LIST,
    "positive_images": _IMAGE_REF,
    "negative_images": _IMAGE_REF,
    "path": pa.string(),
    "bytes": pa.binary(),
}
SCHEMAS: Mapping[str, pa.Schema] = {
    config: pa.schema([(name, _TYPES[name]) for name in columns])
    for config, columns in CONFIGS.items()
}
"""Config -> its schema: the published columns (:data:`~mmbright_core.data.layout.CONFIGS`)
with the types the dataset gives them."""


def _parquet_bytes(
    rows: Sequence[Mapping[str, Any]] | Mapping[str, list[Any]], schema: pa.Schema
) -> bytes:
    """Serialise rows with fixed writer settings so that equal input gives equal bytes."""
    table = (
        pa.Table.from_pylist(list(rows), schema=schema)
        if not isinstance(rows, Mapping)
        else pa.table(rows, schema=schema)
    )
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd", compression_level=9, row_group_size=1 << 20)
    return sink.getvalue()


def _domain_files(dom: DomainRows) -> dict[str, bytes]:
    """The five parquet files of one domain, keyed by their path relative to the root."""
    docs = sorted(dom.documents.items())
    q_images, d_images = sorted(dom.query_images.items()), sorted(dom.document_images.items())
    columns: dict[str, dict[str, list[Any]]] = {
        "documents": {"id": [i for i, _ in docs], "content": [c for _, c in docs]},
        "examples_images": {"path": [p for p, _ in q_images], "bytes": [b for _, b in q_images]},
        "document_images": {"path": [p for p, _ in d_images], "bytes": [b for _, b in d_images]},
    }
    files = {f"{c}/{dom.name}.parquet": _parquet_bytes(v, SCHEMAS[c]) for c, v in columns.items()}
    files[f"examples/{dom.name}.parquet"] = _parquet_bytes(dom.examples, SCHEMAS["examples"])
    files[f"examples_multimodal/{dom.name}.parquet"] = _parquet_bytes(
        dom.multimodal, SCHEMAS["examples_multimodal"]
    )
    return files


def build(out: Path | str = DEMO_DIR, source_dir: Path = SOURCE_DIR) -> list[Path]:
    """Build every demo file into ``out`` and write its ``MANIFEST.json``.

    Args:
        out: The destination folder (the packaged ``demo/`` folder by default).
        source_dir: The folder holding the ``<domain>.json`` content files.

    Returns:
        The paths written, manifest last.
    """
    out = Path(out)
    files = {
        name: data
        for domain in DOMAINS
        for name, data in _domain_files(load_domain(domain, source_dir)).items()
    }
    written = [atomic_write_bytes(out / name, data) for name, data in sorted(files.items())]
    manifest = {
        "generator": {
            "pyarrow": pa.__version__,
            "pillow": PIL.__version__,
            "font": FONT_SOURCE,
        },
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
    }
    written.append(atomic_write_text(out / "MANIFEST.json", json.dumps(manifest, indent=1) + "\n"))
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``python -m mmbright_core.data.demo_build [--out DIR]``."""
    parser = argparse.ArgumentParser(description="Build the synthetic MM-BRIGHT demo dataset.")
    parser.add_argument("--out", type=Path, default=DEMO_DIR, help="destination folder")
    args = parser.parse_args(argv)
    written = build(args.out)
    total = sum(path.stat().st_size for path in written)
    print(f"wrote {len(written)} files, {total / 1024:.0f} KiB, to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
