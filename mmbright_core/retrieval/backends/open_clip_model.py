"""An open_clip model as an embedder: its raw projected features, its weights' identity.

:class:`OpenClipEmbedder` is what the ``clip`` backend (:mod:`.clip`) runs under the dual
encoder: an open_clip model named (``ViT-L-14``) or in a ``local-dir:`` folder, with pretrained
weights, a local checkpoint file or seeded random ones, its files checked before open_clip
reads them. Its vectors are the raw outputs of ``encode_text`` / ``encode_image`` (projected,
not normalised), which the ``raw-mean`` fusion needs (docs/protocol.md, "Dual-encoder fusion").

The activation is the one the weights were trained with. open_clip's built-in configs use
GELU (``ViT-L-14``) or QuickGELU (``ViT-L-14-quickgelu``), and its pretrained registry says per
tag which one the weights need (``quick_gelu`` in ``open_clip.pretrained``: True for every
``openai`` tag, OpenAI's CLIP having been trained with QuickGELU, as Hugging Face's
``openai/clip-vit-large-patch14`` config says, ``hidden_act: quick_gelu``). open_clip itself
only warns when a tag is loaded into the other activation; here every tag marked
``quick_gelu`` is built with ``force_quick_gelu``, and any mismatch open_clip still reports is
said as an :class:`~mmbright_core.errors.InputWarning`. A checkpoint file or a ``local-dir:``
folder runs its config's activation (OpenAI weights from a file: name the ``-quickgelu``
config). The activation is recorded in ``config.json`` and keys the embedding cache.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from mmbright_core.data.image_batches import each_preprocessed
from mmbright_core.errors import InputError, InputWarning, UnknownNameError, require
from mmbright_core.retrieval.backends.code_gate import gate, no_prompt
from mmbright_core.retrieval.backends.hf_model import as_float32
from mmbright_core.retrieval.backends.model_files import (
    FILE_HINT,
    check_open_clip_folder,
    check_weights_file,
    looks_like_file,
    model_files,
)
from mmbright_core.retrieval.cache.store import path_sha256
from mmbright_core.retrieval.dual.embedder import Modality, Role
from mmbright_core.retrieval.dual.textcap import cap_text

_LOCAL_DIR = "local-dir:"
_HUB_PREFIX = "hf-hub:"  # open_clip's model from the hub (its open_clip_config.json)
#: The default ``pretrained``: ``openai`` for a named model, the folder's own weights for
#: ``local-dir:`` (whose checkpoint open_clip finds itself, ignoring ``pretrained``).
AUTO_PRETRAINED = "auto"
_HUB_DEFAULT = "openai"
_WHAT = "the open_clip model"
_LOAD_HINT = (
    "Use a local checkpoint file, a local-dir: folder, or weights already in the local cache "
    "(no downloads at run time)."
)


class OpenClipEmbedder:
    """An open_clip model as an :class:`~mmbright_core.retrieval.dual.embedder.Embedder`.

    Its vectors are the raw projected features (``encode_text``, ``encode_image``), the same
    for both roles: CLIP takes no instruction.

    Args:
        model: An open_clip model name or ``local-dir:<folder>``.
        pretrained: A resolved pretrained tag or checkpoint file; None: random or the folder's.
        seed: Seed of random weights.
        device: Torch device.
    """

    modalities: frozenset[Modality] = frozenset({"text", "image"})
    fusion = "raw-mean"

    def __init__(self, model: str, pretrained: str | None, seed: int, device: str) -> None:
        # open_clip never passes trust_remote_code: a model whose files (or whose transformers
        # text tower's) name code of their own is refused here, before open_clip reads them.
        gate(model.removeprefix(_LOCAL_DIR).removeprefix(_HUB_PREFIX), None, False)
        self.model, self.pretrained, self.seed, self.device = model, pretrained, seed, device
        self.name = _label(model, pretrained)
        self._loaded: tuple[Any, Any, Any] | None = None

    @cached_property
    def activation(self) -> str:
        """Return the activation the model is built with: ``quick_gelu`` or ``gelu``.

        A pretrained tag that open_clip's registry marks ``quick_gelu`` gets QuickGELU whatever
        its config builds; any other weights get their config's activation.
        """
        if self.model.startswith(_LOCAL_DIR):
            config = Path(self.model[len(_LOCAL_DIR) :], "open_clip_config.json").expanduser()
            if not config.is_file():
                return "gelu"  # refused by the folder check when loaded
            model_cfg = json.loads(config.read_text(encoding="utf-8")).get("model_cfg", {})
            return _ACTIVATIONS[bool(model_cfg.get("quick_gelu", False))]
        open_clip = require("open_clip", "the clip retriever", "clip")
        config = open_clip.get_model_config(self.model)
        if config is None:
            raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
        tag = open_clip.get_pretrained_cfg(self.model, self.pretrained) if self.pretrained else {}
        return _ACTIVATIONS[bool(tag.get("quick_gelu", False) or config.get("quick_gelu", False))]

    def checkpoint(self) -> str | None:
        """Return the sha256 of local weights (a local-dir: folder or checkpoint file)."""
        if self.model.startswith(_LOCAL_DIR):
            return path_sha256(self.model[len(_LOCAL_DIR) :])
        if self.pretrained is not None and Path(self.pretrained).expanduser().is_file():
            return path_sha256(self.pretrained)
        return None

    def weights(self) -> str:
        """Return what the vectors depend on: a hash, a pretrained tag, or the seeded init.

        Random weights' values also depend on the torch and open_clip versions.
        """
        if self.pretrained is None and not self.model.startswith(_LOCAL_DIR):
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            versions = f"torch={torch.__version__}:open_clip={open_clip.__version__}"
            return f"random:seed={self.seed}:{versions}"
        return self.checkpoint() or str(self.pretrained)

    def settings(self) -> dict[str, Any]:
        """Return model identity and the text truncation (the context length)."""
        return {
            "model": self.model,
            "revision": self.pretrained,
            "checkpoint_sha256": self.checkpoint(),
            "weights": self.weights(),
            "truncation": self.context_length(),
            "activation": self.activation,
        }

    def cache_settings(self, modality: str, role: Role) -> dict[str, Any]:
        """Return the cache key: the same for both roles (CLIP takes no instruction)."""
        settings: dict[str, Any] = {
            "encoder": "open_clip",
            "model": self.model,
            "weights": self.weights(),
            "role": modality,
            "output": "raw",  # projected features, not normalised: the fusion needs their norm
            # Vectors cached before the activation was the tag's (GELU for openai) never match.
            "activation": self.activation,
        }
        if modality == "text":
            settings["truncation"] = self.context_length()
        else:
            settings["preprocess"] = repr(self.load()[1])
        return settings

    def context_length(self) -> int:
        """Return the text tower's context length (77 for CLIP)."""
        open_clip = require("open_clip", "the clip retriever", "clip")
        if self.model.startswith(_LOCAL_DIR):
            return int(self.load()[2].context_length)
        config = open_clip.get_model_config(self.model)
        if config is None:
            raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
        return int(config.get("text_cfg", {}).get("context_length", 77))

    def load(self) -> tuple[Any, Any, Any]:
        """Return the model, its image preprocessing and its tokenizer (loaded once)."""
        if self._loaded is None:
            open_clip = require("open_clip", "the clip retriever", "clip")
            torch = require("torch", "the clip retriever", "clip")
            if not self.model.startswith(_LOCAL_DIR) and self.model not in open_clip.list_models():
                raise UnknownNameError("open_clip model", self.model, open_clip.list_models())
            source, hint = self._check_files()
            name = self.model.removeprefix(_LOCAL_DIR)
            with (
                model_files(_WHAT, source, hint),
                no_prompt(name),
                torch.random.fork_rng(devices=[]),
            ):
                torch.manual_seed(self.seed)  # random weights reproduce across runs
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model, _, preprocess = open_clip.create_model_and_transforms(
                        self.model,
                        pretrained=self.pretrained,
                        device=self.device,
                        force_quick_gelu=self.activation == "quick_gelu",
                    )
            _pass_on(caught, self.activation)
            model.eval()
            with no_prompt(name):  # a transformers tower's tokenizer
                self._loaded = (model, preprocess, open_clip.get_tokenizer(self.model))
        return self._loaded

    def _check_files(self) -> tuple[str, str]:
        """Check local files before open_clip reads them; return what is read, and a hint."""
        if self.model.startswith(_LOCAL_DIR):
            folder = Path(self.model[len(_LOCAL_DIR) :]).expanduser()
            check_open_clip_folder(folder)
            return str(folder), FILE_HINT
        if self.pretrained is not None and looks_like_file(self.pretrained):
            check_weights_file(Path(self.pretrained).expanduser())
            return self.pretrained, FILE_HINT
        return f"{self.model} / {self.pretrained}", _LOAD_HINT

    def encode_texts(self, texts: Sequence[str], role: Role = "document") -> np.ndarray:
        """Return raw ``encode_text`` output, not normalised.

        Texts are capped first (:func:`cap_text` changes no token), then truncated by the
        tokenizer to the context length with the end-of-text token kept last.
        """
        model, _, tokenizer = self.load()
        torch = require("torch", "the clip retriever", "clip")
        tokens = self.context_length()
        with torch.no_grad():
            vectors = model.encode_text(
                tokenizer([cap_text(t, tokens) for t in texts]).to(self.device)
            )
        return as_float32(vectors)

    def encode_images(self, images: Sequence[Image.Image], role: Role = "document") -> np.ndarray:
        """Return raw ``encode_image`` output of images (decoded one at a time if lazy)."""
        model, preprocess, _ = self.load()
        torch = require("torch", "the clip retriever", "clip")
        pixels = torch.stack(each_preprocessed(images, preprocess)).to(self.device)
        with torch.no_grad():
            vectors = model.encode_image(pixels)
        return as_float32(vectors)


