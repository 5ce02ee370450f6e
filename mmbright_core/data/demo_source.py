"""The demo's content, read into rows: passages, queries and their images, per domain.

The content (passages, queries, image descriptions) lives in ``demo/source/<domain>.json``;
:func:`load_domain` turns one file into the rows of every config with exactly the published
id conventions (docs/protocol.md, The data as published). Ids and numbers derive from
SHA-256 of names and filler text from seeded RNGs, so the same files give the same rows;
:mod:`mmbright_core.data.demo_build` writes them.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mmbright_core.data.demo_images import extension, render_image
from mmbright_core.errors import InputError

SOURCE_DIR = Path(__file__).parent / "demo" / "source"
DOMAINS = ("askubuntu", "biology", "gis", "physics")
# docs/protocol.md, The data as published: Biology ids are <key>_<n>_<chunk>.txt.
CHUNKED_DOMAINS = frozenset({"biology"})

# Which way image-aware retrieval (query text + the text read from its images) is designed
# to move each query against text-only retrieval:
#   clue        the text is vague; the image carries the decisive words of the gold passage
#   misleading  the text points to the gold passage; the image's words match a distractor
#   neutral     the image agrees with the text, carries no text, or there is no image
QUERY_KINDS: Mapping[str, str] = {
    "askubuntu_0": "clue",  # "E: Unable to locate package libssl1.1"
    "askubuntu_1": "clue",  # "Could not get lock /var/lib/dpkg/lock-frontend"
    "askubuntu_2": "clue",  # lspci shows a Realtek RTL8821CE; the text matches Broadcom
    "askubuntu_3": "misleading",  # NVIDIA + Secure Boot, image is a GRUB menu
    "askubuntu_4": "misleading",  # Firefox snap, image is systemd-analyze blame
    "askubuntu_5": "neutral",
    "askubuntu_6": "neutral",  # its only image is an SVG
    "askubuntu_7": "neutral",
    "askubuntu_8": "neutral",
    "biology_0": "clue",  # "no NGG PAM" in the design schematic
    "biology_1": "misleading",  # C4 plants, image is a Michaelis-Menten plot
    "biology_2": "clue",  # the drawing is labelled "metaphase plate"
    "biology_3": "neutral",
    "biology_4": "neutral",
    "biology_5": "neutral",
    "biology_6": "neutral",
    "biology_7": "neutral",
    "gis_0": "clue",  # layer properties show EPSG:4326 vs EPSG:27700
    "gis_1": "clue",  # "Cannot find proj.db"
    "gis_2": "misleading",  # shapefile field names, image is a hillshade map
    "gis_3": "neutral",
    "gis_4": "neutral",
    "gis_5": "neutral",
    "gis_6": "neutral",
    "gis_7": "neutral",
    "gis_8": "neutral",
    "physics_0": "misleading",  # pendulum, image is a resonance plot
    "physics_1": "clue",  # twin paradox diagram
    "physics_2": "clue",  # Hall voltage plot
    "physics_3": "neutral",
    "physics_4": "neutral",
    "physics_5": "neutral",
    "physics_6": "neutral",
    "physics_7": "neutral",
    "physics_8": "neutral",
}


def source_key(domain: str, name: str, length: int = 8) -> str:
    """Return the hex source key of a named thread (8 hex digits; 16 for hard negatives).

    Args:
        domain: The domain the thread belongs to.
        name: The thread's name in the source file.
        length: How many hex digits.

    Returns:
        A stable hex key derived from SHA-256, so ids never change between builds.
    """
    return hashlib.sha256(f"{domain}/{name}".encode()).hexdigest()[:length]


def _number(domain: str, name: str, modulo: int) -> int:
    """A stable number for a thread (post numbers in passage ids and image folders)."""
    return int(hashlib.sha256(f"#{domain}/{name}".encode()).hexdigest()[:8], 16) % modulo


_T = TypeVar("_T")


@dataclass
class DomainRows:
    """The rows of every config of one domain, filled while reading its source file."""

    name: str
    source: Path
    documents: dict[str, str] = field(default_factory=dict)
    passage_ids: dict[str, list[list[str]]] = field(default_factory=dict)  # topic -> ids
    image_refs: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    document_images: dict[str, bytes] = field(default_factory=dict)
    query_images: dict[str, bytes] = field(default_factory=dict)
    examples: list[dict[str, Any]] = field(default_factory=list)
    multimodal: list[dict[str, Any]] = field(default_factory=list)

    def add_passage(self, topic: str, key: str, number: int, paragraphs: Sequence[str]) -> None:
        """Add one passage (chunked per paragraph in chunked domains) under ``topic``."""
        base = f"{self.name}/{key}_{number}"
        if self.name in CHUNKED_DOMAINS and paragraphs:
            ids = [f"{base}_{c}.txt" for c in range(len(paragraphs))]
            texts = list(paragraphs)
        else:
            ids = [f"{base}_0.txt" if self.name in CHUNKED_DOMAINS else f"{base}.txt"]
            texts = ["\n\n".join(paragraphs)]
        self.documents.update(zip(ids, texts, strict=True))
        self.passage_ids.setdefault(topic, []).append(ids)


def _image_path(domain: str, key: str, folder: int, index: int, spec: Mapping[str, Any]) -> str:
    """The published image path ``<domain>/<domain>_<key>_<nnnn>/image_<k>.<ext>``."""
    return f"{domain}/{domain}_{key}_{folder:04d}/image_{index}.{extension(spec)}"


def _add_topic(dom: DomainRows, topic: str, spec: Mapping[str, Any]) -> None:
    """Add a topic's passages and its corpus images (keyed like the passages)."""
    key, number = source_key(dom.name, topic), 100 + _number(dom.name, topic, 90000)
    if "duplicate_of" in spec:
        original = _resolve(dom, spec["duplicate_of"], dom.passage_ids)
        spec = {"passages": [[dom.documents[i] for i in original]]}
    for offset, paragraphs in enumerate(spec.get("passages", [])):
        dom.add_passage(topic, key, number + offset, paragraphs)
    # An orphan's passage is gone from the corpus: its images keep a dangling source id.
    missing_source = f"{dom.name}/{key}_{number}.txt"
    folder, refs = _number(dom.name, f"{topic}/images", 10000), []
    for k, image in enumerate(spec.get("images", []), start=1):
        path = _image_path(dom.name, key, folder, k, image)
        passages = dom.passage_ids.get(topic)
        refs.append((path, passages[image.get("passage", 0)][0] if passages else missing_source))
        data = render_image(image, seed=f"{dom.name}/{topic}/{k}")
        if data is not None:
            dom.document_images[path] = data
    dom.image_refs[topic] = refs


