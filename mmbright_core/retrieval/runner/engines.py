"""Where a run's corpus is encoded: in the process (``local``) or on Ray (``ray``).

The Ray engine changes where vectors are computed, never which: it fills the embedding cache
with the vectors a local run would compute, then the retriever ranks locally from that cache.
A run's configuration is therefore the same under both engines, and outputs of one are
reused by the other (docs/protocol.md, What peer tools do differently: reuse depends on the
configuration, not on a file existing). Any retriever implementing
:class:`~mmbright_core.retrieval.dual.encoders.CorpusEncoder` can be encoded on Ray.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from mmbright_core.data.images import ImageSource
from mmbright_core.errors import InputError
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.dual.encoders import CorpusEncoder
from mmbright_core.retrieval.registry import get_retriever
from mmbright_core.retrieval.runner.ray_engine import EncoderSpec, RayEngine, encode_items
from mmbright_core.types import TaskData

ENGINES = ("local", "ray")
#: The built-in retrievers whose corpus encoding the Ray engine distributes (their records).
DISTRIBUTED = tuple(name for name, backend in BACKENDS.items() if backend.distributed)

Job = tuple[EncoderSpec, list[str], list[Any], list[str] | None]


class RayEncodingRetriever:
    """A retriever whose corpus is encoded on Ray before it ranks locally.

    Args:
        name: A registered retriever name whose retriever is a :class:`CorpusEncoder`.
        options: Its options (as for :func:`get_retriever`).
        engine: Where and how wide to encode.

    Raises:
        InputError: The retriever has no corpus encoding to distribute.
    """

    def __init__(self, name: str, options: Mapping[str, Any], engine: RayEngine) -> None:
        given = {key: value for key, value in options.items() if value is not None}
        inner = get_retriever(name, **given)
        if not isinstance(inner, CorpusEncoder):
            raise InputError(
                f"the ray engine cannot encode for retriever {name!r}",
                expected=f"one of {', '.join(DISTRIBUTED)}, or another CorpusEncoder",
                found=name,
                hint="Run it with --engine local (it has no corpus embeddings to distribute).",
            )
        self.inner: CorpusEncoder = inner
        self.name, self.tasks, self.engine = inner.name, inner.tasks, engine
        # Workers may hold a GPU the driver lacks; the device changes no cache key.
        if engine.gpus_per_worker and "device" not in given:
            given["device"] = "cuda"
        self._options = tuple(sorted(given.items()))

    def label(self) -> str:
        """Return the wrapped retriever's label (same output folder as a local run)."""
        return self.inner.label()

    def settings(self) -> dict[str, Any]:
        """Return the wrapped retriever's settings (the engine changes no score)."""
        return self.inner.settings()

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Encode the corpus on Ray into the cache, then rank with the wrapped retriever."""
        for spec, keys, items, names in self.jobs(data, source):
            encode_items(self.engine, spec, keys, items, names)
        return self.inner.retrieve(data, source, k)

    def jobs(self, data: TaskData, source: ImageSource | None) -> Iterator[Job]:
        """Yield the encodings a local run of ``data`` would do, in the local order."""
        for job in self.inner.corpus_jobs(data, source):
            spec = EncoderSpec(
                self.name, self._options, job.role, job.prefix, data.task, data.domain
            )
            yield spec, job.keys, job.items, job.names


def build_retriever(
    name: str, options: Mapping[str, Any], engine: RayEngine | None = None
) -> Retriever:
    """Build retriever ``name``: encoding in this process, or on Ray when ``engine`` is given.

    Raises:
        InputError: An ``engine`` for a retriever that is not a :class:`CorpusEncoder`.
    """
    if engine is None:
        return get_retriever(name, **options)
    return RayEncodingRetriever(name, options, engine)
