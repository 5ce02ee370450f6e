"""The words an OCR run read from its query images, recorded beside its scores (``ocr.json``).

An image-aware text run (``ocr-bm25``, ``ocr-dense``) ranks each query's text with the words
read from its images appended. Those words are what the image added, so they are kept with
the run, one file per domain beside ``scores.json``::

    {"format": "mmbright-ocr-words/1",
     "engine": {"engine": "rapidocr-onnxruntime", "version": "1.4.4", "min_score": 0.5},
     "image_policy": "first",
     "texts": {"<sha256 of the image file's bytes>": "the recognised text"},
     "queries": {"<query id>": [{"path": "<image path>", "sha256": "<...>"}]}}

``texts`` is keyed by the content of each image file, under the engine settings of the
header: the words belong to those bytes read by that engine, whatever the path. ``queries``
lists, per query, the images the run read, in the order it appended their words (the image
policy's choice among the images that decode). A dashboard can then show and explain every
hit of the run from the run alone, with or without an OCR engine installed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from mmbright_core.errors import InputError
from mmbright_core.io.json_shapes import json_kind, json_path, object_pairs, parse_json
from mmbright_core.io.reading import decode, load

OCR_FILE = "ocr.json"
"""The file name, in each domain folder of a run."""
FORMAT = "mmbright-ocr-words/1"
_ENGINE_KEYS = ("engine", "version", "min_score")
_SHA256_HEX = 64


class ImageRead(NamedTuple):
    """One query image as an OCR run read it.

    Attributes:
        path: The image path, as the query lists it.
        sha256: The sha256 of the image file's bytes.
        text: The recognised text, one line per text box ("" when none was found).
    """

    path: str
    sha256: str
    text: str


@dataclass(frozen=True)
class OcrWords:
    """The recorded words of one run, over the domains read so far.

    Attributes:
        engine: The OCR engine's settings (``engine``, ``version``, ``min_score``).
        image_policy: Which of a query's images were read (``first`` or ``all``).
        texts: sha256 of an image file's bytes -> the text the engine read from it.
        queries: domain -> query id -> ``(path, sha256)`` of each image read, in order.
    """

    engine: Mapping[str, Any]
    image_policy: str
    texts: Mapping[str, str] = field(default_factory=dict)
    queries: Mapping[str, Mapping[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    def images_read(self, domain: str, query_id: str) -> list[ImageRead] | None:
        """The images the run read for one query, with their words (None: not recorded)."""
        found = self.queries.get(domain, {}).get(query_id)
        if found is None:
            return None
        return [ImageRead(path, key, self.texts[key]) for path, key in found]

    def merged(self, other: OcrWords, where: str) -> OcrWords:
        """These words and ``other``'s (another domain of the same run).

        Raises:
            InputError: The two were read with other engine settings or image policies.
        """
        if dict(other.engine) != dict(self.engine) or other.image_policy != self.image_policy:
            raise InputError(
                "the domains of one run record different OCR settings",
                source=where,
                expected=f"engine {dict(self.engine)}, image policy {self.image_policy!r}",
                found=f"engine {dict(other.engine)}, image policy {other.image_policy!r}",
                hint="Run the retriever again over every domain into a fresh folder",
            )
        return OcrWords(
            self.engine,
            self.image_policy,
            {**self.texts, **other.texts},
            {**self.queries, **other.queries},
        )


def ocr_words_json(
    engine: Mapping[str, Any], image_policy: str, reads: Mapping[str, Iterable[ImageRead]]
) -> str:
    """Return the ``ocr.json`` text of one domain.

    Args:
        engine: The engine settings (``engine``, ``version``, ``min_score``).
        image_policy: The image policy the run used.
        reads: query id -> the images read for it, in the order their words were appended.
    """
    texts: dict[str, str] = {}
    queries: dict[str, list[dict[str, str]]] = {}
    for query_id, images in reads.items():
        queries[query_id] = []
        for image in images:
            texts[image.sha256] = image.text
            queries[query_id].append({"path": image.path, "sha256": image.sha256})
    body = {
        "format": FORMAT,
        "engine": dict(engine),
        "image_policy": image_policy,
        "texts": dict(sorted(texts.items())),
        "queries": queries,
    }
    return json.dumps(body, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def read_ocr_words(path: str | os.PathLike[str], domain: str) -> OcrWords:
    """Read one domain's ``ocr.json``.

    Args:
        path: The file.
        domain: The domain it belongs to (its folder's name).

    Raises:
        InputError: The file is too large, not JSON, or not in the format above; the
            message names the file, the JSON path and what was expected there.
    """
    loaded = load(Path(path))
    name = loaded.name
    top = object_pairs(
        parse_json(decode(loaded), name), name, (), "with format, engine, texts, queries"
    )
    if top.get("format") != FORMAT:
        raise _bad(name, ("format",), repr(FORMAT), top.get("format"))
    engine = object_pairs(top.get("engine"), name, ("engine",), "of OCR engine settings")
    if sorted(engine) != sorted(_ENGINE_KEYS):
        raise InputError(
            f"wrong keys at {json_path('engine')}",
            source=name,
            expected=", ".join(_ENGINE_KEYS),
            found=", ".join(sorted(engine)) or "none",
        )
    policy = top.get("image_policy")
    if not isinstance(policy, str):
        raise _bad(name, ("image_policy",), "a string", policy)
    texts = object_pairs(top.get("texts"), name, ("texts",), "of image sha256 -> text")
    for key, text in texts.items():
        if len(key) != _SHA256_HEX or not isinstance(text, str):
            raise _bad(name, ("texts", key), "a text under a 64-hex sha256 key", text)
    queries = object_pairs(top.get("queries"), name, ("queries",), "of query id -> images")
    read = {q: _query_images(v, texts, name, q) for q, v in queries.items()}
    return OcrWords(dict(engine), policy, texts, {domain: read})


def _query_images(
    value: Any, texts: Mapping[str, str], name: str, query_id: str
) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, list):
        raise _bad(name, ("queries", query_id), "an array of images read", value)
    out = []
    for index, item in enumerate(value):
        where = ("queries", query_id, str(index))
        image = object_pairs(item, name, where, "with path and sha256")
        path, key = image.get("path"), image.get("sha256")
        if not isinstance(path, str) or not isinstance(key, str) or key not in texts:
            raise _bad(name, where, "a path and the sha256 of a text in $['texts']", item)
        out.append((path, key))
    return tuple(out)


def _bad(name: str, keys: tuple[str, ...], expected: str, found: Any) -> InputError:
    return InputError(
        f"bad value at {json_path(*keys)}",
        source=name,
        expected=expected,
        found=json_kind(found),
        hint="Run the retriever again to rewrite the run's ocr.json",
    )