def _add_filler(dom: DomainRows, spec: Mapping[str, Any]) -> None:
    """Add template-made background threads: realistic vocabulary, no designed role."""
    rng = random.Random(_number(dom.name, "filler", 2**31))
    for t in range(spec["topics"]):
        passages = []
        for p in range(rng.randint(1, 3)):
            # The first passage of the first thread is long, for length variety.
            n_paras = 9 if t == p == 0 else rng.randint(1, 4)
            paras = [
                " ".join(rng.sample(spec["sentences"], rng.randint(2, 4))) for _ in range(n_paras)
            ]
            paras[0] = f"{rng.choice(spec['openers'])} {paras[0]}"
            if rng.random() < 0.5:
                paras[-1] = f"{paras[-1]} {rng.choice(spec['closers'])}"
            passages.append(paras)
        images = spec["images"][t : t + 1] if t < len(spec["images"]) else []
        _add_topic(dom, f"filler-{t}", {"passages": passages, "images": images})


def _resolve(dom: DomainRows, ref: str, table: Mapping[str, Sequence[_T]]) -> _T:
    """Look up ``topic:k`` (the k-th passage or image of a topic) in one of the tables."""
    topic, _, index = ref.rpartition(":")
    items = table.get(topic, ())
    if not index.isdigit() or int(index) >= len(items):
        raise InputError(
            "unknown reference in the demo source",
            source=str(dom.source),
            expected=f"<topic>:<k> with k below {len(items)} for topic {topic!r}",
            found=repr(ref),
        )
    return items[int(index)]


