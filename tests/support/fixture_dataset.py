"""A tiny MM-BRIGHT copy in the published schema, with every id convention and dirty case.

``build_fixture(root)`` writes ``{config}/{domain}.parquet`` for the five configs and two
domains (``academia`` and the chunked ``biology``). It is deterministic: the same bytes every
time. The comments name the case each row covers; the tests spell out the judgments by hand.
"""

from __future__ import annotations

import io
import shutil
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image

_STRUCT = pa.struct([("image_path", pa.string()), ("source_passage_id", pa.string())])
_QUERY_FIELDS = [
    ("id", pa.string()),
    ("query", pa.string()),
    ("gold_ids", pa.list_(pa.string())),
    ("negative_ids", pa.list_(pa.string())),
    ("image_paths", pa.list_(pa.string())),
    ("gold_answers", pa.string()),
]
SCHEMAS = {
    "documents": pa.schema([("id", pa.string()), ("content", pa.string())]),
    "examples": pa.schema(_QUERY_FIELDS),
    "examples_multimodal": pa.schema(
        [
            *_QUERY_FIELDS,
            ("positive_images", pa.list_(_STRUCT)),
            ("negative_images", pa.list_(_STRUCT)),
        ]
    ),
    "examples_images": pa.schema([("path", pa.string()), ("bytes", pa.binary())]),
    "document_images": pa.schema([("path", pa.string()), ("bytes", pa.binary())]),
}


def encode(size: tuple[int, int], color: str, fmt: str = "PNG") -> bytes:
    """Return real image file bytes of a plain image encoded by Pillow."""
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, format=fmt)
    return buffer.getvalue()


def photo(size: tuple[int, int], seed: int) -> bytes:
    """Return JPEG file bytes of random noise, whose pixels a second JPEG encoding changes.

    A plain colour, as :func:`encode` draws, survives a second encoding unchanged; a photo's
    detail does not.
    """
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=90)
    return buffer.getvalue()


def changed_by_a_second_jpeg(data: bytes) -> bool:
    """Whether a JPEG file's decode, stored as ``datasets`` stores a decoded image, changes.

    ``datasets`` encodes a PIL image in its own format where Pillow writes it
    (``datasets.features.image.image_to_bytes``): a JPEG's decode becomes a new JPEG.
    """
    from datasets.features.image import image_to_bytes

    with Image.open(io.BytesIO(data)) as image:
        image.load()
        again = Image.open(io.BytesIO(image_to_bytes(image)))
        return image.format == again.format == "JPEG" and not np.array_equal(
            np.asarray(again), np.asarray(image)
        )


SVG = b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>'
CORRUPT = b"\x89PNG\r\n\x1a\n" + b"\x00garbage" * 8  # a PNG signature, then nonsense
TINY = encode((1, 1), "black")

# --- academia: one passage per source key -------------------------------------------------
A1 = "academia/a1b2c3d4_101.txt"
A2 = "academia/a1b2c3d4_102.txt"
A3 = "academia/e5f6a7b8_201.txt"
A_HARD = "academia/0123456789abcdef_301.txt"  # hard negative: 16-hex key
A_EMPTY = "academia/c0ffee00_401.txt"  # empty passage
A_DUP = "academia/c0ffee00_402.txt"  # duplicate of A1's text
A_NEG = "academia/deadbeef_501.txt"

ACADEMIA_DOCUMENTS = [
    (A1, "Cite a preprint with its arXiv identifier and the version you read."),
    (A2, "Journals differ on whether preprints count as prior publication."),
    (A3, "A thesis committee signs the approval page after the defense."),
    (A_HARD, "Conference travel grants are usually paid after the event."),
    (A_EMPTY, ""),
    (A_DUP, "Cite a preprint with its arXiv identifier and the version you read."),
    (A_NEG, "Poster sizes are given by the conference in centimetres."),
]

AI1 = "academia/academia_a1b2c3d4_0001/image_1.png"
AI2 = "academia/academia_a1b2c3d4_0001/image_2.jpg"  # stored with backslashes
AI3 = "academia/academia_e5f6a7b8_0002/image_1.png"
AI_NEG = "academia/academia_deadbeef_0005/image_1.png"
AI_ORPHAN = "academia/academia_99aa99aa_0006/image_1.png"  # no passage has key 99aa99aa
AI_SVG = "academia/academia_c0ffee00_0003/image_1.svg"
AI_TINY = "academia/academia_c0ffee00_0003/image_2.png"
AI_CORRUPT = "academia/academia_c0ffee00_0004/image_1.png"
AI_UNAVAILABLE = "academia/academia_e5f6a7b8_0002/image_9.png"  # not in document_images

