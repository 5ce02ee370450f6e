"""MM-BRIGHT's id conventions: path normalisation, list cells and source keys.

The conventions are in docs/protocol.md, The data as published and Per-task protocol.

Passages are ``"<domain>/<hex key>_<n>.txt"`` (Biology: ``"<domain>/<key>_<n>_<chunk>.txt"``),
images ``"<domain>/<domain>_<8-hex key>_<nnnn>/image_<k>.<ext>"``. A passage and an image come
from the same source post when their keys are equal; Task 4 pairs them on that key.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from mmbright_core.data.choices import PROTOCOLS as PROTOCOLS
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import Protocol4

NO_IMAGE = "__NO_IMAGE__"
"""The image part of a Task 4 text-only pair id."""

PAIR_SEPARATOR = "|||"
"""Joins a passage id and an image path into a Task 4 pair id."""

PAIR_ID_FORMAT = f"'<passage id>{PAIR_SEPARATOR}<image path or {NO_IMAGE}>'"
"""How a Task 4 pair id reads, for messages that say what was expected."""

NONE_MARKER = "N/A"
"""The string ``negative_ids`` uses for "no negatives" (docs/protocol.md, The data as published)."""

# docs/protocol.md, Per-task protocol: the paper's key is the hex run right after the domain folder;
# the January 2026 release required exactly one numeric segment (``base_key_from_passage_id`` in
# src/utils.py of mm-bright/MM-BRIGHT), so Biology's chunked ids never matched. ``legacy`` grades
# with that key; ``release`` builds its pairs with it too, and scores them as the release does.
_RELEASED_KEY = re.compile(r"/([0-9a-f]+)_\d+\.txt$")
_PASSAGE_KEY = {
    "paper": re.compile(r"/([0-9a-f]+)_"),
    "legacy": _RELEASED_KEY,
    "release": _RELEASED_KEY,
}


def domain_query_id(domain: str, query_id: str) -> str:
    """Return a query's id in a file over several domains: ``<domain>/<query id>``.

    Query ids repeat across domains. ``run.trec`` and ``mmbright qrels`` write this form; the
    per-domain ``scores.json`` keeps the bare id, as the official harness writes it.
    """
    return f"{domain}/{query_id}"


def normalise_path(path: object) -> str:
    """Return an image path as a string with Windows backslashes turned into ``/``."""
    return str(path).replace("\\", "/")


def check_protocol(protocol: str) -> Protocol4:
    """Return ``protocol`` if it names a Task 4 protocol, else raise UnknownNameError."""
    if protocol not in _PASSAGE_KEY:
        raise UnknownNameError("protocol", protocol, PROTOCOLS)
    return protocol  # type: ignore[return-value]


def passage_key(passage_id: str, protocol: Protocol4 = "paper") -> str | None:
    """Return a passage's source key under a Task 4 protocol, or None when it has none.

    Args:
        passage_id: e.g. ``"biology/fec40b40_1635_4.txt"``.
        protocol: ``"paper"`` (key after the domain folder), or ``"legacy"`` and
            ``"release"`` (the released code's pattern, which gives chunked Biology ids no key).

    Returns:
        The hex key, e.g. ``"fec40b40"``, or None.
    """
    match = _PASSAGE_KEY[protocol].search(passage_id)
    return match.group(1) if match else None


def image_key(path: str, domain: str) -> str | None:
    """Return an image's source key: the hex run of ``{domain}_<key>_<n>`` in its path, or None."""
    match = re.search(rf"{re.escape(domain)}_([0-9a-f]+)_\d+", path)
    return match.group(1) if match else None


def pair_id(passage_id: str, image_path: str | None) -> str:
    """Return the Task 4 doc id of a passage with an image, or its text-only variant."""
    return f"{passage_id}{PAIR_SEPARATOR}{image_path if image_path else NO_IMAGE}"


def split_pair_id(doc_id: str) -> tuple[str, str | None]:
    """Split a Task 4 pair id into ``(passage id, image path or None)``.

    Raises:
        InputError: If ``doc_id`` is not a pair id.
    """
    passage_id, sep, image = doc_id.partition(PAIR_SEPARATOR)
    if not sep:
        raise InputError(
            "not a Task 4 pair id",
            expected=PAIR_ID_FORMAT,
            found=repr(doc_id),
        )
    return passage_id, None if image == NO_IMAGE else image


def pair_parts(doc_id: str) -> tuple[str, str | None]:
    """A doc id as ``(passage id, image path or None)``: a Task 4 pair split, others ``(id, None)``.

    Unlike :func:`split_pair_id`, any id is accepted: the views show ids of every task.
    """
    passage_id, sep, image = doc_id.partition(PAIR_SEPARATOR)
    if not sep:
        return doc_id, None
    return passage_id, None if image == NO_IMAGE else image


def passage_id(doc_id: str) -> str:
    """Return the passage part of a Task 4 pair id, or any other id itself."""
    return pair_parts(doc_id)[0]


def display_id(doc_id: str) -> str:
    """A doc id as people read it: a Task 4 pair as its passage and image name, or "text only".

    ``"physics/ab12_3.txt|||physics/physics_ab12_0001/image_1.png"`` reads
    ``"physics/ab12_3.txt + image_1.png"`` and ``"physics/ab12_3.txt|||__NO_IMAGE__"``
    ``"physics/ab12_3.txt (text only)"``: the image's folder repeats the passage's key
    (a pair shares its source post, ``docs/protocol.md``), and the separator and the
    marker are the file format's, not words. Other ids are shown as they are.
    """
    if PAIR_SEPARATOR not in doc_id:
        return doc_id
    passage_id, image = pair_parts(doc_id)
    return f"{passage_id} + {image.rsplit('/', 1)[-1]}" if image else f"{passage_id} (text only)"


def as_list(value: object, what: str) -> list[Any]:
    """Return a list cell as a Python list: None -> [], numpy arrays and tuples -> list.

    Args:
        value: The cell as pyarrow or pandas delivers it.
        what: The column name, for the error message.

    Raises:
        InputError: If the cell is neither null nor a sequence.
    """
    if value is None:
        return []
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return list(value)
    raise InputError(
        f"column {what!r} holds a {type(value).__name__}",
        expected="a list (or null)",
        found=repr(value)[:80],
    )


def as_str_list(value: object, what: str) -> list[str]:
    """Return a list cell of ids as strings (ids are strings: docs/protocol.md)."""
    return [str(item) for item in as_list(value, what)]


def image_structs(value: object, what: str) -> list[tuple[str, str | None]]:
    """Return ``positive_images``/``negative_images`` as ``(normalised path, source passage)``.

    Args:
        value: A list of ``{image_path, source_passage_id}`` structs (or bare path strings).
        what: The column name, for the error message.

    Raises:
        InputError: If an entry is neither a struct with ``image_path`` nor a string.
    """
    out: list[tuple[str, str | None]] = []
    for item in as_list(value, what):
        if isinstance(item, str):
            out.append((normalise_path(item), None))
        elif isinstance(item, dict) and item.get("image_path") is not None:
            source = item.get("source_passage_id")
            out.append(
                (normalise_path(item["image_path"]), None if source is None else str(source))
            )
        else:
            raise InputError(
                f"column {what!r} has an entry without an image path",
                expected="a struct {image_path, source_passage_id}",
                found=repr(item)[:80],
            )
    return out


def without_none_marker(ids: Iterable[str]) -> frozenset[str]:
    """Return ``negative_ids`` as a set, leaving out the ``"N/A"`` marker (docs/protocol.md)."""
    return frozenset(i for i in ids if i != NONE_MARKER)
