"""The embedded demo dataset: reproducible, in the published schema, with every dirty case."""

from __future__ import annotations

import hashlib
import io
import json
import math
import re
import shutil
from pathlib import Path

import PIL
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from mmbright_core.data import demo_build, demo_images, demo_pictures, demo_source
from mmbright_core.errors import InputError
from mmbright_core.ranking import ranked
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever

PACKAGED = demo_build.DEMO_DIR
STR_LIST = pa.list_(pa.string())
IMAGE_REFS = pa.list_(pa.struct([("image_path", pa.string()), ("source_passage_id", pa.string())]))
EXAMPLE_COLUMNS = [
    ("id", pa.string()),
    ("query", pa.string()),
    ("gold_ids", STR_LIST),
    ("negative_ids", STR_LIST),
    ("image_paths", STR_LIST),
    ("gold_answers", STR_LIST),
]
# The published columns (docs/protocol.md, The data as published), written out here independently of
# the build script.
PUBLISHED = {
    "documents": [("id", pa.string()), ("content", pa.string())],
    "examples": EXAMPLE_COLUMNS,
    "examples_multimodal": [
        *EXAMPLE_COLUMNS,
        ("positive_images", IMAGE_REFS),
        ("negative_images", IMAGE_REFS),
    ],
    "examples_images": [("path", pa.string()), ("bytes", pa.binary())],
    "document_images": [("path", pa.string()), ("bytes", pa.binary())],
}
IMAGE_KEY = re.compile(r"^(\w+)/\1_([0-9a-f]{8})_(\d{4})/image_(\d+)\.(png|jpg|svg)$")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo")
    assert demo_build.main(["--out", str(out)]) == 0
    return out


def _files(root: Path) -> dict[str, bytes]:
    # The hand-written source, the README and the shipped runs (made by retrievers from
    # these files; tests/data/test_demo_runs.py checks them) are not the build's output.
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
        and p.relative_to(root).parts[0] not in ("source", "runs")
        and p.suffix != ".md"
    }


def _rows(config: str, domain: str) -> list[dict]:
    return pq.read_table(PACKAGED / config / f"{domain}.parquet").to_pylist()


def _all_rows(config: str) -> list[dict]:
    return [row for domain in demo_source.DOMAINS for row in _rows(config, domain)]


def _norm(path: str) -> str:
    return path.replace("\\", "/")


def _decode(data: bytes) -> Image.Image | None:
    try:
        image = Image.open(io.BytesIO(data))
        image.load()
    except (OSError, Image.UnidentifiedImageError):
        return None
    return image


def test_packaged_files_match_their_manifest() -> None:
    manifest = json.loads((PACKAGED / "MANIFEST.json").read_text())
    files = _files(PACKAGED)
    del files["MANIFEST.json"]
    assert {name: hashlib.sha256(data).hexdigest() for name, data in files.items()} == (
        manifest["files"]
    )


def test_rebuild_is_byte_identical_to_the_packaged_files(built: Path) -> None:
    generator = json.loads((PACKAGED / "MANIFEST.json").read_text())["generator"]
    here = {"pyarrow": pa.__version__, "pillow": PIL.__version__, "font": demo_pictures.FONT_SOURCE}
    if generator != here:
        pytest.skip(f"packaged demo was built with {generator}, this environment has {here}")
    assert _files(built) == _files(PACKAGED)


@pytest.mark.slow
def test_two_builds_are_byte_identical(built: Path, tmp_path: Path) -> None:
    demo_build.build(tmp_path)
    assert _files(tmp_path) == _files(built)


@pytest.mark.parametrize("config", sorted(PUBLISHED))
def test_schema_is_exactly_the_published_one(config: str) -> None:
    for domain in demo_source.DOMAINS:
        schema = pq.read_schema(PACKAGED / config / f"{domain}.parquet")
        assert [(f.name, f.type) for f in schema] == PUBLISHED[config]


def test_counts_and_size_stay_small() -> None:
    total = sum(len(data) for data in _files(PACKAGED).values())
    assert total < 2 * 1024 * 1024
    assert 250 <= len(_all_rows("documents")) <= 350
    assert 32 <= len(_all_rows("examples")) <= 40
    images = len(_all_rows("examples_images")) + len(_all_rows("document_images"))
    assert 80 <= images <= 130