ACADEMIA_DOCUMENT_IMAGES = [
    (AI1, encode((64, 48), "red")),
    (AI2.replace("/", "\\"), encode((40, 30), "blue", "JPEG")),
    (AI3, encode((32, 32), "green")),
    (AI_NEG, encode((16, 24), "yellow")),
    (AI_ORPHAN, encode((20, 20), "purple")),
    (AI_SVG, SVG),
    (AI_TINY, TINY),
    (AI_CORRUPT, CORRUPT),
]

AQ1 = "academia/academia_a1b2c3d4_0000/image_1.png"
AQ2 = "academia/academia_a1b2c3d4_0000/image_2.jpg"
AQ_CORRUPT = "academia/academia_e5f6a7b8_0000/image_1.png"
AQ3 = "academia/academia_e5f6a7b8_0000/image_2.png"
AQ_SVG = "academia/academia_0badf00d_0000/image_1.svg"
AQ_MISSING = "academia/academia_0badf00d_0000/image_2.png"  # not in examples_images
AQ_TINY = "academia/academia_0badf00d_0000/image_3.png"

ACADEMIA_QUERY_IMAGES = [
    (AQ1, encode((20, 10), "red")),
    (AQ2.replace("/", "\\"), encode((30, 16), "blue", "JPEG")),
    (AQ_CORRUPT, CORRUPT),
    (AQ3, encode((12, 12), "green")),
    (AQ_SVG, SVG),
    (AQ_TINY, TINY),
]


def _struct(path: str, source: str | None) -> dict[str, str | None]:
    return {"image_path": path, "source_passage_id": source}


# id, query, gold_ids, negative_ids, image_paths; "a3" is text-only (not multimodal).
ACADEMIA_QUERIES = [
    ("a1", "How do I cite a preprint?", [A1], [A_HARD, A_NEG], [AQ1, AQ2.replace("/", "\\")]),
    ("a2", "Who signs the thesis approval page?", [A3, A_EMPTY], ["N/A"], [AQ_CORRUPT, AQ3]),
    ("a3", "Do preprints count as publications?", [A2], [], []),
    ("a4", "When is a thesis approved?", [A3], [A_HARD], [AQ_MISSING, AQ_SVG, AQ_TINY]),
]
ACADEMIA_IMAGE_JUDGMENTS = {
    # AI2 is positive (backslash form) and negative (slash form): it counts as positive.
    "a1": (
        [_struct(AI1, A1), _struct(AI2.replace("/", "\\"), A1)],
        [_struct(AI2, A1), _struct(AI_NEG, A_NEG)],
    ),
    # AI_ORPHAN: no gold passage of its key; AI_UNAVAILABLE: absent from the corpus;
    # AI_CORRUPT: its key matches gold A_EMPTY but it does not decode (unavailable too).
    "a2": (
        [
            _struct(AI3, A3),
            _struct(AI_ORPHAN, None),
            _struct(AI_UNAVAILABLE, A3),
            _struct(AI_CORRUPT, A_EMPTY),
        ],
        [],
    ),
    "a4": ([], [_struct(AI1, A1)]),  # no positive image: empty Task 3 qrels
}

# --- biology: chunked passage ids -----------------------------------------------------------
B1 = "biology/fec40b40_1635_0.txt"
B2 = "biology/fec40b40_1635_1.txt"
B3 = "biology/abcdef12_77_0.txt"
B_HARD = "biology/fedcba9876543210_5_0.txt"

BIOLOGY_DOCUMENTS = [
    (B1, "Chloroplasts carry their own circular genome."),
    (B2, "Their ribosomes resemble those of bacteria."),
    (B3, "Tardigrades survive desiccation by vitrifying their cytoplasm."),
    (B_HARD, "Lichens are a symbiosis of a fungus and an alga."),
]
BI1 = "biology/biology_fec40b40_0001/image_1.png"
BI2 = "biology/biology_abcdef12_0002/image_1.jpg"
BIOLOGY_DOCUMENT_IMAGES = [
    (BI1, encode((50, 40), "green")),
    (BI2, encode((36, 36), "orange", "JPEG")),
]
BQ1 = "biology/biology_fec40b40_0000/image_1.png"
BQ2 = "biology/biology_abcdef12_0000/image_1.jpg"
BIOLOGY_QUERY_IMAGES = [
    (BQ1, encode((24, 18), "white")),
    (BQ2.replace("/", "\\"), encode((18, 24), "gray", "JPEG")),
]
BIOLOGY_QUERIES = [
    ("b1", "Why do chloroplasts have DNA?", [B1], [B_HARD], [BQ1]),
    ("b2", "How do tardigrades survive drying?", [B3], ["N/A"], [BQ2]),
]
BIOLOGY_IMAGE_JUDGMENTS = {
    "b1": ([_struct(BI1, B1)], [_struct(BI2, B3)]),
    "b2": ([_struct(BI2, B3)], []),
}


