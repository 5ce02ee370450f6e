"""The model catalogue's presets as the dashboard shows them: offered, explained, reproduced.

The Run page offers the presets the official harness runs on the chosen task (those of the
``api`` backend excepted: a visitor would spend the server's key, docs/safety.md) and says,
before a preset is run, what running it takes: a download from the Hugging Face hub, code
from the hub (``trust_remote_code``), a model sized for a GPU. Home marks the loaded runs
whose ``config.json`` records a preset beside that preset's published number.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from mmbright_core.errors import UnknownNameError
from mmbright_core.retrieval.backends.code_gate import ENV
from mmbright_core.retrieval.catalogue.presets import Preset, get_preset, presets
from mmbright_core.ui.common.state import RunEntry

GPU_PARAMETERS = 1_000_000_000
"""Parameters from which a preset is called GPU-sized: on CPU its corpus takes days to
encode (docs/performance.md, the estimate per preset)."""


REMOTE_CODE_HELP = (
    "Off by default. When ticked, transformers or sentence-transformers import and run the "
    "Python files of the model's hub repository on this machine (trust_remote_code), as "
    "the official harness does for this model; that code can do anything the app's user "
    "can. The run's config.json records it. The server's operator can forbid it for "
    f"everyone with {ENV}=0, which greys this box out."
)
"""The Run page's help for the opt-in to a preset's hub code (``--trust-remote-code``)."""


def offered(task: int, hidden: Collection[str]) -> list[Preset]:
    """The presets the official harness runs on ``task``, less those run by ``hidden`` backends."""
    return [p for p in presets(task) if p.backend not in hidden]


def label(preset: Preset) -> str:
    """One line naming a preset, its model and the published averages it should reproduce."""
    published = ", ".join(f"task {p.task}: {p.value:.1f}" for p in preset.published)
    return f"{preset.name} · {preset.paper}" + (f" (published {published})" if published else "")


def summary(preset: Preset) -> str:
    """What a preset runs, in one line: backend, model, fusion, tasks."""
    tasks = ", ".join(str(t) for t in preset.tasks)
    model = f"`{preset.model}`" if preset.model else "no model"
    return (
        f"Backend `{preset.backend}` · {model} · fusion `{preset.fusion}` · tasks {tasks} · "
        f"settings in the catalogue: `mmbright models` (docs/models.md)."
    )


def cautions(preset: Preset) -> list[str]:
    """What running ``preset`` takes beyond this package: downloads, hub code, a GPU."""
    said = []
    if preset.model is not None:
        said.append(
            f"Downloads {preset.model} from the Hugging Face hub unless it is in the local "
            "cache (with HF_HUB_OFFLINE=1 only the cache is read)."
        )
    if preset.trust_remote_code:
        said.append(
            "Runs the model's own code from the hub (trust_remote_code): only once the box "
            "below is ticked."
        )
    if preset.parameters is not None and preset.parameters >= GPU_PARAMETERS:
        said.append(
            f"A GPU-sized model ({preset.parameters / 1e9:.1f} B parameters): on CPU the "
            "benchmark's corpus takes days (docs/performance.md)."
        )
    return said


def reproducing(entries: Mapping[str, RunEntry], task: int) -> dict[str, str]:
    """Map each run recording a preset with a published ``task`` number to that number's model.

    Args:
        entries: The runs, by name (their ``config`` is the recorded ``config.json``).
        task: The task of the published table.

    Returns:
        run name -> the model's name in the published table
        (``retrieval/catalogue/reference.json``).
    """
    models: dict[str, str] = {}
    for name, entry in entries.items():
        preset = _preset_of(entry)
        published = [p for p in preset.published if p.task == task] if preset else []
        if published:
            models[name] = published[0].model
    return models


def _preset_of(entry: RunEntry) -> Preset | None:
    name = None if entry.config is None else entry.config.preset
    if name is None:
        return None
    try:
        return get_preset(name)
    except UnknownNameError:  # a preset of another version's catalogue: nothing to match it to
        return None
