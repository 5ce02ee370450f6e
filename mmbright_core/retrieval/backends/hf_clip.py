"""CLIP and SigLIP through transformers' models and processors, as the official code runs them.

``src/retrievers/task2_multimodal.py`` runs ``retrieval_clip`` on ``CLIPModel`` +
``CLIPProcessor`` (texts ``padding=True, truncation=True``, passages ``max_length=77``; the text
features from ``input_ids`` and ``attention_mask``) and ``retrieval_siglip`` on
``AutoModel`` + ``AutoProcessor`` for ``google/siglip-so400m-patch14-384`` (texts
``padding="max_length", truncation=True``). Images go through the processor after
``convert("RGB")``, so the resize and crop are Hugging Face's: those of transformers 4.51.3,
the official code's pin, which resize with PIL (:func:`.hf_model.load_image_processor`). The
model runs the activation its config names (``hidden_act``: ``quick_gelu`` for OpenAI's
CLIP), as ``from_pretrained`` builds it in the official code.

The vectors are the raw projected features (``get_text_features`` / ``get_image_features``);
fusion ``raw-mean`` averages and normalises them (docs/protocol.md, "Dual-encoder fusion").
Official SigLIP gives a query without image a white 384x384 image and CLIP a white 224x224 one:
the processor resizes either to the same all-white input, so the one white image of the fusion
rule gives the same vector.

CLIP runs one recipe on every task. Official SigLIP runs one per task, so the embedder is bound
to the task it encodes for (:meth:`HFClipEmbedder.bind`, the task keys the cache):

- Task 2 (``task2_multimodal.py`` ``retrieval_siglip``): texts padded to ``max_length``; the
  query text tower fed ``input_ids`` alone (``#, attention_mask=...`` left out there), the
  passages' all the tokenizer returns (``get_text_features(**inputs)``);
- Task 3 (``task3_image.py`` ``retrieval_siglip_it2i``): the query text fed all the tokenizer
  returns (``attention_mask=inputs.get("attention_mask", None)``), and the query image resized
  to 384x384 by PIL (``img.resize((384, 384))``, bicubic) before the processor; corpus images
  as they are. The official query call pads with ``padding=True`` (to the longest text of its
  batch of 8), here to ``max_length``: SigLIP pools the last position, so the two agree for a
  query whose batch holds a text of ``max_length`` tokens or more, and differ for the others
  (the preset's departure, docs/models.md);
- Task 4 (``task4_pair.py`` ``retrieval_siglip_it2it``): padded to ``max_length``, fed all the
  tokenizer returns (``.get("attention_mask", None)``), pair passages and queries alike.

"All the tokenizer returns" is what its ``model_input_names`` lists: a tokenizer that gives no
``attention_mask`` makes those calls read ``input_ids`` alone, as the official ones then do.

Task 1 has no official SigLIP retriever; it runs Task 2's recipe.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import each_preprocessed
from mmbright_core.errors import UnknownNameError
from mmbright_core.retrieval.backends.hf_model import (
    IMAGE_PROCESSOR,
    HFModel,
    as_float32,
    in_batches,
    load_image_processor,
    load_torch,
    load_transformers,
    torch_dtype,
)
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.textcap import cap_text


class Recipe(NamedTuple):
    """How one official retriever feeds the model.

    ``masked`` per role: True feeds the text tower all the tokenizer returns (``input_ids``,
    and ``attention_mask`` where the tokenizer gives one), False ``input_ids`` alone.
    """

    padding: bool | str
    query_masked: bool
    document_masked: bool
    query_image_size: tuple[int, int] | None = None


#: model_type -> task -> recipe (None: every other task), per the official ``retrieval_clip*``
#: and ``retrieval_siglip*`` of tasks 2-4 (see the module's docstring).
FAMILIES: dict[str, dict[int | None, Recipe]] = {
    "clip": {None: Recipe(True, True, True)},
    "siglip": {
        None: Recipe("max_length", False, True),
        3: Recipe("max_length", True, True, (384, 384)),
        4: Recipe("max_length", True, True),
    },
}


def features(output: Any) -> Any:
    """Return the projected features a ``get_*_features`` call gave.

    transformers 4 returns the tensor; transformers 5 an output whose ``pooler_output`` holds it.
    """
    return getattr(output, "pooler_output", output)


def text_length(tokenizer: Any, config: Any) -> int:
    """The tokens a text keeps: the tokenizer's ``model_max_length``, within the model's.

    A tokenizer that sets no length reports transformers' placeholder (1e30), which its
    truncation cannot take: the text model's position count (``max_position_embeddings``,
    77 for CLIP) is what it can read, and is used in its place, as for a length past it.
    """
    positions = getattr(getattr(config, "text_config", None), "max_position_embeddings", None)
    given: int = tokenizer.model_max_length
    if positions is None or 0 < given <= positions:
        return int(given)
    return int(positions)


class HFClipEmbedder(HFModel):
    """A CLIP or SigLIP model with its Hugging Face processor (fusion ``raw-mean``).

    Args:
        model: A hub id or a local folder with the model and its processor.
        max_length: Text truncation in tokens (default: the tokenizer's, 77 for CLIP, 64 for
            SigLIP so400m).
        **common: :class:`~mmbright_core.retrieval.backends.hf_model.HFModel`'s options (revision,
            dtype, batch size, device).
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "raw-mean"

    def __init__(self, model: str, max_length: int | None = None, **common: Any) -> None:
        super().__init__(model, **common)
        load_transformers()  # a missing extra is said first
        torch_dtype(self.dtype)
        config = self.pretrained("AutoConfig")
        self.family = str(config.model_type)
        if self.family not in FAMILIES:
            raise UnknownNameError("CLIP-style model family", self.family, FAMILIES)
        self.tokenizer = self.pretrained("AutoProcessor").tokenizer
        self.image_processor = load_image_processor(self.model_id, self.revision)
        self.max_length = int(max_length or text_length(self.tokenizer, config))
        self.task: int | None = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Encode with the official recipe of ``task`` (SigLIP's differ per task)."""
        self.task = task

    def recipe(self) -> Recipe:
        """Return the recipe of the bound task (the family's only one for CLIP)."""
        recipes = FAMILIES[self.family]
        return recipes.get(self.task, recipes[None])

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, family, truncation, dtype and the bound task's recipe."""
        recipe = self.recipe()
        out: dict[str, Any] = {
            **self.identity(),
            "family": self.family,
            "truncation": self.max_length,
            "text_padding": recipe.padding,
            "text_inputs": {role: list(self._text_inputs(role)) for role in ("query", "document")},
            "dtype": self.dtype,
            "image_processor": IMAGE_PROCESSOR,
        }
        if len(FAMILIES[self.family]) > 1:  # recorded only where the recipe depends on it
            out["recipe_task"] = self.task
        if recipe.query_image_size is not None:
            out["query_image_size"] = list(recipe.query_image_size)
        return out

    def encode_texts(self, texts: Sequence[str], role: Role) -> np.ndarray:
        """Return raw projected text features (the same for queries and passages)."""
        capped = [cap_text(text, self.max_length) for text in texts]
        keys = self._text_inputs(role)
        return in_batches(capped, self.batch_size, lambda chunk: self._text_batch(chunk, keys))

    def encode_images(self, images: Sequence[Image.Image], role: Role) -> np.ndarray:
        """Return raw projected image features of the RGB images, resized by the processor.

        Each image is decoded (when lazy), converted and preprocessed alone, so one full-size
        image at most is in memory; the processor treats every image of a batch alike, so
        the pixel values equal those of the whole batch processed at once.
        """
        size = self.recipe().query_image_size if role == "query" else None
        return in_batches(images, self.batch_size, lambda chunk: self._image_batch(chunk, size))

    def _text_inputs(self, role: Role) -> tuple[str, ...]:
        recipe = self.recipe()
        if not (recipe.query_masked if role == "query" else recipe.document_masked):
            return ("input_ids",)
        names = self.tokenizer.model_input_names
        return tuple(key for key in ("input_ids", "attention_mask") if key in names)

    def _text_batch(self, texts: Sequence[str], keys: tuple[str, ...]) -> np.ndarray:
        batch = self.tokenizer(
            list(texts),
            padding=self.recipe().padding,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        )
        model = self._load()
        inputs = {key: batch[key].to(model.device) for key in keys}
        return self._run(lambda: model.get_text_features(**inputs))

    def _image_batch(
        self, images: Sequence[Image.Image], size: tuple[int, int] | None
    ) -> np.ndarray:
        torch = load_torch()
        model = self._load()
        pixels = torch.cat(each_preprocessed(images, lambda image: self._pixels(image, size)))
        values = pixels.to(model.device, dtype=torch_dtype(self.dtype))
        return self._run(lambda: model.get_image_features(pixel_values=values))

    def _pixels(self, image: Image.Image, size: tuple[int, int] | None) -> Any:
        rgb = image.convert("RGB")
        if size is not None and rgb.size != size:
            rgb = rgb.resize(size)  # PIL's default (bicubic), as the official call
        processed = self.image_processor(images=[rgb], return_tensors="pt")
        return processed["pixel_values"]

    def _run(self, forward: Any) -> np.ndarray:
        with load_torch().inference_mode():
            vectors = features(forward())
        return as_float32(vectors)
