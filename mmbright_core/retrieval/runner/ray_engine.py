"""Corpus encoding on Ray: shards of the corpus through model actors into the embedding cache.

The driver lists the items to encode as the local path does (first occurrence of each
content key, in corpus order), cuts that list into the local path's encoder calls, and groups
consecutive calls into shards. Ray Data maps shards over a pool of model actors
(``map_batches`` with ``concurrency`` workers, ``num_gpus`` each); an actor encodes its shard
call by call, so every vector comes from the same batch as in a local run, and writes it as
one shard of the content-keyed cache (:mod:`.cache`). A later local run finds every vector
there. A worker builds its encoder from an :class:`EncoderSpec`: the retriever's registered
name and options, looked up again in the registry. A shard is done once all its keys are
cached: after a killed worker (Ray restarts it and retries its shard) or a killed driver (run
again), only unfinished shards are encoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mmbright_core.errors import InputError, require
from mmbright_core.retrieval.base import Retriever
from mmbright_core.retrieval.cache.shards import shard_name, write_shard
from mmbright_core.retrieval.dual.encoders import BatchEncoder, CorpusEncoder
from mmbright_core.retrieval.dual.textcap import cap_text
from mmbright_core.retrieval.registry import get_retriever

#: Items per shard, rounded down to whole encoder calls (the local cache's shard size).
SHARD_ITEMS = 4096
#: Shards written here are named with this first, so they are told apart from local ones.
SHARD_PREFIX = "ray-"


@dataclass(frozen=True)
class EncoderSpec:
    """A picklable recipe for one encoder of a registered retriever.

    Attributes:
        retriever: The registered name of a :class:`CorpusEncoder` (``dense``, ``clip``).
        options: The retriever's options, as sorted ``(name, value)`` pairs.
        role: ``text`` or ``image``.
        prefix: The text prefix (the dense retriever's document or query prefix).
        task: The task encoded for, which a bound embedder's vectors may depend on.
        domain: The domain encoded for (a ``{domain}`` instruction, MTEB's task).
    """

    retriever: str
    options: tuple[tuple[str, Any], ...]
    role: str = "text"
    prefix: str = ""
    task: int | None = None
    domain: str | None = None

    def build_retriever(self) -> Retriever:
        """Build the retriever with the recorded options."""
        return get_retriever(self.retriever, **dict(self.options))

    def build(self, retriever: Retriever | None = None) -> BatchEncoder:
        """Return the encoder (of ``retriever`` if given, else of a freshly built one).

        Raises:
            InputError: The retriever has no encoder for the role.
        """
        built = retriever or self.build_retriever()
        binder = getattr(built, "bind", None)
        if callable(binder) and self.domain is not None:
            binder(self.task, self.domain)  # the worker's cache keys are the local run's
        if isinstance(built, CorpusEncoder):
            encoder = built.batch_encoder(self.role, self.prefix)
            if encoder is not None:
                return encoder
        raise InputError(
            f"no {self.role} encoder to distribute for retriever {self.retriever!r}",
            expected="dense (text) or clip (text, image)",
            found=f"{self.retriever} ({self.role})",
        )


@dataclass(frozen=True)
class Shard:
    """Consecutive encoder calls, encoded and stored together.

    Attributes:
        index: The shard's position in the job.
        keys: The content key of each item.
        items: The items (capped texts, or image file bytes).
        names: What each item is called in messages (image paths; empty for texts).
        fresh: Whether each key is still missing from the cache (only those are stored).
    """

    index: int
    keys: list[str]
    items: list[Any]
    names: list[str]
    fresh: list[bool]

    def cache_name(self) -> str:
        """Return the shard's name in the cache: a digest of its keys, equal on every retry."""
        return shard_name(self.keys, SHARD_PREFIX)


def plan_shards(
    keys: Sequence[str],
    items: Sequence[Any],
    encoder: BatchEncoder,
    names: Sequence[str] | None = None,
    shard_items: int = SHARD_ITEMS,
) -> list[Shard]:
    """Cut a job into shards of whole local encoder calls; drop the shards already cached.

    Args:
        keys: Each item's content key (repeated keys are encoded once, at first sight).
        items: Texts or image bytes, parallel to ``keys``.
        encoder: The encoder (its ``chunk`` fixes the calls, its ``cache`` what is done).
        names: Image paths, parallel to ``keys`` (for messages).
        shard_items: Items per shard, rounded down to a multiple of ``encoder.chunk``.

    Returns:
        The shards that still hold a key missing from the cache.
    """
    first: dict[str, int] = {}
    for index, key in enumerate(keys):
        first.setdefault(key, index)
    order = list(first.values())
    size = max(1, shard_items // encoder.chunk) * encoder.chunk
    done = encoder.cache.keys()
    shards = []
    for number, start in enumerate(range(0, len(order), size)):
        chosen = order[start : start + size]
        fresh = [keys[i] not in done for i in chosen]
        if not any(fresh):
            continue
        texts = [_ship(items[i], encoder.tokens) for i in chosen]
        label = [names[i] if names is not None else "" for i in chosen]
        shards.append(Shard(number, [keys[i] for i in chosen], texts, label, fresh))
    return shards


def _ship(item: Any, tokens: int) -> Any:
    # Texts travel capped to what the model can read (docs/protocol.md, The data as published's 25
    # MB passage).
    return cap_text(item, tokens) if isinstance(item, str) and tokens else item


def encode_shard(encoder: BatchEncoder, shard: Shard) -> int:
    """Encode one shard call by call and store its fresh vectors as one cache shard.

    Returns:
        How many vectors were stored.
    """
    parts = []
    for start in range(0, len(shard.items), encoder.chunk):
        stop = start + encoder.chunk
        vectors = np.asarray(encoder.encode(shard.items[start:stop], shard.names[start:stop]))
        parts.append(vectors.astype(encoder.cache.dtype))  # as the local path stores them
    vectors = np.concatenate(parts)
    keep = np.flatnonzero(shard.fresh)
    folder = encoder.cache.folder
    if folder is None or not len(keep):
        return 0
    stored = [shard.keys[i] for i in keep]
    write_shard(folder, shard.cache_name(), stored, vectors[keep], encoder.cache.settings)
    return len(keep)


class ShardActor:
    """A Ray Data actor: builds the encoder once, then encodes the shards it is given.

    Args:
        factory: Returns the encoder (called once, inside the worker).
    """

    def __init__(self, factory: Callable[[], BatchEncoder]) -> None:
        self.encoder = factory()

    def __call__(self, batch: Any) -> dict[str, Any]:
        """Encode and store each shard of a pyarrow batch; return how many vectors each stored."""
        # Arrow batches give back exact Python str and bytes (numpy's fixed-width bytes
        # would drop an image file's trailing NUL bytes).
        columns = {name: batch.column(name).to_pylist() for name in _FIELDS}
        stored = [
            encode_shard(self.encoder, Shard(*values))
            for values in zip(*(columns[name] for name in _FIELDS), strict=True)
        ]
        return {"index": np.asarray(columns["index"]), "stored": np.asarray(stored)}


_FIELDS = ("index", "keys", "items", "names", "fresh")


@dataclass(frozen=True)
class RayEngine:
    """Where and how wide corpus encoding runs on Ray.

    Attributes:
        address: A Ray cluster address (``auto``, ``ray://host:10001``), or None for a local
            instance started on first use.
        workers: How many model actors encode at once.
        gpus_per_worker: GPUs each actor holds (0: CPU; fractions share a GPU).
        shard_items: Items per shard (rounded down to whole encoder calls).
        retry_workers: Restart a dead actor and retry its shard (False: the job fails and a
            rerun resumes it).
    """

    address: str | None = None
    workers: int = 1
    gpus_per_worker: float = 0.0
    shard_items: int = SHARD_ITEMS
    retry_workers: bool = True

    def connect(self) -> Any:
        """Return the ``ray`` module, connected to the cluster (or a local instance)."""
        ray = require("ray", "the ray engine", "ray")
        if not ray.is_initialized():
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False)
        return ray

    def run(self, factory: Callable[[], BatchEncoder], shards: Sequence[Shard]) -> Iterator[int]:
        """Encode ``shards`` on the actors; yield each finished shard's index.

        Args:
            factory: Builds the encoder inside each actor (picklable).
            shards: What :func:`plan_shards` left to do.
        """
        if not shards:
            return
        ray = self.connect()
        rows = [{name: getattr(s, name) for name in _FIELDS} for s in shards]
        options: dict[str, Any] = {} if self.retry_workers else {"max_restarts": 0}
        if self.gpus_per_worker:
            options["num_gpus"] = self.gpus_per_worker
        done = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            ShardActor,
            fn_constructor_kwargs={"factory": factory},
            batch_size=1,
            batch_format="pyarrow",
            concurrency=max(1, min(self.workers, len(rows))),
            **options,
        )
        for row in done.iter_rows():
            yield int(row["index"])


def encode_items(
    engine: RayEngine,
    spec: EncoderSpec,
    keys: Sequence[str],
    items: Sequence[Any],
    names: Sequence[str] | None = None,
    factory: Callable[[], BatchEncoder] | None = None,
) -> int:
    """Encode every item the cache lacks on Ray, as the local path would have.

    Args:
        engine: The Ray settings.
        spec: Which retriever encoder to use.
        keys: Each item's content key.
        items: Texts or image bytes, parallel to ``keys``.
        names: Image paths, parallel to ``keys``.
        factory: Builds the encoder in each worker (default: ``spec.build``).

    Returns:
        How many shards were encoded.
    """
    shards = plan_shards(keys, items, spec.build(), names, engine.shard_items)
    return sum(1 for _ in engine.run(factory or spec.build, shards))
