"""Any model of MTEB's registry as an embedder, run through MTEB's own encoder protocol.

``mteb.get_model(name, revision)`` loads the model as MTEB evaluates it; this module hands
it what MTEB's retrieval evaluation hands it: ``DataLoader`` batches made by MTEB's own
``create_dataloader`` (``text`` and/or ``image`` columns; a document's text stripped, as
MTEB's corpus formatting does; each image with the pixels this package decoded, never
re-compressed: :func:`~mmbright_core.retrieval.backends.mteb_tasks.task_rows`), the
``TaskMetadata`` of MTEB's MM-BRIGHT task of the run's task and domain
(:mod:`mmbright_core.retrieval.backends.mteb_tasks`: the model resolves its prompt from it) and the
prompt type ``query`` or ``document``.

A query with an image goes to MTEB as ONE input with both columns, MTEB's own way: every
MTEB multimodal model fuses a text and its image itself (CLIP, SigLIP and Jina-CLIP add
the two vectors, GME and E5-V encode them together), so the fusion rule is ``joint``
(docs/protocol.md, dual-encoder fusion); what the query's image is (first image, white
placeholder, none) stays this package's choice under the ``harness`` task definition (the
default); ``task_definition="mteb"`` makes the query images, the placeholder and Task 4's
prompt MTEB's own (:func:`~mmbright_core.retrieval.backends.mteb_tasks.mteb_query_pictures`,
docs/protocol.md). Scores are 100 x cosine, which is MTEB's
similarity for the models accepted here (``similarity_fn_name`` cosine); models scored by
a dot product or by MaxSim (ColPali and its kin) are refused rather than scored otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.images import ImageSource, QueryImages
from mmbright_core.errors import InputError, require
from mmbright_core.retrieval.backends.mteb_registry import (
    WHAT,
    gated_meta,
    load_model,
    model_meta,
)
from mmbright_core.retrieval.backends.mteb_tasks import (
    IMAGE_ROWS,
    MTEB_QUERY_IMAGES,
    TASK_NAMES,
    mteb_query_pictures,
    query_prompts,
    task_metadata,
    task_name,
    task_rows,
)
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.encoder import DualEncoderRetriever, DualOptions
from mmbright_core.retrieval.search.index import IndexKind
from mmbright_core.types import Query


class MtebEmbedder:
    """An MTEB model as a :class:`~mmbright_core.retrieval.dual.embedder.JointEmbedder`.

    Args:
        model: An MTEB registry name, optionally ``@REVISION`` (which must be the one the
            registry pins).
        device: Torch device passed to ``mteb.get_model``.
        batch_size: Inputs per batch of MTEB's data loader (MTEB's default, 32).
        trust_remote_code: The opt-in to the model's hub code, which MTEB's loader runs for
            many models (:func:`~mmbright_core.retrieval.backends.code_gate.gate`).
        task_definition: ``harness`` (this package's query images and Task 4 prompt) or
            ``mteb`` (MTEB's: :mod:`~mmbright_core.retrieval.backends.mteb_tasks`).

    The task and domain the vectors are for are set by :meth:`bind` before encoding (a
    :class:`~mmbright_core.retrieval.dual.embedder.BoundEmbedder`): the model reads its prompt
    from that task's metadata.
    """

    def __init__(
        self,
        model: str,
        device: str | None = None,
        batch_size: int = 32,
        trust_remote_code: bool = False,
        task_definition: str = "harness",
    ) -> None:
        self.prompts = query_prompts(task_definition)
        self.definition = task_definition
        self.model, self.meta, self.trust = gated_meta(model, model_meta, trust_remote_code)
        self.revision: str | None = self.meta.revision
        self.device, self.batch_size = device, batch_size
        self.name = self.model.rsplit("/", 1)[-1]
        images = "image" in (self.meta.modalities or ())
        self.modalities: frozenset[Modality] = frozenset({"text", "image"} if images else {"text"})
        self.fusion = "joint" if images else "text"
        self.scoped: tuple[int, str] | None = None
        self._model: Any = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Encode for ``task`` on ``domain`` from now on (MTEB's task of that name).

        ``bind(None, None)`` forgets them (settings then describe the run, not one domain).
        """
        self.scoped = None if task is None or domain is None else (task, domain)

    def _metadata(self) -> Any:
        if self.scoped is None:
            raise InputError(
                "the MTEB embedder was asked to encode outside a task",
                hint="Call bind(task, domain) first (the mteb retriever does).",
            )
        return task_metadata(*self.scoped, self.definition)

    def query_pictures(self, source: ImageSource, query: Query) -> QueryImages | None:
        """Return MTEB's image of ``query`` under the ``mteb`` task definition, else None."""
        return mteb_query_pictures(source, query) if self.definition == "mteb" else None

    def settings(self) -> dict[str, Any]:
        """Return the model, its pinned revision, MTEB's version and the prompts' source."""
        similarity = self.meta.similarity_fn_name
        return {
            "model": self.model,
            "revision": self.revision,
            "backend": "mteb",
            "mteb_version": require("mteb", WHAT, "mteb").__version__,
            "similarity": str(getattr(similarity, "value", similarity or "cosine")),
            "mteb_tasks": TASK_NAMES,
            "task_definition": self.definition,
            "images": IMAGE_ROWS,
            **({"query_images": MTEB_QUERY_IMAGES} if self.definition == "mteb" else {}),
            "task_prompts": {str(task): {"query": p} for task, p in self.prompts.items()},
            "model_prompts": self._model_prompts(),
            "batch_size": self.batch_size,
            # Within one domain's run the vectors also depend on MTEB's task of that name.
            **({"mteb_task": task_name(*self.scoped)} if self.scoped else {}),
        }

    def _model_prompts(self) -> dict[str, str] | None:
        # The model's own prompt table (by task name, task type or prompt type), which MTEB
        # consults before the task's prompt; read from the registry entry, without loading.
        prompts = (self.meta.loader_kwargs or {}).get("model_prompts")
        return dict(prompts) if isinstance(prompts, dict) else None

    def load(self) -> Any:
        """Return the loaded MTEB model (loaded once, by ``mteb.get_model``).

        Raises:
            InputError: The model's weights or code cannot be loaded (not in the local cache).
        """
        if self._model is None:
            self._model = load_model(self.model, self.revision, self.device, WHAT, self.trust)
        return self._model

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return MTEB's vector of each text for ``role``."""
        return self._encode({"text": list(texts)}, role)

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return MTEB's vector of each image for ``role``."""
        return self._encode({"image": images}, role)

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return MTEB's vector of each (text, image) input; a None image: the text alone.

        Inputs with an image go to the model as one batch of text and image columns (it
        fuses them); inputs without one as text only (MTEB batches cannot hold None).
        """
        if len(texts) != len(images):
            raise InputError(
                "texts and images differ in number", found=f"{len(texts)} and {len(images)}"
            )
        both = [i for i, image in enumerate(images) if image is not None]
        alone = [i for i, image in enumerate(images) if image is None]
        parts = []
        if both:
            columns: dict[str, list[Any]] = {
                "text": [texts[i] for i in both],
                "image": [images[i] for i in both],
            }
            parts.append((both, self._encode(columns, role)))
        if alone:
            parts.append((alone, self.encode_texts([texts[i] for i in alone], role)))
        dim = parts[0][1].shape[1] if parts else 0
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for rows, vectors in parts:
            out[rows] = vectors
        return out

    def _encode(self, columns: Mapping[str, Sequence[Any]], role: Role) -> np.ndarray:
        size = len(next(iter(columns.values())))
        if size == 0:
            return np.zeros((0, 0), dtype=np.float32)
        loaders = require("mteb._create_dataloaders", WHAT, "mteb")
        types = require("mteb.types", WHAT, "mteb")
        prompt_type = types.PromptType.query if role == "query" else types.PromptType.document
        metadata = self._metadata()
        allowed = metadata.get_modalities(prompt_type)
        if not set(columns) <= set(allowed):
            raise InputError(
                f"MTEB's task {metadata.name} takes no {'+'.join(sorted(columns))} {role}s",
                expected=f"{role} inputs of {'+'.join(allowed)}",
                found="+".join(sorted(columns)),
            )
        rows = task_rows({"id": [str(i) for i in range(size)], **columns}, WHAT)
        loader = loaders.create_dataloader(
            rows, task_metadata=metadata, prompt_type=prompt_type, batch_size=self.batch_size
        )
        vectors = self.load().encode(
            loader,
            task_metadata=metadata,
            hf_split="test",
            hf_subset="default",
            prompt_type=prompt_type,
        )
        return _as_matrix(vectors, size, self.model)


def _as_matrix(vectors: Any, size: int, model: str) -> np.ndarray:
    # MTEB models return numpy arrays or torch tensors, possibly in half precision.
    if hasattr(vectors, "detach"):
        vectors = vectors.detach().float().cpu().numpy()
    out = np.asarray(vectors, dtype=np.float32)
    if out.ndim != 2 or out.shape[0] != size:
        raise InputError(
            f"MTEB model {model!r} returned vectors of an unexpected shape",
            expected=f"({size}, dim)",
            found=str(out.shape),
        )
    return out


def mteb_retriever(
    model: str | None = None,
    image_policy: str | None = None,
    no_image: str | None = None,
    device: str | None = None,
    batch_size: int = 32,
    cache_dir: str | None = None,
    index: IndexKind = "flat",
    cache_dtype: str = "float32",
    trust_remote_code: bool = False,
    task_definition: str = "harness",
) -> DualEncoderRetriever:
    """Build the ``mteb`` retriever: ``--retriever mteb --model NAME[@REVISION]``.

    Args:
        model: An MTEB registry name, optionally ``@REVISION`` (required).
        image_policy: Which query images are used (``first``, the released code's choice,
            by default; ``concat`` under ``task_definition="mteb"``).
        no_image: What a query without a decodable image gets: ``text`` (its text alone,
            the default of the joint fusion) or ``white`` (the white 224x224 image, which
            MTEB's own MM-BRIGHT loader gives such a query, and the ``mteb`` definition's).
        device: Torch device of the model.
        batch_size: Inputs per batch of MTEB's data loader.
        cache_dir: Embedding cache root.
        index: Vector index kind (``flat`` exact).
        cache_dtype: How cached vectors are stored (``float32``).
        trust_remote_code: The opt-in to the model's hub code (``--trust-remote-code``).
        task_definition: ``harness`` (the default) or ``mteb``: MTEB's query images, white
            placeholder and Task 4 prompt (docs/protocol.md).

    Raises:
        InputError: No model, one MTEB cannot provide, or one that runs hub code without
            the opt-in or where the operator forbids it; an image policy or no-image mode
            other than MTEB's with ``task_definition="mteb"``.
        UnknownNameError: A task definition other than ``harness`` or ``mteb``.
        MissingDependencyError: mteb is not installed.
    """
    if model is None:
        raise InputError(
            "the mteb retriever needs a model",
            expected="--model NAME[@REVISION] of MTEB's registry",
            hint="e.g. --model mteb/baseline-random-encoder (offline, random vectors).",
        )
    if task_definition == "mteb":
        if image_policy not in (None, "concat") or no_image not in (None, "white"):
            raise InputError(
                "task_definition=mteb makes the query images as MTEB's MM-BRIGHT task does",
                expected="no --image-policy and no no_image option (MTEB's are concat, white)",
                found=f"image policy {image_policy!r}, no_image {no_image!r}",
                hint="Leave them out, or drop --option task_definition=mteb.",
            )
        image_policy, no_image = "concat", "white"
    embedder = MtebEmbedder(model, device, batch_size, trust_remote_code, task_definition)
    store = DualOptions(
        image_policy or "first", cache_dir, index, cache_dtype, batch_size, no_image
    )
    return store.build(embedder, "mteb")
