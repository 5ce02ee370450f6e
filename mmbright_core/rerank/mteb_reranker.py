"""``mteb:NAME``: any cross-encoder of MTEB's registry, called through MTEB's own protocol.

``mteb.get_model(name)`` loads the model as MTEB evaluates it, and ``predict(inputs1,
inputs2, task_metadata=...)`` gets what MTEB's reranking evaluation gives it: row-paired
``DataLoader`` batches made by MTEB's ``create_dataloader`` (the query, once per candidate,
and the candidate), under the ``TaskMetadata`` of MTEB's MM-BRIGHT task of the run's task
and domain (:mod:`mmbright_core.retrieval.backends.mteb_tasks`), so the model reads its prompt and
modalities from it. A query of tasks 2-4 carries its first decodable image; a Task 3
candidate is its image; a Task 4 pair its passage and image (a text-only pair its passage,
in a batch of its own: MTEB batches cannot hold a missing image); each image with the
pixels this package decoded, never re-compressed
(:func:`~mmbright_core.retrieval.backends.mteb_tasks.task_rows`).
``mteb/baseline-random-cross-encoder`` runs offline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PIL import Image

from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.errors import InputError, require
from mmbright_core.rerank.base import Candidate, ImageStore, Reranked, RerankQuery
from mmbright_core.retrieval.backends.mteb_registry import gated_meta, load_model
from mmbright_core.retrieval.backends.mteb_tasks import (
    IMAGE_ROWS,
    TASK_NAMES,
    task_metadata,
    task_rows,
)
from mmbright_core.task_table import TASK_TABLE

_WHAT = "the mteb reranker"
Row = dict[str, Any]


def cross_encoder_meta(name: str, revision: str | None) -> Any:
    """Return MTEB's registry entry of a cross-encoder ``name``, checked against ``revision``.

    Raises:
        InputError: Not in the registry, another revision, or not a cross-encoder.
    """
    mteb = require("mteb", _WHAT, "mteb")
    try:
        meta = mteb.get_model_meta(name)
    except (KeyError, ValueError) as err:
        raise InputError(
            f"unknown MTEB model {name!r}",
            expected="a cross-encoder of MTEB's model registry",
            hint="e.g. mteb:mteb/baseline-random-cross-encoder (offline, random scores).",
        ) from err
    if revision is not None and revision != meta.revision:
        raise InputError(
            f"MTEB's registry pins another revision of {name!r}",
            expected=f"{name}@{meta.revision} (or no @REVISION)",
            found=f"@{revision}",
        )
    if "cross-encoder" not in (meta.model_type or ()):
        raise InputError(
            f"MTEB model {name!r} is not a cross-encoder",
            expected="model type cross-encoder",
            found=f"model type {meta.model_type}",
            hint="An MTEB embedding model is a first stage: mmbright run --retriever mteb.",
        )
    return meta


class MtebReranker:
    """Pointwise scores of an MTEB cross-encoder.

    Args:
        model: An MTEB registry name, optionally ``@REVISION`` (the one it pins).
        device: Torch device passed to ``mteb.get_model``.
        batch_size: Pairs per batch of MTEB's data loader.
        trust_remote_code: The opt-in to the model's hub code (``--trust-remote-code``).
    """

    def __init__(
        self,
        model: str,
        device: str | None = None,
        batch_size: int = 32,
        trust_remote_code: bool = False,
    ) -> None:
        self.model, self.meta, self.trust = gated_meta(model, cross_encoder_meta, trust_remote_code)
        self.revision: str | None = self.meta.revision
        self.name = f"mteb:{model}"
        self.device, self.batch_size = device, batch_size
        self._model: Any = None

    def label(self) -> str:
        """Return the model's last path component."""
        return self.model.rsplit("/", 1)[-1]

    def settings(self) -> dict[str, Any]:
        """Return the model, its pinned revision, MTEB's version and the tasks' metadata."""
        return {
            "model": self.model,
            "revision": self.revision,
            "backend": "mteb",
            "mteb_version": require("mteb", _WHAT, "mteb").__version__,
            "mteb_tasks": TASK_NAMES,
            "images": IMAGE_ROWS,
        }

    def load(self) -> Any:
        """Return the loaded MTEB model (loaded once).

        Raises:
            InputError: Its weights or code are not in the local cache.
        """
        if self._model is None:
            self._model = load_model(self.model, self.revision, self.device, _WHAT, self.trust)
        return self._model

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Score each (query, candidate) pair with the model's ``predict``."""
        asked = _query_row(query, images)
        rows = [_candidate_row(query, c, images) for c in candidates]
        scores: list[float] = [0.0] * len(rows)
        # One predict call per set of document columns (a batch holds no missing image).
        for columns in sorted({tuple(sorted(r)) for r in rows}):
            chosen = [i for i, r in enumerate(rows) if tuple(sorted(r)) == columns]
            found = self._predict(query, [asked] * len(chosen), [rows[i] for i in chosen])
            for i, score in zip(chosen, found, strict=True):
                scores[i] = score
        return Reranked.from_scores(scores)

    def _predict(self, query: RerankQuery, asked: list[Row], docs: list[Row]) -> list[float]:
        loaders = require("mteb._create_dataloaders", _WHAT, "mteb")
        types = require("mteb.types", _WHAT, "mteb")
        metadata = task_metadata(query.task, query.domain)

        def loader(rows: list[Row], prompt: Any) -> Any:
            ids = {"id": [str(i) for i in range(len(rows))]}
            columns = {key: [r[key] for r in rows] for key in rows[0]}
            table = task_rows({**ids, **columns}, _WHAT)
            return loaders.create_dataloader(
                table, task_metadata=metadata, prompt_type=prompt, batch_size=self.batch_size
            )

        found = self.load().predict(
            loader(asked, types.PromptType.query),
            loader(docs, types.PromptType.document),
            task_metadata=metadata,
            hf_split="test",
            hf_subset="default",
        )
        values = [float(v) for v in _flat(found)]
        if len(values) != len(docs):
            raise InputError(
                f"MTEB model {self.model!r} returned {len(values)} scores",
                expected=f"one per pair ({len(docs)})",
            )
        return values


def _flat(found: Any) -> Any:
    if hasattr(found, "detach"):
        found = found.detach().float().cpu().numpy()
    return getattr(found, "ravel", lambda: found)()


def _query_row(query: RerankQuery, images: ImageStore | None) -> Row:
    row: Row = {"text": query.text}
    if not TASK_TABLE[query.task].text_only and images is not None:
        image = _first_image(query.image_paths, lambda p: images.query_image_bytes(query.domain, p))
        if image is not None:
            row["image"] = image
    return row


def _candidate_row(query: RerankQuery, candidate: Candidate, images: ImageStore | None) -> Row:
    row: Row = {} if candidate.text is None else {"text": candidate.text}
    if TASK_TABLE[query.task].corpus_images and images is not None:
        read = images.document_image_bytes
        image = _first_image(candidate.image_paths, lambda p: read(query.domain, p))
        if image is not None:
            row["image"] = image
    return row or {"text": ""}


def _first_image(paths: Sequence[str], read: Any) -> Image.Image | None:
    # The first image that decodes, as the released code's query images[0] (docs/protocol.md,
    # Per-task protocol).
    for path in paths:
        try:
            return decode_image(read(path), path)
        except ImageDecodeError:
            continue
    return None
