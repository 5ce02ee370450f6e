"""Loading a transformers model, and what every embedder over one shares.

The ``hf`` text and CLIP embedders (:mod:`.hf`, :mod:`.hf_clip`) and the hub-code ones of
``remote`` (:mod:`.remote`) all load weights the same way: a local folder (its files checked
one by one) or a hub id already in the local cache, nothing downloaded at run time; in a named
dtype; onto cuda where there is one. :class:`HFModel` holds a model's identity and loads it
once; the functions are the steps each embedder composes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmbright_core.errors import InputError, UnknownNameError, require
from mmbright_core.retrieval.backends.code_gate import gate, load_keyword, no_prompt
from mmbright_core.retrieval.backends.model_files import FOLDER_HINT, model_files
from mmbright_core.retrieval.cache.store import path_sha256

DTYPES = ("float32", "bfloat16", "float16")


def load_transformers() -> Any:
    """Import transformers (and torch) or raise the error naming the ``hf`` extra."""
    require("torch", "the hf retriever", "hf")
    return require("transformers", "the hf retriever", "hf")


def load_torch() -> Any:
    """Import torch or raise the error naming the ``hf`` extra."""
    return require("torch", "the hf retriever", "hf")


def torch_dtype(name: str) -> Any:
    """Return the torch dtype called ``name`` (one of :data:`DTYPES`).

    Raises:
        UnknownNameError: ``name`` is not a supported dtype.
    """
    if name not in DTYPES:
        raise UnknownNameError("dtype", name, DTYPES)
    return getattr(load_torch(), name)


def checkpoint_of(model: str) -> str | None:
    """Return the sha256 of a local model folder's files, or None for a hub id.

    A local model is known by its weights, not by where it lies (as the dense backend does).
    """
    return path_sha256(model) if Path(model).expanduser().exists() else None


def model_label(model: str) -> str:
    """Return a model's short name: a folder's name or a hub id's last part."""
    return Path(model.rstrip("/")).name


def load_pretrained(
    factory: Any,
    model: str,
    revision: str | None,
    trust_remote_code: bool = False,
    **kwargs: Any,
) -> Any:
    """Call ``factory.from_pretrained`` and turn a missing model into a clear error.

    Every transformers load of the package comes here, through the remote-code gate first
    (``trust_remote_code``: the opt-in; :func:`~mmbright_core.retrieval.backends.code_gate.gate`).

    Raises:
        InputError: The model runs hub code without the opt-in or where the operator forbids
            it, it is neither a local folder nor a hub id in the local cache, or a file of
            the local folder cannot be loaded.
    """
    kwargs |= load_keyword(gate(model, revision, trust_remote_code))
    if Path(model).expanduser().is_dir():  # local files: each fault of one is one line
        with model_files("the transformers model", model, FOLDER_HINT), no_prompt(model):
            return factory.from_pretrained(model, revision=revision, **kwargs)
    try:
        with no_prompt(model):
            return factory.from_pretrained(model, revision=revision, **kwargs)
    except OSError as err:
        raise InputError(
            "cannot load the transformers model",
            found=f"{model!r}: {' '.join(str(err).split())}",  # one line: its text wraps
            hint="Give a local model folder, or a hub id already in the local cache.",
        ) from err


IMAGE_PROCESSOR = "transformers, PIL backend (as transformers 4.51.3)"
"""What resizes and normalises images for the ``hf`` CLIP/SigLIP and Nomic-Vision embedders."""


def load_image_processor(model: str, revision: str | None, trust_remote_code: bool = False) -> Any:
    """Return the model's transformers image processor on its PIL path (:data:`IMAGE_PROCESSOR`).

    The official code pins transformers 4.51.3, whose processors resize with PIL. transformers 5
    picks a torchvision backend by default, whose resize differs by one or two intensity levels
    on part of the pixels; ``backend="pil"`` gives 4.51.3's pixels (``use_fast=False`` before 5).
    """
    transformers = load_transformers()
    major = int(str(transformers.__version__).split(".")[0])
    choice: dict[str, Any] = {"backend": "pil"} if major >= 5 else {"use_fast": False}
    return load_pretrained(
        transformers.AutoImageProcessor, model, revision, trust_remote_code, **choice
    )


