"""Model revisions: what pins the model a run loads, and the run that nothing pins.

A hub model loaded without a revision is whatever the hub's ``main`` holds on the day it
loads: a rerun a year later may load other weights and write other scores. A catalogue preset
pins its model to a commit (``catalogue.json``'s ``revision``); ``mmbright run --revision``
pins the model of any run, over a preset's pin. The revision reaches ``config.json`` through
the retriever's settings (``RunConfig.revision``). A local folder needs none: its files' hash
(``checkpoint_sha256``) names its weights.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmbright_core.retrieval.backends.mteb_registry import split_name
from mmbright_core.retrieval.registry import takes_option

COMMIT = re.compile(r"[0-9a-f]{40}")
"""A pinned hub revision: a full commit hash, never a branch or tag, which moves."""
_MTEB = "mteb"


def with_revision(retriever: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``options`` with their ``revision`` as retriever ``retriever`` takes it.

    MTEB's backend loads each model at its registry's revision and takes a revision only as
    ``NAME@REVISION`` (refused unless it is the registry's); every other backend that loads a
    hub model takes the ``revision`` option itself.
    """
    out = dict(options)
    if retriever == _MTEB and out.get("revision") is not None and out.get("model") is not None:
        name, _ = split_name(str(out["model"]))
        out["model"] = f"{name}@{out.pop('revision')}"
    return out


def unpinned(retriever: str, settings: Mapping[str, Any]) -> str | None:
    """Return the warning for a run whose hub model no commit pins, or None.

    Args:
        retriever: The registered retriever name.
        settings: The built retriever's settings (what ``config.json`` records).

    Returns:
        The warning, where the retriever takes a ``revision`` and its model is not a local
        folder and is loaded at no commit (no revision, or a branch or tag); None otherwise
        (a local folder, a pinned model, MTEB's registry pin, a backend with no hub revision).
    """
    model, revision = settings.get("model"), settings.get("revision")
    if not isinstance(model, str) or not takes_option(retriever, "revision"):
        return None
    if Path(model).expanduser().exists():
        return None
    if isinstance(revision, str) and COMMIT.fullmatch(revision):
        return None
    moving = f" (revision {revision!r} is a branch or tag, which moves)" if revision else ""
    return (
        f"{model} is not pinned to a revision{moving}; it loads what the hub holds on the day "
        "it runs: pass --revision <commit> to make the run repeatable"
    )
