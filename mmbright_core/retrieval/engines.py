"""Where a run's corpus is encoded: in the process (``local``) or on Ray (``ray``).

The Ray engine changes where vectors are computed, never which: it fills the embedding cache
with the vectors a local run would compute, then the retriever ranks locally from that cache.
A run's configuration is therefore the same under both engines, and outputs of one are
reused by the other (SPEC §7: reuse depends on the configuration, not on a file existing).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from typing import Any

from mmbright_core.data.images import ImageDecodeError
from mmbright_core.errors import InputError
from mmbright_core.retrieval.base import ImageSource, Retriever, get_retriever, passage_id
from mmbright_core.retrieval.cache import content_key
from mmbright_core.retrieval.encoders import EncoderSpec
from mmbright_core.retrieval.ray_engine import RayEngine, encode_items
from mmbright_core.types import TaskData

ENGINES = ("local", "ray")
#: Retrievers whose corpus encoding the Ray engine distributes.
DISTRIBUTED = ("dense", "clip")

Job = tuple[EncoderSpec, list[str], list[Any], list[str] | None]


class RayEncodingRetriever:
    """A dense or clip retriever whose corpus is encoded on Ray before it ranks locally.

    Args:
        name: The registered retriever name (``dense`` or ``clip``).
        options: Its options (as for :func:`get_retriever`).
        engine: Where and how wide to encode.
    """

    def __init__(self, name: str, options: Mapping[str, Any], engine: RayEngine) -> None:
        if name not in DISTRIBUTED:
            raise InputError(
                f"the ray engine cannot encode for retriever {name!r}",
                expected=f"one of {', '.join(DISTRIBUTED)}",
                found=name,
                hint="Run it with --engine local (it has no corpus embeddings to distribute).",
            )
        given = {key: value for key, value in options.items() if value is not None}
        self.inner = get_retriever(name, **given)
        self.name, self.tasks, self.engine = self.inner.name, self.inner.tasks, engine
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
        if data.task != 3 and data.corpus:
            # The units the retrievers encode: each passage once, in corpus order.
            seen: set[str] = set()
            texts = []
            for doc in data.corpus:
                if passage_id(doc.doc_id) not in seen:
                    seen.add(passage_id(doc.doc_id))
                    texts.append(doc.text)
            prefix = str(dict(self._options).get("document_prefix", ""))
            spec = EncoderSpec(self.name, self._options, "text", prefix)
            yield spec, [content_key(t) for t in texts], texts, None
        if self.name == "clip" and data.task in (3, 4) and source is not None:
            images = [d.image.path if d.image else d.doc_id for d in data.corpus]
            # Task 3 encodes corpus images in order, Task 4 its distinct images sorted.
            paths = (
                images if data.task == 3 else sorted({d.image.path for d in data.corpus if d.image})
            )
            raw = [_image_bytes(source, data.domain, path) for path in paths]
            keys = [content_key(r) for r in raw]
            yield EncoderSpec(self.name, self._options, "image"), keys, raw, paths


def _image_bytes(source: ImageSource, domain: str, path: str) -> bytes:
    raw = source.document_image_bytes(domain, path)
    if raw is None:  # the task's corpus holds decodable images only (SPEC §3)
        raise ImageDecodeError(path, "missing: the dataset has no bytes for this path")
    return raw


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--engine``, ``--address``, ``--workers`` and ``--gpus-per-worker`` to a parser."""
    parser.add_argument(
        "--engine",
        default="local",
        choices=ENGINES,
        help="where the corpus is encoded: in this process, or on Ray (dense, clip)",
    )
    parser.add_argument("--address", help="Ray cluster address (default: a local instance)")
    parser.add_argument("--workers", type=int, default=1, help="Ray model actors at once")
    parser.add_argument(
        "--gpus-per-worker", type=float, default=0.0, help="GPUs per Ray actor (0: CPU)"
    )


def with_engine(name: str, options: Mapping[str, Any], args: argparse.Namespace) -> Retriever:
    """Build retriever ``name`` for the engine chosen by :func:`add_engine_arguments`.

    Raises:
        InputError: Ray options without ``--engine ray``, or a bad worker count.
    """
    if args.engine == "local":
        if args.address or args.gpus_per_worker or args.workers != 1:
            raise InputError(
                "--address, --workers and --gpus-per-worker need --engine ray",
                found=f"--engine {args.engine}",
            )
        return get_retriever(name, **options)
    if args.workers < 1 or args.gpus_per_worker < 0:
        raise InputError(
            "invalid Ray worker settings",
            expected="--workers >= 1 and --gpus-per-worker >= 0",
            found=f"--workers {args.workers} --gpus-per-worker {args.gpus_per_worker}",
        )
    engine = RayEngine(args.address, args.workers, args.gpus_per_worker)
    return RayEncodingRetriever(name, options, engine)
