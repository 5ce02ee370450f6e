"""A model planted in a temporary Hugging Face hub cache whose own code leaves a mark.

The cache has the hub's real layout (``models--ORG--NAME/snapshots/REVISION/`` with
``refs/main`` naming the revision). The snapshot's ``config.json`` has an ``auto_map`` naming
modules of the repository, as a model with its own code does; importing either module writes
the marker file, so a test that finds no marker knows none of the repository's code ran.
"""

from __future__ import annotations

import json
from pathlib import Path

REVISION = "0123456789abcdef0123456789abcdef01234567"
"""The planted snapshot's revision (a commit hash, as the hub's are)."""

_CODE = '''"""Planted hub code: importing it is running code from the model's repository."""

from pathlib import Path

Path({marker!r}).write_text("the repository's code ran")
'''


PADDING = 5 << 20
"""Bytes of an unused field that pad a config past the 4 MiB the remote-code gate reads whole."""


def plant(cache: Path, repo: str, marker: Path, revision: str = REVISION, padding: int = 0) -> Path:
    """Plant ``repo`` at ``revision`` in the hub cache ``cache``; return its snapshot folder.

    Its files are :func:`plant_folder`'s.
    """
    entry = cache / f"models--{repo.replace('/', '--')}"
    snapshot = entry / "snapshots" / revision
    (entry / "refs").mkdir(parents=True, exist_ok=True)
    (entry / "refs" / "main").write_text(revision)
    return plant_folder(snapshot, marker, padding)


def plant_folder(folder: Path, marker: Path, padding: int = 0) -> Path:
    """Write a model folder whose code writes ``marker`` when imported; return the folder.

    Its ``config.json`` maps transformers' auto classes to ``configuration_planted`` and
    ``modeling_planted``, each of which writes ``marker`` when imported, and carries an unused
    field of ``padding`` spaces (:data:`PADDING`: more than the gate reads whole).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for module in ("configuration_planted", "modeling_planted"):
        (folder / f"{module}.py").write_text(_CODE.format(marker=str(marker)))
    auto_map = {
        "AutoConfig": "configuration_planted.PlantedConfig",
        "AutoModel": "modeling_planted.PlantedModel",
        "AutoModelForSequenceClassification": "modeling_planted.PlantedModel",
    }
    config = {"model_type": "planted", "architectures": ["PlantedModel"], "auto_map": auto_map}
    if padding:
        config["padding"] = " " * padding
    (folder / "config.json").write_text(json.dumps(config))
    return folder
