"""A ``query_id -> doc_id -> value`` table read from text: JSON or TREC lines, ids bounded.

Runs and qrels read alike once their bytes are loaded: decode the text, parse it as JSON
``{query_id: {doc_id: value}}`` or as TREC lines, then refuse an over-long id naming its
line. Each reader keeps its own rule for telling the formats apart and its own grammar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from mmbright_core.io.json_shapes import nested_json
from mmbright_core.io.limits import check_id_lengths
from mmbright_core.io.reading import Loaded, decode

V = TypeVar("V")


def parse_table(
    loaded: Loaded,
    is_json: Callable[[str], bool],
    leaf: Callable[[Any, str, tuple[str, str]], V],
    what: str,
    parse_trec: Callable[[str, str], dict[str, dict[str, V]]],
) -> dict[str, dict[str, V]]:
    """Decode ``loaded`` and parse it as JSON or TREC lines, checking the ids' lengths.

    Args:
        loaded: The source's content.
        is_json: Given the decoded text, whether it is to be read as JSON.
        leaf: Converts one JSON value (see :func:`~mmbright_core.io.json_shapes.nested_json`).
        what: What the values are ("score", "relevance"), for messages.
        parse_trec: Parses the text as TREC lines, given it and the source's name.

    Raises:
        InputError: The text is not UTF-8, is empty or malformed, or holds an over-long id.
    """
    text = decode(loaded)
    if is_json(text):
        table = nested_json(text, loaded.name, leaf, what)
    else:
        table = parse_trec(text, loaded.name)
    check_id_lengths(table, loaded.name, text)
    return table