def device_of(device: str | None) -> str:
    """Return ``device``, or cuda where there is one, else cpu."""
    return device or ("cuda" if load_torch().cuda.is_available() else "cpu")


def load_model(
    model: str,
    revision: str | None,
    dtype: str,
    device: str | None,
    trust_remote_code: bool = False,
) -> Any:
    """Load ``AutoModel`` weights in ``dtype`` onto ``device`` (default: cuda if there is one)."""
    transformers = load_transformers()
    loaded = load_pretrained(
        transformers.AutoModel,
        model,
        revision,
        trust_remote_code,
        dtype=torch_dtype(dtype),
    )
    return loaded.to(device_of(device)).eval()


def tokenize(tokenizer: Any, texts: Sequence[str], max_length: int | None, device: Any) -> Any:
    """Return a padded, truncated batch of ``texts`` as tensors on ``device``."""
    batch = tokenizer(
        list(texts), max_length=max_length, padding=True, truncation=True, return_tensors="pt"
    )
    return batch.to(device)


def in_batches(
    items: Sequence[Any], size: int, encode: Callable[[Sequence[Any]], np.ndarray]
) -> np.ndarray:
    """Encode ``items`` ``size`` at a time and stack the vectors (none: a 0 x 0 array).

    Each chunk is a slice of ``items``, not a list made of it: a slice of
    :class:`~mmbright_core.data.image_batches.LazyImages` stays lazy.
    """
    chunks = [encode(items[start : start + size]) for start in range(0, len(items), size)]
    return np.concatenate(chunks) if chunks else np.zeros((0, 0), dtype=np.float32)


def as_float32(vectors: Any) -> np.ndarray:
    """Return a torch tensor of vectors (any float dtype, any device) as a float32 array."""
    return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)


#: Items per forward pass unless a run or preset sets another batch size.
DEFAULT_BATCH = 32


class HFModel:
    """A transformers model's identity, loaded once on first use.

    Args:
        model: A hub id or a local folder holding the model.
        revision: The hub revision (pin one for reproducible runs).
        dtype: Weights' dtype; vectors are float32.
        batch_size: Items per forward pass.
        device: Torch device (default: ``cuda`` when available, else ``cpu``).
    """

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        dtype: str = "float32",
        batch_size: int = DEFAULT_BATCH,
        device: str | None = None,
    ) -> None:
        self.model_id, self.revision, self.dtype = str(model), revision, dtype
        self.batch_size, self.device = batch_size, device
        self.name = model_label(self.model_id)
        #: The ``from_pretrained`` keyword that runs the model's hub code, where asked for.
        self.trust: dict[str, bool] = {}
        self._model: Any = None

    def identity(self) -> dict[str, Any]:
        """Return what names the weights: the model, its revision and a local folder's hash."""
        return {
            "model": self.model_id,
            "revision": self.revision,
            "checkpoint_sha256": checkpoint_of(self.model_id),
        }

    def pretrained(self, factory: str) -> Any:
        """Return transformers' ``factory`` (``AutoConfig``, ``AutoTokenizer``...) of the model.

        The model's hub code runs where it is trusted (:attr:`trust`).
        """
        transformers = load_transformers()
        return load_pretrained(
            getattr(transformers, factory), self.model_id, self.revision, **self.trust
        )

    def _load(self) -> Any:
        """Return the ``AutoModel`` (with its hub code where trusted), loaded on first use."""
        if self._model is None:
            trust = bool(self.trust)
            self._model = load_model(self.model_id, self.revision, self.dtype, self.device, trust)
        return self._model