@pytest.mark.parametrize("config", ["examples_images", "document_images"])
def test_dirty_images_are_present(config: str) -> None:
    blobs = [row["bytes"] for row in _all_rows(config)]
    svg = [b for b in blobs if b.lstrip()[:5].lower() in (b"<svg ", b"<?xml")]
    decoded = [_decode(b) for b in blobs if b not in svg]
    assert svg
    assert any(image is not None and image.size == (1, 1) for image in decoded)
    assert any(image is None for image in decoded)  # a truncated PNG
    assert sum(image is not None and image.width > 100 for image in decoded) > 30


def test_passage_ids_follow_the_published_conventions() -> None:
    for domain in demo_source.DOMAINS:
        chunk = r"_\d+" if domain in demo_source.CHUNKED_DOMAINS else ""
        regular = re.compile(rf"^{domain}/[0-9a-f]{{8}}_\d+{chunk}\.txt$")
        hard = re.compile(rf"^{domain}/[0-9a-f]{{16}}_\d+{chunk}\.txt$")
        ids = [row["id"] for row in _rows("documents", domain)]
        assert all(regular.match(i) or hard.match(i) for i in ids)
        assert any(hard.match(i) for i in ids)
        assert len(ids) == len(set(ids))


def test_dirty_passages_and_fields_are_present() -> None:
    contents = [row["content"] for row in _all_rows("documents")]
    assert "" in contents
    assert len([c for c in contents if c]) > len({c for c in contents if c})  # a duplicate
    examples = _all_rows("examples")
    assert any(row["negative_ids"] == ["N/A"] for row in examples)
    assert any(row["negative_ids"] and row["negative_ids"] != ["N/A"] for row in examples)
    multimodal = _all_rows("examples_multimodal")
    assert any("\\" in p for row in multimodal for p in row["image_paths"])
    refs = [r["image_path"] for row in multimodal for r in row["positive_images"]]
    assert any("\\" in p for p in refs)
    assert any(2 <= len(row["image_paths"]) <= 4 for row in multimodal)
    assert any(not row["positive_images"] for row in multimodal)
    both = [
        {_norm(r["image_path"]) for r in row["positive_images"]}
        & {_norm(r["image_path"]) for r in row["negative_images"]}
        for row in multimodal
    ]
    assert any(both)


def test_references_resolve_within_each_domain() -> None:
    for domain in demo_source.DOMAINS:
        documents = {row["id"] for row in _rows("documents", domain)}
        query_images = {row["path"] for row in _rows("examples_images", domain)}
        text = {row["id"]: row for row in _rows("examples", domain)}
        for row in _rows("examples_multimodal", domain):
            # Tasks 2-4 queries are Task 1 queries with their images.
            assert text[row["id"]] == {k: row[k] for k in text[row["id"]]}
        for row in text.values():
            assert set(row["gold_ids"]) <= documents
            assert set(row["negative_ids"]) - {"N/A"} <= documents
            stored = [_norm(p) in query_images for p in row["image_paths"]]
            assert all(stored), row["id"]


def test_image_keys_match_passage_keys_except_the_orphan() -> None:
    orphans, absent = [], []
    for domain in demo_source.DOMAINS:
        keys = {
            m.group(1)
            for row in _rows("documents", domain)
            if (m := re.search(r"/([0-9a-f]+)_", row["id"]))
        }
        stored = {row["path"] for row in _rows("document_images", domain)}
        for path in stored:
            match = IMAGE_KEY.match(path)
            assert match and match.group(1) == domain
            if match.group(2) not in keys:
                orphans.append((domain, match.group(2)))
        for row in _rows("examples_multimodal", domain):
            for ref in row["positive_images"] + row["negative_images"]:
                key = IMAGE_KEY.match(_norm(ref["image_path"])).group(2)
                assert key in ref["source_passage_id"]
                if _norm(ref["image_path"]) not in stored:
                    absent.append(ref["image_path"])
    assert orphans == [("physics", demo_source.source_key("physics", "orphan-spectrum"))]
    assert len(absent) == 1  # a positive image missing from the corpus: "unavailable"


def test_query_images_use_the_published_path_form() -> None:
    for row in _all_rows("examples_multimodal"):
        assert all(IMAGE_KEY.match(_norm(p)) for p in row["image_paths"])


def test_every_query_has_a_designed_kind() -> None:
    ids = [row["id"] for row in _all_rows("examples")]
    assert sorted(ids) == sorted(demo_source.QUERY_KINDS)
    multimodal = {row["id"] for row in _all_rows("examples_multimodal")}
    designed = {q for q, kind in demo_source.QUERY_KINDS.items() if kind != "neutral"}
    assert designed <= multimodal
    assert {"clue", "misleading"} <= set(demo_source.QUERY_KINDS.values())


