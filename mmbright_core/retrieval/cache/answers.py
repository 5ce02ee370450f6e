"""Answers kept on disk, one small JSON file each, keyed by everything that made them.

:class:`AnswerCache` is the one layout of the package's keyed answers: each under
``<root>/<folder>/<key[:2]>/<key>.json`` (two levels, so no folder holds millions of files),
written atomically (:mod:`mmbright_core.io.atomic`) as soon as it is known, so a job killed
at any point keeps every answer stored before the kill. Its users: the chat answers
(:class:`~mmbright_core.llm.cache.ChatCache`, under ``chat/``), the rerankers'
(:class:`~mmbright_core.rerank.cache.RerankCache`, under ``rerank/``), the words the OCR
engine read and where (:class:`~mmbright_core.retrieval.backends.ocr_reader.OcrReader`,
under ``ocr/``), and the occlusion grids (:mod:`~mmbright_core.retrieval.dual.regions`, under
``regions/``).

An entry that cannot be read, is not JSON or that its user's decoder refuses is never
trusted: it is asked or computed again. A cache whose entries carry a checksum (``checked``:
the field it guards) also reports and deletes an entry that does not match it or cannot be
read (:mod:`~mmbright_core.retrieval.cache.verify`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.cache.verify import bytes_match, bytes_record, remove, report_damaged

Answer = TypeVar("Answer")

#: What a decoder raises for an entry that is not its form: the entry is refused.
_REFUSED = (OSError, ValueError, KeyError, TypeError, AttributeError)


class AnswerCache:
    """Answers as JSON files under ``<root>/<folder>/<key[:2]>/<key>.json``.

    Args:
        root: The cache root, or None to keep nothing.
        folder: The answers' folder under the root (a relative path).
        sort_keys: Whether an entry's fields are written sorted (else in the order given).
        checked: The entry's text field a checksum guards (stored as ``checksum``), or None.
        sync: Whether each write is flushed to the disk before it is renamed into place
            (an answer that can be asked again needs not be).
    """

    def __init__(
        self,
        root: Path | None,
        folder: str | Path,
        *,
        sort_keys: bool,
        checked: str | None = None,
        sync: bool = False,
    ) -> None:
        self.folder = None if root is None else root / folder
        self.sort_keys = sort_keys
        self.checked = checked
        self.sync = sync

    def get(self, key: str, decode: Callable[[Any], Answer | None]) -> Answer | None:
        """Return ``decode`` of the entry of ``key`` (its JSON), or None.

        None also when there is no root, no entry, or an entry that cannot be read, is not
        JSON, or that ``decode`` refuses (returns None, or raises ``ValueError``,
        ``KeyError``, ``TypeError`` or ``AttributeError``): such an answer is asked again
        rather than trusted. With ``checked``, an entry whose checksum does not match, or
        that cannot be read or decoded, is reported, deleted and counts as absent.
        """
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            if self.checked is None:
                return decode(entry)
            text = entry[self.checked]
            if isinstance(text, str) and bytes_match(text.encode("utf-8"), entry["checksum"]):
                return decode(entry)
            problem = f"its checksum does not match its {self.checked}"
        except _REFUSED as err:
            if self.checked is None:
                return None
            problem = f"unreadable ({type(err).__name__})"
        report_damaged(path, problem)
        remove([path])
        return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store ``entry`` under ``key``, atomically (nothing without a root).

        With ``checked``, the checksum of that field's text is stored with it.
        """
        path = self._path(key)
        if path is None:
            return
        if self.checked is not None:
            text = entry[self.checked]
            entry = {**entry, "checksum": bytes_record(text.encode("utf-8"))["checksum"]}
        atomic_write_text(path, json.dumps(entry, sort_keys=self.sort_keys) + "\n", sync=self.sync)

    def _path(self, key: str) -> Path | None:
        return None if self.folder is None else self.folder / key[:2] / f"{key}.json"
