"""A BM25 plugin that stops inside one domain until a signal arrives (Ctrl-C tests).

``blocking_retriever:make`` is BM25 (its settings, so a rerun with plain bm25 options reuses
its domains). With ``MMBRIGHT_TEST_STOP_AT=<domain>:<fifo>`` in the environment, retrieving
that domain first writes the domain's name to the FIFO (the test waits on it, no sleep),
then blocks until the process is interrupted: the domain is in progress for certain. With
``MMBRIGHT_TEST_GO=<fifo>`` too, it blocks only until a line is written to that FIFO, then
goes on (two jobs at once, one held at a known point). ``MMBRIGHT_TEST_FAIL_AT=<domain>``
makes that domain fail with one error instead. ``held_jobs.py`` starts such jobs.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.types import TaskData

STOP_ENV = "MMBRIGHT_TEST_STOP_AT"
GO_ENV = "MMBRIGHT_TEST_GO"
FAIL_ENV = "MMBRIGHT_TEST_FAIL_AT"


class BlockingBM25(BM25Retriever):
    """BM25 that blocks inside the domain named by ``$MMBRIGHT_TEST_STOP_AT``."""

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Retrieve as BM25 does, after blocking in the chosen domain."""
        if data.domain == os.environ.get(FAIL_ENV):
            raise InputError(f"planted failure in {data.domain}", hint="Run it again")
        domain, _, fifo = os.environ.get(STOP_ENV, "").partition(":")
        if domain == data.domain:
            with open(fifo, "w", encoding="utf-8") as ready:
                ready.write(f"{domain}\n")
            go = os.environ.get(GO_ENV)
            if go:
                with open(go, encoding="utf-8") as told:
                    told.readline()
            else:
                threading.Event().wait()  # until SIGINT raises KeyboardInterrupt here
        return super().retrieve(data, source, k)


def make(**options: Any) -> BlockingBM25:
    """Return the blocking BM25 with the given BM25 options."""
    return BlockingBM25(**options)
