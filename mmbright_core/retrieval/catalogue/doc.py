"""``docs/models.md``, generated from the catalogue.

Regenerate it with ``python -m mmbright_core.retrieval.catalogue.doc``.

A test checks that the committed page equals what :func:`models_markdown` writes, so the
page cannot drift from ``catalogue.json``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mmbright_core.errors import InputError
from mmbright_core.io.atomic import atomic_write_text
from mmbright_core.retrieval.backend_table import BACKENDS
from mmbright_core.retrieval.catalogue.image_preprocessing import image_preprocessing
from mmbright_core.retrieval.catalogue.presets import Preset, load_catalogue

PASSAGES = 2_499_273
"""Task 1's passages: encoded once for tasks 1, 2 and 4 (the cache shares them)."""
_TOKENS: dict[int | str, int] = {"long": 560, 512: 420, 384: 350, 256: 250}
"""Mean tokens per passage at a truncation (docs/performance.md's basis); shorter ones fill."""
_SMALL = 125_000_000
_OWN_POOLING = "the model's own code"
_OWN_LENGTH = "the model's own"
_OFFLINE = {
    "tested": "exercised offline by the tests: tiny random weights of the same architecture",
    "untested": "runs offline, but no test runs this preset on tiny weights of its architecture",
    "hub-code": "runs the model's own code from the hub: only with --trust-remote-code",
    "api": "an embeddings endpoint: tested against a loopback server speaking the API",
}


_STAND_IN = "the tests run this path on a local stand-in whose own code offers the same call"


def _offline(preset: Preset) -> list[str]:
    line = f"- offline: {_OFFLINE[preset.offline]} ({preset.architecture})"
    if preset.offline != "hub-code":
        return [line]
    # The backend's record says how it runs hub code, or its interface's does.
    backend = BACKENDS[preset.backend]
    hub = backend.interfaces[preset.interface] if preset.interface else backend.hub_code
    if hub is None:
        raise InputError(
            f"preset {preset.name!r} runs hub code its backend's record does not describe",
            expected=f"a hub_code in the {backend.name} record (retrieval/backend_table.py)",
            found="none",
        )
    return [
        line,
        f"- run: `mmbright run --model-preset {preset.name} --task {preset.tasks[0]} "
        "--trust-remote-code`",
        f"- tested offline: {hub.tested}; {_STAND_IN}",
        f"- only the hub code does: {hub.hub_only}",
    ]


def gpu_hours(preset: Preset) -> float | None:
    """Estimate one GPU's hours to encode the corpus: 2 x parameters x tokens at 100/300 TFLOP/s.

    The basis of docs/performance.md: about 100 TFLOP/s (bf16, H100/H200) up to 125 M
    parameters, 300 TFLOP/s above; None for BM25 and remote models.
    """
    cut = preset.passage_tokens
    tokens = cut if cut is None else _TOKENS.get(cut, cut)
    if preset.parameters is None or not isinstance(tokens, int):
        return None
    flops = 2 * preset.parameters * tokens * PASSAGES
    rate = 100e12 if preset.parameters <= _SMALL else 300e12
    return flops / rate / 3600


def _hours(value: float | None) -> str:
    if value is None:
        return "-"
    return f"~{value * 60:.0f} min" if value < 1 else f"~{value:.1f} h"


def _instructions(preset: Preset) -> str:
    parts = []
    for name, texts in preset.instructions.items():
        shown = " / ".join(repr(t) for t in (texts.query, texts.document))
        parts.append(f"{name}: {shown}")
    if preset.mteb_model:
        parts.append(f"mteb: MTEB's prompts for `{preset.mteb_model}`")
    return "; ".join(parts)


#: How a preset's ``scores.json`` holds its scores, by ``score_scale``.
_SCALES = {
    None: "BM25 scores",
    1: "the plain cosine, as the official code writes it",
    100: "the cosine x 100, as the official code writes it",
}


def _revision(preset: Preset) -> str:
    """The pinned commit and where it comes from, or why there is none."""
    if preset.revision is None:
        return preset.revision_source
    return f"`{preset.revision}`, from the {preset.revision_source}"