#: quick_gelu flag of an open_clip config -> the recorded activation.
_ACTIVATIONS = {True: "quick_gelu", False: "gelu"}


def _pass_on(caught: list[warnings.WarningMessage], activation: str) -> None:
    """Pass open_clip's warnings on; a mismatch it reports becomes a loud :class:`InputWarning`.

    After QuickGELU is forced for every tag trained with it, open_clip reports a mismatch only
    for a config that builds QuickGELU with a tag its registry does not mark so
    (``roberta-ViT-B-32`` / ``laion2b_s12b_b32k``): the model runs as its config says.
    """
    for warning in caught:
        if "mismatch" in str(warning.message).lower():
            warnings.warn(
                f"open_clip: {warning.message} The model runs with its config's activation "
                f"({activation}), recorded in config.json; check that the weights need it.",
                InputWarning,
                stacklevel=3,
            )
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )


def _label(model: str, pretrained: str | None) -> str:
    """Return ``<model>-<pretrained>`` (``ViT-L-14-openai``; ``random`` for no weights)."""
    if model.startswith(_LOCAL_DIR):
        return Path(model[len(_LOCAL_DIR) :]).name
    tag = "random" if pretrained is None else Path(pretrained).stem
    return f"{model}-{tag}"


def resolve_pretrained(model: str, pretrained: str | None) -> str | None:
    """Return the ``pretrained`` open_clip loads: a tag, a file, or None (random, the folder's).

    None, ``""`` and ``none`` mean random weights; ``auto`` the model's natural weights.

    Raises:
        InputError: Weights given for a ``local-dir:`` model, which carries its own.
    """
    local = model.startswith(_LOCAL_DIR)
    if pretrained == AUTO_PRETRAINED:
        return None if local else _HUB_DEFAULT
    chosen = None if pretrained in (None, "", "none") else pretrained
    if local and chosen is not None:
        raise InputError(
            "a local-dir: model carries its own weights",
            found=f"pretrained={pretrained!r}",
            hint="Leave --pretrained out.",
        )
    return chosen
