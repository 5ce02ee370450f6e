"""BGE-VL's interface: ``set_processor(model)``, then ``encode(images=PATH, text=TEXT)``.

``retrieval_bge_vl`` (``src/retrievers/task2_multimodal.py``) encodes every passage and query
alone: the text stripped and cut at 150 characters (back to the last space past 70% of the
cut), a query's first image saved as PNG and handed over by its path, the vector normalised.
Where the model raises a ``RuntimeError`` naming ``size of tensor`` (a text past CLIP's 77
tokens) it retries at 120, 100, 80, 60 and 40 characters (queries also at 20), then with the
first 20 (passages) or 15 (queries) characters. A cut under 5 (passages) or 3 (queries)
characters is replaced by the text's first 40 or 20.

On Task 4, ``retrieval_bge_vl_large_it2it`` (``task4_pair.py``) runs one ladder for pairs and
queries alike: 150 down to 20 characters, a cut under 3 characters replaced by the first 20
(``"document"`` or ``"query"`` where those are blank), the last try the first 15 (the same
words where blank). A pair without text is thus encoded as ``"document"`` there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.retrieval.backends.hf_model import (
    IMAGE_PROCESSOR,
    device_of,
    load_pretrained,
    load_transformers,
)
from mmbright_core.retrieval.backends.hub_code.shared import (
    HubModel,
    TaskBound,
    image_files,
    inference,
    pin_image_processor,
)
from mmbright_core.retrieval.dual.embedder import Role

_BGE_CUTS = (120, 100, 80, 60, 40)
"""The shorter cuts ``retrieval_bge_vl`` retries after its first (150), and queries 20 more."""
PAIR_LADDER_TASKS = (4,)
"""The tasks whose official function runs one cut ladder for passages and queries alike."""


def bge_cut(text: str, limit: int) -> str:
    """Cut ``text`` at ``limit`` characters, back to the last space past 70% of it.

    ``retrieval_bge_vl``'s ``ultra_safe_truncate``: the text stripped, cut, and stripped again.
    """
    text = text.strip()
    if len(text) > limit:
        text = text[:limit]
        space = text.rfind(" ")
        if space > limit * 0.7:
            text = text[:space]
    return text.strip()


class EncodeImagesText(TaskBound, HubModel):
    """BGE-VL's interface: ``set_processor(model)``, then ``encode(images=PATH, text=TEXT)``.

    Bound to Task 4 it follows that task's cut ladder, for pairs and queries alike
    (:meth:`pair_ladder`).

    Args:
        text_char_limit: The first character cut of every text (150).
        **common: :class:`HubModel`'s options.
    """

    def __init__(self, model: str, text_char_limit: int = 150, **common: Any) -> None:
        super().__init__(model, **common)
        self.text_char_limit = text_char_limit

    def pair_ladder(self) -> bool:
        """Whether the bound task runs ``retrieval_bge_vl_large_it2it``'s one ladder."""
        return self.task in PAIR_LADDER_TASKS

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, its text cut and image processor, and Task 4's ladder.

        The run's configuration then records which ladder cut its texts.
        """
        out = {**super().settings(), "text_char_limit": self.text_char_limit}
        out["image_processor"] = IMAGE_PROCESSOR
        return {**out, "pair_ladder": True} if self.pair_ladder() else out

    def _load(self) -> Any:
        """Return the model with its processor set, as ``retrieval_bge_vl`` prepares it.

        The image processor that ``set_processor`` loads is put on PIL's path, as transformers
        4.51.3 (the official pin) ran it (:func:`.shared.pin_image_processor`).
        """
        if self._model is None:
            transformers = load_transformers()
            model = load_pretrained(
                transformers.AutoModel, self.model_id, self.revision, **self.trust
            )
            model.set_processor(self.model_id)
            pin_image_processor(model, self.model_id)
            self._model = model.eval().to(device_of(self.device))
        return self._model

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return the joint vectors of the texts alone."""
        return self.encode_joint(texts, [None] * len(texts), role)

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return the vectors of the images alone (``encode(images=paths)``)."""
        with image_files(images) as paths:
            return inference(lambda: self._load().encode(images=list(paths)))

    def encode_joint(
        self, texts: Sequence[str], images: Sequence[Image.Image | None], role: Role
    ) -> np.ndarray:
        """Return one joint vector per text and image (None: the text alone), one at a time."""
        with image_files(images) as paths:
            rows = [self._one(text, path, role) for text, path in zip(texts, paths, strict=True)]
        return np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32)

    def _one(self, text: str, path: str | None, role: Role) -> np.ndarray:
        # The official ladder: shorter cuts while the model's position table overflows
        # ("size of tensor"), then a last short cut; queries (and Task 4's pairs) try 20 too.
        query, pair = role == "query", self.pair_ladder()
        word = "query" if query else "document"
        cuts = (self.text_char_limit, *_BGE_CUTS, *((20,) if query or pair else ()))
        images = {} if path is None else {"images": path}
        for limit in cuts:
            cut = bge_cut(text, limit)
            if len(cut.strip()) < (3 if query or pair else 5):
                cut = (text[:20].strip() or word) if pair else text[: 20 if query else 40].strip()
            try:
                return inference(lambda: self._load().encode(text=cut, **images))  # noqa: B023
            except RuntimeError as err:
                if "size of tensor" not in str(err):
                    raise
        return inference(lambda: self._load().encode(text=self._last(text, query)))

    def _last(self, text: str, query: bool) -> str:
        # The text of the last try, after every cut overflowed.
        if self.pair_ladder():
            return text[:15].strip() or ("query" if query else "document")
        if query:
            return text[:15].strip() if text.strip() else "query"
        head = text[:20].strip()
        return head if len(head) >= 3 else "document"