def _images(preset: Preset) -> list[str]:
    images = image_preprocessing(preset)
    return [] if images is None else [f"- image preprocessing: {images.text}"]


def _section(preset: Preset) -> list[str]:
    published = ", ".join(f"Task {p.task} {p.value:.1f} ({p.model})" for p in preset.published)
    lines = [
        f"### `{preset.name}` ({preset.paper})",
        "",
        f"- model: `{preset.model or '-'}`, revision: {_revision(preset)}",
        f"- backend `{preset.backend}`, pooling {preset.pooling or _OWN_POOLING}, "
        f"max length {preset.max_length or _OWN_LENGTH}, fusion `{preset.fusion}`, "
        f"tasks {', '.join(str(t) for t in preset.tasks)}",
        f"- published: {published or 'none'}",
        f"- scores written: {_SCALES[preset.score_scale]}",
        f"- instructions: {_instructions(preset)}",
        *_images(preset),
        *_offline(preset),
        f"- follows: `{preset.source}`",
    ]
    if preset.options:
        lines.append(
            f"- recipe options: {', '.join(f'{k}={v!r}' for k, v in preset.options.items())}"
        )
    lines.append(f"- batching: {preset.batch_composition}")
    lines += [f"- departs: {d}" for d in preset.departures]
    lines += [f"- upstream bug, Task {b.task}: {b.effect}" for b in preset.upstream_bugs]
    return [*lines, ""]


def models_markdown() -> str:
    """Return the text of ``docs/models.md``."""
    every = load_catalogue()
    lines = [
        "# Model presets",
        "",
        "Generated from `mmbright_core/retrieval/catalogue/catalogue.json` by "
        "`python -m mmbright_core.retrieval.catalogue.doc`; do not edit by hand.",
        "",
        "Each preset is a model of the paper's tables as the official harness "
        "(mm-bright/MM-BRIGHT) runs it: `mmbright run --model-preset NAME --task N`. "
        "The official harness pins no revision: its published runs loaded what the hub held "
        "on their day. Here a hub model that MTEB's model registry lists is pinned to the "
        "commit the registry gives (cited on each preset), so a rerun loads the same weights, "
        "which may differ from those of the published runs; a model the registry lacks is "
        "unpinned, and `mmbright run` warns when it runs one. `--revision COMMIT` pins any "
        "run's model, over the preset's pin, and `config.json` records the revision. "
        "Instruction texts may hold `{domain}`, filled with the domain's name. "
        "A `hub-code` preset runs the model's own code from the hub, so it runs only with "
        "`--trust-remote-code` (the Run page's checkbox), and nowhere the operator set "
        "`MMBRIGHT_ALLOW_REMOTE_CODE=0` (docs/safety.md).",
        "",
        "A *departure* is where mmbright computes something other than the official code "
        "would, and its effect on a score. An *upstream bug* is a defect of the official code "
        "that changes its published number and that mmbright does not reproduce: it encodes "
        "the images the data holds, so its number for that task answers another question "
        "than the published one.",
        "",
        "| preset | paper | backend | fusion | tasks | published | offline | 1 GPU (est.) |",
        "|---|---|---|---|---|---|---|--:|",
    ]
    for p in every:
        published = ", ".join(f"T{x.task} {x.value:.1f}" for x in p.published) or "-"
        tasks = ",".join(str(t) for t in p.tasks)
        lines.append(
            f"| `{p.name}` | {p.paper} | `{p.backend}` | `{p.fusion}` | {tasks} | {published} "
            f"| {p.offline} | {_hours(gpu_hours(p))} |"
        )
    lines += ["", "GPU estimates: see docs/performance.md for the basis (not measurements).", ""]
    for p in every:
        lines += _section(p)
    return "\n".join(lines).rstrip() + "\n"


def main() -> int:
    """Write ``docs/models.md`` under the folder given (default: the current one)."""
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    atomic_write_text(root / "docs" / "models.md", models_markdown())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