def _image_ref(dom: DomainRows, ref: str) -> dict[str, str]:
    """Resolve ``[win:]topic:k`` to a published image struct; ``win:`` writes backslashes."""
    windows = ref.startswith("win:")
    path, source = _resolve(dom, ref.removeprefix("win:"), dom.image_refs)
    return {"image_path": path.replace("/", "\\") if windows else path, "source_passage_id": source}


def _add_query(
    dom: DomainRows, query: Mapping[str, Any], hard_negatives: Mapping[str, str]
) -> None:
    """Add one query to ``examples`` and, when it has images, to ``examples_multimodal``."""
    qid = query["id"]
    key, folder = source_key(dom.name, f"query/{qid}"), _number(dom.name, f"query/{qid}", 10000)
    image_paths = []
    for k, image in enumerate(query.get("images", []), start=1):
        path = _image_path(dom.name, key, folder, k, image)
        data = render_image(image, seed=f"{dom.name}/{qid}/{k}")
        if data is not None:
            dom.query_images[path] = data
        image_paths.append(path.replace("/", "\\") if image.get("win") else path)
    gold = [pid for ref in query["gold"] for pid in _resolve(dom, ref, dom.passage_ids)]
    negatives = query.get("negatives")
    row = {
        "id": qid,
        "query": query["text"],
        "gold_ids": gold,
        # docs/protocol.md, The data as published: the string "N/A" in negative_ids means "none".
        "negative_ids": ["N/A"] if negatives is None else [hard_negatives[n] for n in negatives],
        "image_paths": image_paths,
        "gold_answers": [query["answer"]],
    }
    dom.examples.append(row)
    if image_paths:
        dom.multimodal.append(
            {
                **row,
                "positive_images": [_image_ref(dom, r) for r in query["positive"]],
                "negative_images": [_image_ref(dom, r) for r in query["negative"]],
            }
        )


def load_domain(domain: str, source_dir: Path = SOURCE_DIR) -> DomainRows:
    """Read one domain's source file and produce its rows (documents, queries, images).

    Args:
        domain: One of ``DOMAINS``.
        source_dir: The folder holding ``<domain>.json``.

    Returns:
        The domain's rows, ready to be written.

    Raises:
        InputError: When the source refers to a passage or image it does not define, or
            its query ids and ``QUERY_KINDS`` disagree.
    """
    source = source_dir / f"{domain}.json"
    spec = json.loads(source.read_text(encoding="utf-8"))
    dom = DomainRows(domain, source)
    for topic, topic_spec in spec["topics"].items():
        _add_topic(dom, topic, topic_spec)
    hard_negatives = {}
    for name, paragraphs in spec["hard_negatives"].items():
        key, number = source_key(domain, name, 16), 100 + _number(domain, name, 90000)
        dom.add_passage(name, key, number, paragraphs)
        hard_negatives[name] = dom.passage_ids[name][0][0]
    _add_filler(dom, spec["filler"])
    ids = {q["id"] for q in spec["queries"]}
    kinds = {q for q in QUERY_KINDS if q.startswith(f"{domain}_")}
    if ids != kinds:
        raise InputError(
            "query ids of the demo source and QUERY_KINDS differ",
            source=str(source),
            expected=str(sorted(kinds)),
            found=str(sorted(ids)),
            hint="Add every query to QUERY_KINDS with its kind (clue, misleading, neutral)",
        )
    for query in spec["queries"]:
        _add_query(dom, query, hard_negatives)
    return dom