#: The query images ``build_fixture(root, photos=True)`` stores as photos (every one that
#: decodes, bar the 1x1): under the ``first`` policy, queries a1, a2, b1 and b2 get a photo.
PHOTO_QUERY_IMAGES = frozenset({AQ1, AQ2, AQ3, BQ1, BQ2})


def _photos(items: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    return [
        (path, photo((24, 16), zlib.crc32(path.encode())) if slash in PHOTO_QUERY_IMAGES else blob)
        for path, blob in items
        for slash in [path.replace("\\", "/")]
    ]


def _write(
    root: Path, config: str, domain: str, table: pa.Table, row_group_size: int = 1024
) -> None:
    path = root / config / f"{domain}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table.cast(SCHEMAS[config]), path, row_group_size=row_group_size)


def _query_rows(queries: list[tuple], judgments: dict[str, tuple] | None) -> list[dict]:
    rows = []
    for qid, text, gold, negative, images in queries:
        if judgments is not None and qid not in judgments:
            continue
        row = {
            "id": qid,
            "query": text,
            "gold_ids": gold,
            "negative_ids": negative,
            "image_paths": images,
            "gold_answers": f"answer to {qid}",
        }
        if judgments is not None:
            row["positive_images"], row["negative_images"] = judgments[qid]
        rows.append(row)
    return rows


def _write_domain(
    root: Path, domain: str, documents, doc_images, query_images, queries, judgments
) -> None:
    ids, texts = zip(*documents, strict=True)
    _write(root, "documents", domain, pa.table({"id": list(ids), "content": list(texts)}))
    for config, items in (("document_images", doc_images), ("examples_images", query_images)):
        paths, blobs = zip(*items, strict=True)
        # Small row groups, so that lazy image access crosses row-group boundaries.
        _write(root, config, domain, pa.table({"path": list(paths), "bytes": list(blobs)}), 3)
    text_rows = _query_rows(queries, None)
    if domain == "biology":
        # pandas hands list cells around as numpy arrays; write this file from such a frame.
        frame = pd.DataFrame(text_rows)
        for column in ("gold_ids", "negative_ids", "image_paths"):
            frame[column] = [np.array(v, dtype=object) for v in frame[column]]
        table = pa.Table.from_pandas(frame, schema=SCHEMAS["examples"], preserve_index=False)
    else:
        table = pa.Table.from_pylist(text_rows, schema=SCHEMAS["examples"])
    _write(root, "examples", domain, table)
    rows = _query_rows(queries, judgments)
    _write(
        root,
        "examples_multimodal",
        domain,
        pa.Table.from_pylist(rows, schema=SCHEMAS["examples_multimodal"]),
    )


def build_fixture(root: Path, photos: bool = False) -> Path:
    """Write the fixture dataset under ``root`` (created if needed) and return ``root``.

    ``photos``: the query images of :data:`PHOTO_QUERY_IMAGES` are JPEG photos
    (:func:`photo`) instead of plain colours.
    """
    root.mkdir(parents=True, exist_ok=True)
    query_images = _photos if photos else list
    _write_domain(
        root,
        "academia",
        ACADEMIA_DOCUMENTS,
        ACADEMIA_DOCUMENT_IMAGES,
        query_images(ACADEMIA_QUERY_IMAGES),
        ACADEMIA_QUERIES,
        ACADEMIA_IMAGE_JUDGMENTS,
    )
    _write_domain(
        root,
        "biology",
        BIOLOGY_DOCUMENTS,
        BIOLOGY_DOCUMENT_IMAGES,
        query_images(BIOLOGY_QUERY_IMAGES),
        BIOLOGY_QUERIES,
        BIOLOGY_IMAGE_JUDGMENTS,
    )
    return root


def with_newlines(fixture: Path, root: Path) -> Path:
    """Copy the dataset folder ``fixture`` to ``root`` with newlines in its texts; return ``root``.

    Every query text and passage becomes ``first\\nmiddle words\\n\\n\\nlast\\n`` (one newline,
    a run of three and a trailing one), so a test sees how a recipe treats each.
    """
    shutil.copytree(fixture, root)
    columns = {"examples": "query", "examples_multimodal": "query", "documents": "content"}
    for config, column in columns.items():
        for path in sorted((root / config).glob("*.parquet")):
            table = pq.read_table(path)
            texts = [_newlined(text) for text in table.column(column).to_pylist()]
            index = table.schema.get_field_index(column)
            pq.write_table(table.set_column(index, column, pa.array(texts, pa.string())), path)
    return root


def _newlined(text: str) -> str:
    words = text.split(" ")
    if len(words) < 3:
        return f"{text}\n"
    return f"{words[0]}\n{' '.join(words[1:-1])}\n\n\n{words[-1]}\n"
