"""A model of MTEB's registry: its name and pinned revision, its entry, loading it.

``--model NAME[@REVISION]`` names an entry of ``mteb.get_model_metas()``; :func:`model_meta`
finds it (with close matches when it is not there), checks the revision against the one the
registry pins, and refuses a model this package cannot score as MTEB does (docs/models.md).
:func:`load_model` loads it as MTEB evaluates it, from the local cache only, once the
remote-code gate (:func:`~mmbright_core.retrieval.backends.code_gate.gate`) has read the model's
files: MTEB's loaders pass ``trust_remote_code=True`` for many models on their own, so a model
whose entry or files say it runs its own code needs the opt-in, and a hub model not in the
local cache (whose files cannot be read first) too. The ``mteb`` retriever
(:mod:`.mteb_models`) and reranker both go through here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any

from mmbright_core.errors import InputError, require
from mmbright_core.retrieval.backends.code_gate import gate, local_files, no_prompt

WHAT = "the mteb retriever"


def load_model(
    model: str,
    revision: str | None,
    device: str | None,
    what: str,
    trust_remote_code: bool = False,
) -> Any:
    """Return ``mteb.get_model(model, revision)`` on ``device``, for ``what`` (a backend).

    ``trust_remote_code`` is the opt-in to the model's hub code (:func:`gate`).

    Raises:
        InputError: The model would run hub code without the opt-in or where the operator
            forbids it, its weights or code cannot be loaded (not in the local cache), or
            packages its loader needs are not installed (MTEB's extra for it named).
        MissingDependencyError: mteb, or a package it imports, is not installed.
    """
    mteb = require("mteb", what, "mteb")
    gate(model, revision, trust_remote_code, loader_runs_code(mteb.get_model_meta(model)))
    try:
        # Not every loader of MTEB's takes trust_remote_code: without the opt-in it is left to
        # the loader, whose question on standard input is off.
        with no_prompt(model):
            return mteb.get_model(model, revision, device=device)
    except InputError:
        raise  # the gate's refusal: said as it is
    except ImportError as err:
        raise needs_packages(model, err) from err
    except (OSError, ValueError, RuntimeError) as err:
        raise unloadable(model, err) from err


def loader_runs_code(meta: Any) -> str | None:
    """Return why MTEB's loader of ``meta`` may run hub code whatever its files say, if so.

    Its registry entry asks for ``trust_remote_code``; or it is a hub model (open weights in
    a framework) not in the local cache, whose files cannot be read before MTEB fetches them.
    """
    if (meta.loader_kwargs or {}).get("trust_remote_code"):
        return "loader in MTEB's registry passes trust_remote_code=True"
    if meta.open_weights and meta.framework and local_files(meta.name, meta.revision) is None:
        return "files are not in the local cache, so they cannot be checked for code of their own"
    return None


def unloadable(model: str, err: Exception) -> InputError:
    """Return the error of an MTEB model whose weights or code did not load: ``err``."""
    hint = "Its weights (and remote code) must be in the local Hugging Face cache; nothing is "
    hint += "downloaded at run time."
    return InputError(
        f"cannot load MTEB model {model!r}", found=f"{type(err).__name__}: {err}", hint=hint
    )


def needs_packages(model: str, err: ImportError) -> InputError:
    """Return the error of an MTEB model whose loader needs packages not installed: ``err``.

    MTEB checks a model's extras (``ModelMeta.extra_requirements_groups``) before it loads
    it and says, over several lines, what is missing and the ``pip install`` command of its
    extra; the first line and that command make the one line.
    """
    text = str(err).strip() or f"{type(err).__name__} ({err.name})"
    command = re.search(r"`(pip install [^`]+)`", text)
    how = command.group(1) if command else f"pip install {err.name or 'the packages it names'}"
    return InputError(
        f"MTEB model {model!r} needs packages that are not installed",
        found=text.splitlines()[0],
        hint=f"Install them with: {how} (the extra of MTEB's that its loader needs; "
        "pip install 'mmbright[mteb]' installs MTEB itself).",
    )


#: MTEB's similarity names whose ranking 100 x cosine reproduces (None: MTEB's default).
_COSINE = (None, "cosine")


def split_name(model: str) -> tuple[str, str | None]:
    """Split ``NAME[@REVISION]`` into the name and the revision (None when not given)."""
    name, sep, revision = model.partition("@")
    return name, (revision or None) if sep else None


def gated_meta(
    model: str, find: Callable[[str, str | None], Any], trust_remote_code: bool
) -> tuple[str, Any, bool]:
    """Return the name of ``model`` (``NAME[@REVISION]``), its registry entry and the trust.

    ``find`` looks the entry up (:func:`model_meta`, or a reranker's own lookup); the gate is
    asked here, so a model whose loader would run code without the opt-in is refused before
    any input is encoded or scored, as the load would refuse it.
    """
    name, revision = split_name(model)
    meta = find(name, revision)
    trust = bool(gate(name, meta.revision, trust_remote_code, loader_runs_code(meta)))
    return name, meta, trust


def model_meta(name: str, revision: str | None) -> Any:
    """Return MTEB's registry entry of ``name``, checked against ``revision``.

    Raises:
        InputError: The name is not in MTEB's registry (with close matches), the revision
            is not the one the registry pins, or MTEB cannot score the model by cosine.
    """
    mteb = require("mteb", WHAT, "mteb")
    known = {meta.name: meta for meta in mteb.get_model_metas()}
    if name not in known:
        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
        guess = f"Did you mean {' or '.join(map(repr, close))}? " if close else ""
        raise InputError(
            f"unknown MTEB model {name!r}",
            expected="a name of MTEB's model registry",
            hint=f'{guess}List them with: python -c "import mteb; print([m.name for m in '
            'mteb.get_model_metas()])"; other hub models run with --retriever dense or hf.',
        )
    meta = known[name]
    if revision is not None and revision != meta.revision:
        raise InputError(
            f"MTEB's registry pins another revision of {name!r}",
            expected=f"{name}@{meta.revision} (or no @REVISION)",
            found=f"@{revision}",
        )
    if meta.similarity_fn_name not in _COSINE or "dense" not in (meta.model_type or ()):
        raise InputError(
            f"MTEB model {name!r} is not a dense encoder scored by cosine similarity",
            expected="model type dense, similarity cosine",
            found=f"similarity {meta.similarity_fn_name!s} (model type {meta.model_type})",
            hint="Late-interaction (MaxSim), dot-product and cross-encoder models are not "
            "supported.",
        )
    return meta
