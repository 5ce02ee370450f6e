"""Running a model's own code from the hub: an explicit opt-in, which an operator may forbid.

Several models of the paper's tables (gte-Qwen, Nomic, ReasonIR, M2-BERT, Jina-CLIP,
Nomic-Vision, BGE-VL, GME) keep part of their forward pass in Python files of their hub
repository. transformers and sentence-transformers run such files only when asked with
``trust_remote_code=True``; this package asks only when the user does: ``mmbright run ...
--trust-remote-code`` or the Run page's checkbox. Every loader that passes
``trust_remote_code=True`` first calls :func:`check_remote_code`, so a shared server whose
operator sets ``MMBRIGHT_ALLOW_REMOTE_CODE=0`` runs no hub code, whoever asks
(docs/safety.md).
"""

from __future__ import annotations

import os

from mmbright_core.errors import InputError

ENV = "MMBRIGHT_ALLOW_REMOTE_CODE"
"""The operator's switch: ``0`` (or ``false``, ``no``, ``off``) forbids running hub code."""
FLAG = "--trust-remote-code"
_OFF = frozenset({"0", "false", "no", "off"})


def remote_code_allowed() -> bool:
    """Return False where the operator forbids running hub code (``MMBRIGHT_ALLOW_REMOTE_CODE``)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def check_remote_code(model: str) -> None:
    """Refuse to load ``model`` with its hub code where the operator forbids it.

    Raises:
        InputError: ``MMBRIGHT_ALLOW_REMOTE_CODE`` forbids it.
    """
    if not remote_code_allowed():
        raise InputError(
            "running a model's own code from the hub is forbidden on this installation",
            found=f"{model} with trust_remote_code, {ENV}={os.environ.get(ENV, '')}",
            hint="The operator set this; run a preset whose code ships with transformers, "
            "or ask the operator.",
        )


def trusted(model: str, trust_remote_code: bool) -> dict[str, bool]:
    """Return the ``from_pretrained`` keyword that runs ``model``'s hub code, if asked for.

    Raises:
        InputError: The operator forbids hub code (:data:`ENV`).
    """
    if not trust_remote_code:
        return {}
    check_remote_code(model)
    return {"trust_remote_code": True}


def needs_opt_in(preset: str, via_mteb: bool) -> InputError:
    """Return the refusal of a hub-code preset run without :data:`FLAG`.

    Args:
        preset: The preset's name.
        via_mteb: Whether MTEB's implementation of the model is another way to run it.
    """
    other = "; or run MTEB's implementation with --instructions mteb" if via_mteb else ""
    return InputError(
        f"preset {preset!r} runs the model's own code from the hub (trust_remote_code)",
        found=f"--model-preset {preset} without {FLAG}",
        hint=f"Add {FLAG} (the Run page: its checkbox) to run it; docs/models.md says which "
        f"code runs{other}.",
    )
