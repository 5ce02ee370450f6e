"""What every embedder over a model's own hub code shares: its identity, loading and calls.

The ``remote`` backend's interfaces (:mod:`.remote`) each call into a model's hub code; each
is a :class:`HubModel`, which loads the model with ``trust_remote_code=True`` (only after the
operator's switch allows it, :mod:`.remote_code`) and records the interface it calls. The
functions are what the calls share: no gradients, a tensor or an array back as float32 rows,
images handed over as files where the code reads paths.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.code_gate import gate
from mmbright_core.retrieval.backends.hf_model import HFModel, load_torch, on_pil_path
from mmbright_core.retrieval.dual.embedder import Modality

HUB_OPTIONS = ("revision", "dtype", "batch_size", "device")
"""The options of :class:`HubModel` itself; the rest of a ``remote`` run's are its recipe's."""


def to_vectors(output: Any) -> np.ndarray:
    """Return a model's output (a tensor or an array) as a float32 array, one row per input."""
    if hasattr(output, "detach"):
        output = output.detach().float().cpu().numpy()
    vectors = np.asarray(output, dtype=np.float32)
    return vectors.reshape(1, -1) if vectors.ndim == 1 else vectors


def inference(call: Callable[[], Any]) -> np.ndarray:
    """Run ``call`` without gradients and return its vectors (:func:`to_vectors`)."""
    with load_torch().inference_mode():
        return to_vectors(call())


def pin_image_processor(holder: Any, model: str) -> None:
    """Rebuild ``holder.processor.image_processor`` on PIL's path, as transformers 4.51.3 ran it.

    ``holder`` is what the model's code loaded its processor into (BGE-VL's model after
    ``set_processor``, GME's sentence-transformers module); :func:`.hf_model.on_pil_path`
    rebuilds its image processor with the same settings.

    Raises:
        InputError: The model's code keeps no ``processor.image_processor`` there.
    """
    processor: Any = getattr(holder, "processor", None)
    image_processor = getattr(processor, "image_processor", None)
    if image_processor is None:
        raise InputError(
            "the model's code keeps no image processor where its interface reads one",
            found=f"{model}: no processor.image_processor on {type(holder).__name__}",
            hint="Run it through the interface its code offers (docs/commands.md, hub-code).",
        )
    processor.image_processor = on_pil_path(image_processor)


@contextmanager
def image_files(images: Sequence[Image.Image | None]) -> Iterator[list[str | None]]:
    """Write each image as RGB PNG to a temporary file, as the official code hands them over.

    The hub code of BGE-VL opens image paths; PNG keeps every pixel, so its input equals the
    official ``images[0].convert('RGB').save(tmp, format='PNG')``.
    """
    with tempfile.TemporaryDirectory(prefix="mmbright-images-") as folder:
        paths: list[str | None] = []
        for number, image in enumerate(images):
            if image is None:
                paths.append(None)
                continue
            path = Path(folder) / f"{number}.png"
            image.convert("RGB").save(path, format="PNG")
            paths.append(str(path))
        yield paths


class TaskBound:
    """A hub model whose official recipe depends on the task it encodes for.

    :meth:`bind` sets :attr:`task` (a
    :class:`~mmbright_core.retrieval.dual.embedder.BoundEmbedder`); the model reads it.
    """

    task: int | None = None

    def bind(self, task: int | None, domain: str | None) -> None:
        """Follow the official recipe of ``task``."""
        self.task = task


class HubModel(HFModel):
    """An :class:`~mmbright_core.retrieval.backends.hf_model.HFModel` whose own hub code encodes.

    Args:
        model: A hub id or a local folder holding the model and its code.
        interface: The catalogue's name of the call into the code.
        **common: :class:`~mmbright_core.retrieval.backends.hf_model.HFModel`'s options (the
        revision
            pins the code as well as the weights).
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "joint"

    def __init__(self, model: str, interface: str, **common: Any) -> None:
        super().__init__(model, **common)
        self.interface = interface
        self.trust = gate(self.model_id, self.revision, True)

    def settings(self) -> dict[str, Any]:
        """Return the model's identity, the interface called and that hub code runs."""
        return {**self.identity(), "interface": self.interface, "dtype": self.dtype, **self.trust}