def test_a_source_that_disagrees_with_the_kinds_is_rejected(tmp_path: Path) -> None:
    shutil.copytree(demo_source.SOURCE_DIR, tmp_path, dirs_exist_ok=True)
    spec = json.loads((tmp_path / "gis.json").read_text())
    spec["queries"][0]["id"] = "gis_99"
    (tmp_path / "gis.json").write_text(json.dumps(spec))
    with pytest.raises(InputError, match="QUERY_KINDS"):
        demo_source.load_domain("gis", tmp_path)


def test_an_unknown_reference_is_rejected(tmp_path: Path) -> None:
    shutil.copytree(demo_source.SOURCE_DIR, tmp_path, dirs_exist_ok=True)
    spec = json.loads((tmp_path / "gis.json").read_text())
    spec["queries"][0]["positive"] = ["crs-assign:7"]
    (tmp_path / "gis.json").write_text(json.dumps(spec))
    with pytest.raises(InputError, match="crs-assign:7"):
        demo_source.load_domain("gis", tmp_path)


def _ndcg10(ranking: list[str], gold: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, doc in enumerate(ranking[:10]) if doc in gold)
    return dcg / sum(1 / math.log2(i + 2) for i in range(min(10, len(gold))))


def _image_effects(image_words: dict[str, str]) -> dict[str, tuple[float, float]]:
    """nDCG@10 of the official BM25 with the query text alone and with the image words added."""
    retriever = BM25Retriever(cache_dir="none")
    effects = {}
    for domain in demo_source.DOMAINS:
        docs = _rows("documents", domain)
        ids = [d["id"] for d in docs]
        index = retriever.index([d["content"] for d in docs])
        for row in _rows("examples_multimodal", domain):
            scores = []
            for text in (row["query"], f"{row['query']}\n{image_words[row['id']]}"):
                found = index.scores(retriever.analyzer.analyze(text), "gensim")
                run = {
                    i: s
                    for i, s in zip(ids, found.tolist(), strict=True)
                    if i not in row["negative_ids"]
                }
                scores.append(_ndcg10([doc for doc, _ in ranked(run)], set(row["gold_ids"])))
            effects[row["id"]] = (scores[0], scores[1])
    return effects


def _assert_designed_effects(effects: dict[str, tuple[float, float]]) -> None:
    for query_id, (text_only, with_image) in effects.items():
        kind = demo_source.QUERY_KINDS[query_id]
        if kind == "clue":
            assert with_image > text_only, query_id
        elif kind == "misleading":
            assert with_image < text_only, query_id


def test_image_words_help_clue_queries_and_hurt_misleading_ones() -> None:
    words = {}
    for domain in demo_source.DOMAINS:
        spec = json.loads((demo_source.SOURCE_DIR / f"{domain}.json").read_text())
        for query in spec["queries"]:
            words[query["id"]] = "\n".join(map(demo_images.image_text, query.get("images", [])))
    _assert_designed_effects(_image_effects(words))


@pytest.mark.slow
@pytest.mark.models
def test_ocr_reads_the_query_images_and_keeps_the_design() -> None:
    rapidocr = pytest.importorskip("rapidocr_onnxruntime")
    numpy = pytest.importorskip("numpy")
    engine = rapidocr.RapidOCR()
    words, recalls = {}, []
    designed = {q for q, kind in demo_source.QUERY_KINDS.items() if kind != "neutral"}
    for domain in demo_source.DOMAINS:
        spec = {
            q["id"]: q
            for q in json.loads((demo_source.SOURCE_DIR / f"{domain}.json").read_text())["queries"]
        }
        store = {row["path"]: row["bytes"] for row in _rows("examples_images", domain)}
        for row in _rows("examples_multimodal", domain):
            read = []
            for image_spec, path in zip(spec[row["id"]]["images"], row["image_paths"], strict=True):
                image = _decode(store[_norm(path)]) if row["id"] in designed else None
                if image is None:
                    continue
                result, _ = engine(numpy.asarray(image.convert("RGB")))
                text = " ".join(line[1] for line in result or [])
                want = set(re.findall(r"\w\w+", demo_images.image_text(image_spec).lower()))
                if want:
                    recalls.append(len(want & set(re.findall(r"\w\w+", text.lower()))) / len(want))
                read.append(text)
            words[row["id"]] = "\n".join(read)
    assert sum(recalls) / len(recalls) > 0.85
    effects = _image_effects(words)
    _assert_designed_effects({q: effects[q] for q in designed})
