"""Two-tower hub-code models: Jina-CLIP's one model and Nomic's text and image pair.

``src/retrievers/task2_multimodal.py``'s ``retrieval_jina_clip`` calls the model's
``encode_text(texts)`` and ``encode_image(images)`` (fusion ``zero-image``: a query without an
image is its text); on Task 4 (``task4_pair.py`` ``retrieval_jina_clip_it2it``) a
``__NO_IMAGE__`` pair and a query without an image get the white 224x224 image instead
(``_safe_open_image(None)``). ``retrieval_nomic_vision`` runs a text model (mean pooling, layer
norm, ``search_query: `` before queries, passages cut at 8,000 characters) beside an image model
of the same space (its first token), each an ``AutoModel`` with hub code (fusion
``normalised-mean``; the image model's processor on PIL's path, as transformers 4.51.3 ran
it); on Task 4 (``retrieval_nomic_it2it``) query texts are cut at 8,000 characters too, before
the prefix (``f"search_query: {(t or '')[:8000]}"``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.code_gate import gate
from mmbright_core.retrieval.backends.hf import HFTextEmbedder
from mmbright_core.retrieval.backends.hf_model import (
    IMAGE_PROCESSOR,
    checkpoint_of,
    load_image_processor,
    load_model,
)
from mmbright_core.retrieval.backends.hub_code.shared import (
    HUB_OPTIONS,
    HubModel,
    TaskBound,
    inference,
)
from mmbright_core.retrieval.dual.embedder import Role

WHITE_STAND_IN_TASKS = (4,)
"""The tasks on which Jina-CLIP's missing images are white (``retrieval_jina_clip_it2it``)."""
NOMIC_QUERY_CHAR_LIMITS = {4: 8000}
"""Task -> the character cut of Nomic's query texts (``retrieval_nomic_it2it``)."""


class EncodeTextImage(TaskBound, HubModel):
    """Jina-CLIP's interface: ``encode_text(texts)`` and ``encode_image(images)``.

    Bound to Task 4 it asks for the white image in place of a missing one
    (:meth:`white_stand_in`), for ``__NO_IMAGE__`` pairs and queries without an image alike.
    """

    fusion = "zero-image"

    def white_stand_in(self) -> bool:
        """Whether a missing image is the white 224x224 image on the bound task."""
        return self.task in WHITE_STAND_IN_TASKS

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, the interface, and the tasks of the white stand-in."""
        return {**super().settings(), "white_stand_in_tasks": list(WHITE_STAND_IN_TASKS)}

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the model's text vectors (the same call for queries and passages)."""
        return inference(lambda: self._load().encode_text(list(texts)))

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the model's image vectors of the RGB images."""
        rgb = [image.convert("RGB") for image in images]
        return inference(lambda: self._load().encode_image(rgb))


class TextVisionPair(TaskBound, HubModel):
    """Nomic's interface: a text model and an image model of one space, side by side.

    Args:
        model: The text model (``nomic-embed-text-v1.5``).
        interface: The catalogue's name of the call (``text-vision-pair``).
        image_model: The image model (``nomic-embed-vision-v1.5``; required).
        **options: :class:`HubModel`'s options (:data:`~.remote_hub.HUB_OPTIONS`), the rest
            :class:`~mmbright_core.retrieval.backends.hf.HFTextEmbedder`'s (pooling, truncation,
            instructions, character cut, layer norm).

    Raises:
        InputError: No ``image_model``.
    """

    fusion = "normalised-mean"

    def __init__(
        self, model: str, interface: str, image_model: str | None = None, **options: Any
    ) -> None:
        if image_model is None:
            raise InputError("the text-vision-pair interface needs image_model", found=str(model))
        common = {key: options.pop(key) for key in HUB_OPTIONS if key in options}
        super().__init__(model, interface, **common)
        self.image_model = str(image_model)
        gate(self.image_model, None, True)  # the operator's switch covers the image model too
        self.text = HFTextEmbedder(self.model_id, trust_remote_code=True, **options, **common)
        self.processor = load_image_processor(self.image_model, None, True)
        self._vision: Any = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Bind the text model's instructions to a domain (``{domain}``), the cut to a task."""
        super().bind(task, domain)
        self.text.bind(task, domain)

    def query_char_limit(self) -> int | None:
        """Return the character cut of query texts on the bound task (None: no cut)."""
        return NOMIC_QUERY_CHAR_LIMITS.get(self.task) if self.task is not None else None

    def settings(self) -> dict[str, Any]:
        """Return both models' identities, the text model's recipe and the query cuts.

        The bound task's query cut keys the cache too, where it applies, so a long query's
        vector of Task 4 is never that of Task 2.
        """
        out = {
            **self.text.settings(),
            "interface": self.interface,
            "image_model": self.image_model,
            "image_checkpoint_sha256": checkpoint_of(self.image_model),
            "image_processor": IMAGE_PROCESSOR,
            "query_char_limits": {str(t): n for t, n in NOMIC_QUERY_CHAR_LIMITS.items()},
        }
        if self.query_char_limit() is not None:
            out["query_char_limit"] = self.query_char_limit()
        return out

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the text model's mean-pooled, layer-normalised vectors.

        On Task 4 a query's text is cut at 8,000 characters before its prefix.
        """
        limit = self.query_char_limit() if role == "query" else None
        return self.text.encode_texts([text[:limit] for text in texts], role)

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the image model's first-token state of each RGB image."""
        if self._vision is None:
            self._vision = load_model(self.image_model, None, self.dtype, self.device, True)
        vision = self._vision
        pixels = self.processor(images=[im.convert("RGB") for im in images], return_tensors="pt")
        inputs = {key: value.to(vision.device) for key, value in pixels.items()}
        return inference(lambda: vision(**inputs).last_hidden_state[:, 0])
