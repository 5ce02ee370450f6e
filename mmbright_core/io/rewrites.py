"""Rewritten query sets (``mmbright rewrite --out Q``): JSON Lines, one record per query.

A record holds everything that made its query text, so that it can be checked and reused
(docs/commands.md, "Rewritten queries")::

    {"format": "mmbright-rewrites/1", "key": "<sha256 of the rest of the record>",
     "source": "demo", "task": 2, "domain": "biology", "query_id": "3",
     "original": "<the query text>", "images": [{"path": "...", "sha256": "..."}],
     "prompt": {"name": "reason", "template": "...", "system": "...", "query_newlines": " ",
                "combine": "replace", "image_policy": "all", "image_side": 1024},
     "llm": {"model": "...", "endpoint": "http://...", "parameters": {"temperature": 0.8, ...}},
     "answer": "<the LLM's text>" or null, "problem": null or "<why there is none>",
     "tokens": {"prompt": 120, "completion": 300},
     "query": "<the text retrievers are given>"}

``key`` is the sha256 of the record's other fields as canonical JSON: a record edited by
hand no longer matches its key and is refused. Every record of a set shares ``source``,
``task``, ``prompt`` and ``llm`` (one set is one experiment); a query id appears once per
domain. Records are written in the source's domain and query order, so the same inputs
give the same bytes. A set holding queries whose text is empty (or white space only) is read
as given, with one :class:`~mmbright_core.errors.InputWarning` counting them: a retriever
ranks nothing for an empty query, so each scores 0. The file a run on such a set writes per
domain is :mod:`mmbright_core.io.run_rewrites`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mmbright_core.errors import InputError, InputWarning, show
from mmbright_core.io.json_shapes import JsonObject, json_kind, object_pairs, parse_json
from mmbright_core.io.reading import Readable, decode, load

FORMAT = "mmbright-rewrites/1"
SHARED = ("source", "task", "prompt", "llm")
TOKEN_FIELDS = ("prompt", "completion")
"""The fields of a record's ``tokens``: the server's counts of the request and the answer."""
#: The largest token count a record may hold (a signed 64-bit integer's largest).
MOST_TOKENS = 2**63 - 1
"""The fields every record of one set has equal."""
_FIELDS: dict[str, Any] = {
    "format": str,
    "key": str,
    "source": str,
    "task": int,
    "domain": str,
    "query_id": str,
    "original": str,
    "images": list,
    "prompt": dict,
    "llm": dict,
    "answer": (str, type(None)),
    "problem": (str, type(None)),
    "tokens": dict,
    "query": str,
}


@dataclass(frozen=True)
class Rewrite:
    """One query of a set, as rewritten.

    Attributes:
        domain: The query's domain.
        query_id: The query's id.
        original: The query text the LLM was shown.
        images: ``(path, sha256)`` of each query image the LLM was shown, in order.
        answer: The LLM's text (None when its answer was unusable).
        problem: Why there is no answer, else None.
        prompt_tokens: Tokens of the request, as the server counted them.
        completion_tokens: Tokens of the answer.
        query: The text retrievers are given (the answer, or the original with it appended,
            by the prompt's ``combine``; the original where there is no answer).
    """

    domain: str
    query_id: str
    original: str
    images: tuple[tuple[str, str], ...]
    answer: str | None
    problem: str | None
    prompt_tokens: int
    completion_tokens: int
    query: str


@dataclass(frozen=True)
class QuerySet:
    """A rewritten query set read from a file.

    Attributes:
        name: The file's name.
        sha256: The sha256 of the file's bytes (recorded by the runs that use it).
        settings: ``source``, ``task``, ``prompt`` and ``llm``, shared by every record.
        rewrites: ``(domain, query_id)`` -> the rewrite, in file order.
    """

    name: str
    sha256: str
    settings: Mapping[str, Any]
    rewrites: Mapping[tuple[str, str], Rewrite]

    @property
    def task(self) -> int:
        """The task the set's queries belong to."""
        return int(self.settings["task"])

    def domains(self) -> tuple[str, ...]:
        """The domains the set covers, in file order."""
        return tuple(dict.fromkeys(domain for domain, _ in self.rewrites))

    def empty(self) -> list[tuple[str, str]]:
        """``(domain, query_id)`` of each query whose text is empty or white space only."""
        return [where for where, rewrite in self.rewrites.items() if not rewrite.query.strip()]


def record_key(record: Mapping[str, Any]) -> str:
    """The sha256 of a record's fields other than ``key``, as canonical JSON."""
    body = {name: value for name, value in record.items() if name != "key"}
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def keyed(record: Mapping[str, Any]) -> dict[str, Any]:
    """``record`` with its ``format`` and ``key`` set."""
    body = {**record, "format": FORMAT}
    return {**body, "key": record_key(body)}


def query_set_text(records: Iterable[Mapping[str, Any]]) -> str:
    """The JSON Lines text of a set: each record keyed, one per line, keys sorted."""
    lines = (json.dumps(keyed(r), sort_keys=True, ensure_ascii=False) for r in records)
    return "".join(f"{line}\n" for line in lines)


def read_query_set(src: Readable) -> QuerySet:
    """Read a rewritten query set, checking every record.

    Args:
        src: A path, inline text, bytes or an open file (as every reader takes).

    Raises:
        InputError: Not JSON Lines of this format, a field missing or of the wrong type, a
            record whose key does not match its content, records of different settings,
            or a query listed twice; each names the file, the line and the fix.

    Warns:
        InputWarning: Queries whose text is empty, with their count and the first.
    """
    loaded = load(src)
    text = decode(loaded)
    rewrites: dict[tuple[str, str], Rewrite] = {}
    settings: dict[str, Any] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        record = _record(line, loaded.name, number)
        _check_images(record["images"], loaded.name, number)
        _check_tokens(record["tokens"], loaded.name, number)
        shared = {name: record[name] for name in SHARED}
        if settings is None:
            settings = shared
        elif shared != settings:
            differing = [name for name in SHARED if shared[name] != settings[name]]
            raise InputError(
                f"a record of other settings ({', '.join(differing)}) than the first",
                source=loaded.name,
                line=number,
                expected="one source, task, prompt and model per query set",
                found=f"{differing[0]} {show(json.dumps(shared[differing[0]]))}",
                hint="Write each experiment to its own file (mmbright rewrite --out)",
            )
        rewrite = _rewrite(record)
        where = (rewrite.domain, rewrite.query_id)
        if where in rewrites:
            raise InputError(
                "a query listed twice",
                source=loaded.name,
                line=number,
                expected="each query once",
                found=f"domain {show(where[0])}, query {show(where[1])} again",
            )
        rewrites[where] = rewrite
    if settings is None:  # decode() refused blank content: unreachable, kept for mypy
        raise InputError("empty query set", source=loaded.name)
    digest = hashlib.sha256(loaded.data).hexdigest()
    found = QuerySet(loaded.name, digest, settings, rewrites)
    empty = found.empty()
    if empty:
        domain, query_id = empty[0]
        warnings.warn(
            f"{loaded.name}: {len(empty):,} of {len(rewrites):,} queries have an empty text "
            f"(the first: domain {show(domain)}, query {show(query_id)}); they are ranked with "
            "no text and score 0. Rewrite them again with mmbright rewrite, which keeps a "
            "query's own text where the answer is empty",
            InputWarning,
            stacklevel=2,
        )
    return found


def _record(line: str, name: str, number: int) -> dict[str, Any]:
    where = f"{name}:{number}"
    record = plain(object_pairs(parse_json(line, where), where, (), "(one rewritten query)"))
    for field, kind in _FIELDS.items():
        if field not in record:
            raise InputError(
                f"a record without {field!r}", source=name, line=number, expected=_expected()
            )
        value = record[field]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise InputError(
                f"a record's {field!r} has the wrong type",
                source=name,
                line=number,
                expected=_kind_name(kind),
                found=json_kind(value),
            )
    if record["format"] != FORMAT:
        raise InputError(
            "not a rewritten query set",
            source=name,
            line=number,
            expected=f"format {FORMAT!r}",
            found=show(record["format"]),
        )
    if record["key"] != record_key(record):
        raise InputError(
            "a record whose key does not match its content (edited by hand?)",
            source=name,
            line=number,
            found=f"domain {show(record['domain'])}, query {show(record['query_id'])}",
            hint="Rewrite the queries again with mmbright rewrite (answers come from the "
            "cache); to try another text, use a prompt template (--prompt FILE)",
        )
    return record


def plain(value: Any) -> Any:
    """The value with JSON objects read as pairs made dicts again, at every depth."""
    # So that a record hashes as it was written.
    if isinstance(value, JsonObject):
        return {key: plain(item) for key, item in value}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def _check_images(images: list[Any], name: str, number: int) -> None:
    for image in images:
        if not (
            isinstance(image, dict)
            and isinstance(image.get("path"), str)
            and isinstance(image.get("sha256"), str)
        ):
            raise InputError(
                "a record's image is not a path and a sha256",
                source=name,
                line=number,
                expected='{"path": "...", "sha256": "..."}',
                found=show(json.dumps(image)),
            )


def _check_tokens(tokens: dict[str, Any], name: str, number: int) -> None:
    # A count read as given must be one: int() took "12", 1.5 and true, and crashed on [1].
    fields = [f"no {field!r}" for field in TOKEN_FIELDS if field not in tokens]
    fields += [f"a field {field!r}" for field in tokens if field not in TOKEN_FIELDS]
    for field in TOKEN_FIELDS:
        value = tokens.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MOST_TOKENS:
            fields.append(f"{field!r} is {json_kind(value)}")
    if fields:
        raise InputError(
            "a record's 'tokens' are not token counts",
            source=name,
            line=number,
            expected='{"prompt": N, "completion": N}, whole numbers of at least 0',
            found=", ".join(fields),
            hint="Rewrite the queries again with mmbright rewrite (answers come from the cache)",
        )


def _rewrite(record: Mapping[str, Any]) -> Rewrite:
    tokens = record["tokens"]
    images = tuple((i["path"], i["sha256"]) for i in record["images"])
    return Rewrite(
        domain=record["domain"],
        query_id=record["query_id"],
        original=record["original"],
        images=images,
        answer=record["answer"],
        problem=record["problem"],
        prompt_tokens=tokens["prompt"],
        completion_tokens=tokens["completion"],
        query=record["query"],
    )


def _expected() -> str:
    return f"the fields {', '.join(_FIELDS)}"


def _kind_name(kind: Any) -> str:
    names = {str: "a string", int: "an integer", list: "an array", dict: "an object"}
    if isinstance(kind, tuple):
        return " or ".join("null" if k is type(None) else names[k] for k in kind)
    return names[kind]
