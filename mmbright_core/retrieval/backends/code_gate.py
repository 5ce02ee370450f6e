"""Running a model's own code from the hub: one gate, an explicit opt-in, an operator's switch.

Several models of the paper's tables (gte-Qwen, Nomic, ReasonIR, M2-BERT, Jina-CLIP,
Nomic-Vision, BGE-VL, GME) keep part of their forward pass in Python files of their hub
repository. transformers and sentence-transformers run such files only when asked with
``trust_remote_code=True``, and MTEB's loaders ask for many models on their own. Every model
load of this package (transformers, sentence-transformers and its cross-encoders, MTEB's
registry, open_clip's ``hf-hub:`` models, gritlm) first passes :func:`gate`, which reads the
model's local files before any library does: a model whose files name code of their own
(an ``auto_map``, a module of its own in ``modules.json``, or, for open_clip, a transformers
tower that does), or whose loader runs hub code, or that is asked to run it, loads only

- with the opt-in: ``mmbright run ... --trust-remote-code`` (``mmbright rerank`` too) or the
  Run page's checkbox, and
- where the operator has not set ``MMBRIGHT_ALLOW_REMOTE_CODE=0``, which forbids it for every
  run, whoever asks (docs/safety.md).

Otherwise the load is refused in one line, before anything of the model's repository is
imported. A file the gate must read to know (a configuration, ``modules.json``) that it cannot
read whole is refused the same way, never taken as naming nothing; every load passes
``trust_remote_code`` explicitly, and runs with transformers' own "run the custom code?
[y/N]" question turned off (:func:`no_prompt`): standard input is never read (docs/safety.md).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, MMBrightError, cut
from mmbright_core.io.json_shapes import json_kind

ENV = "MMBRIGHT_ALLOW_REMOTE_CODE"
"""The operator's switch: ``0`` (or ``false``, ``no``, ``off``) forbids running hub code."""
FLAG = "--trust-remote-code"
_OFF = frozenset({"0", "false", "no", "off"})
# A hub revision or branch name as it may appear in the cache (never a path).
_REVISION = re.compile(r"[\w.-]+")
# The package whose module types in modules.json are sentence-transformers' own code.
_ST_OWN = "sentence_transformers."
_JSON_LIMIT = 4 << 20  # the most bytes of a file the gate must read whole
# The files a loader reads a pointer to code from (an auto_map, a module of its own).
_POINTERS = frozenset(
    {
        "config.json",
        "tokenizer_config.json",
        "preprocessor_config.json",
        "processor_config.json",
        "video_preprocessor_config.json",
        "audio_tokenizer_config.json",
        "open_clip_config.json",
        "modules.json",
    }
)
# What transformers' refusal of hub code says (an explicit False, or its question turned off).
_TRANSFORMERS_REFUSAL = "trust_remote_code=True"


def remote_code_allowed() -> bool:
    """Return False where the operator forbids running hub code (``MMBRIGHT_ALLOW_REMOTE_CODE``)."""
    return os.environ.get(ENV, "").strip().lower() not in _OFF


def local_files(model: str, revision: str | None) -> Path | None:
    """Return the folder of ``model``'s files on this machine: a local folder or a cache snapshot.

    A hub id is looked up in the Hugging Face hub cache (``HF_HUB_CACHE``) at ``revision``
    (a commit, or a branch its ``refs/`` names; default ``main``). None: not on this machine.
    """
    folder = Path(model).expanduser()
    if folder.is_dir():
        return folder
    wanted = revision or "main"
    if not _REVISION.fullmatch(wanted) or set(wanted) == {"."}:
        return None
    from huggingface_hub import constants

    entry = Path(constants.HF_HUB_CACHE) / f"models--{model.replace('/', '--')}"
    ref = entry / "refs" / wanted
    commit = ref.read_text(encoding="utf-8").strip() if ref.is_file() else wanted
    snapshot = entry / "snapshots" / commit
    return snapshot if _REVISION.fullmatch(commit) and snapshot.is_dir() else None


def hub_code(model: str, revision: str | None) -> str | None:
    """Return what in ``model``'s local files names code of its own (None: nothing does).

    Read: every JSON file of the folder and of its module subfolders, for an ``auto_map``
    (transformers' pointer to a module of the repository, or of another one), the module
    types of ``modules.json`` that are not sentence-transformers' own, and the transformers
    model an ``open_clip_config.json`` names for its text tower (checked the same way).
    """
    folder = local_files(model, revision)
    if folder is None:
        return None
    for path in sorted([*folder.glob("*.json"), *folder.glob("*/*.json")]):
        named = _names_code(path, model)
        if named is not None:
            return f"{path.relative_to(folder)} names {named}"
    return None


def _names_code(path: Path, model: str) -> str | None:
    record = _read_json(path)
    if isinstance(record, dict) and record.get("auto_map"):
        mapped = record["auto_map"]
        first = next(iter(mapped.values()), mapped) if isinstance(mapped, dict) else mapped
        return f"code of its own (auto_map: {str(first)[:80]})"
    if path.name == "modules.json" and isinstance(record, list):
        for module in record:
            kind = module.get("type") if isinstance(module, dict) else None
            if isinstance(kind, str) and not kind.startswith(_ST_OWN):
                return f"a module of its own ({kind[:80]})"
    if path.name == "open_clip_config.json" and isinstance(record, dict):
        model_cfg = record.get("model_cfg")
        text = model_cfg.get("text_cfg") if isinstance(model_cfg, dict) else None
        for key in ("hf_model_name", "hf_tokenizer_name"):
            tower = text.get(key) if isinstance(text, dict) else None
            if isinstance(tower, str) and tower != model:
                found = hub_code(tower, None)
                if found is not None:
                    return f"the text tower {tower!r}, whose {found}"
    return None


def _must_read(path: Path) -> bool:
    """Whether a loader may read a pointer to code from ``path``, so the gate must read it whole.

    These are transformers' configurations (of the model, its tokenizer, processors and
    preprocessors), open_clip's, and sentence-transformers' ``modules.json``; the others
    (``tokenizer.json``, vocabularies, weight indexes, training notes) name no code to any
    loader.
    """
    return path.name in _POINTERS


def _read_json(path: Path) -> Any:
    """Return the JSON of ``path``; None for a file no loader reads code from that is unreadable.

    Raises:
        InputError: A file the gate must read (:func:`_must_read`) is not a regular file, is
            larger than 4 MiB, is not UTF-8 JSON, or is not of its kind's shape (an object;
            ``modules.json``: an array).
    """
    if not _must_read(path):
        try:
            if not path.is_file() or path.stat().st_size > _JSON_LIMIT:
                return None
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None  # names no code to any loader: the loader reports it, in its own words
    if not path.is_file():  # a FIFO would block, a device read without end
        raise _unchecked(path, "not a regular file")
    size = path.stat().st_size
    if size > _JSON_LIMIT:
        limit = f"the {_JSON_LIMIT >> 20} MiB a model's configuration file may be"
        raise _unchecked(path, f"{size / (1 << 20):.1f} MiB, more than {limit}")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise _unchecked(path, f"a byte that is not UTF-8 at offset {err.start}") from err
    except OSError as err:
        raise _unchecked(path, f"{type(err).__name__}: {err.strerror or err}") from err
    try:
        record = json.loads(text)
    except json.JSONDecodeError as err:
        raise _unchecked(
            path, err.msg, f"invalid JSON at column {err.colno}", err.lineno, "valid JSON"
        ) from err
    except (ValueError, RecursionError) as err:  # too many digits, too deep
        raise _unchecked(path, cut(f"{type(err).__name__}: {err}", 200)) from err
    shape, kind = (list, "an array") if path.name == "modules.json" else (dict, "an object")
    if not isinstance(record, shape):
        raise _unchecked(path, json_kind(record), "wrong JSON shape at $", expected=kind)
    return record


def _unchecked(
    path: Path,
    found: str,
    problem: str = "cannot check this file of the model for code of its own, so the model is "
    "not loaded",
    line: int | None = None,
    expected: str | None = None,
) -> InputError:
    """The refusal of a model whose ``path`` the gate cannot read (what was ``found``)."""
    return InputError(
        problem,
        source=str(path),
        line=line,
        expected=expected,
        found=found,
        hint="A model's configuration files are checked for code of the model's own before "
        "any loader reads them, so the model is not loaded. A model's configuration is a JSON "
        "object of kilobytes: fix the file, or save the model again (save_pretrained) into a "
        "fresh folder.",
    )


def gate(
    model: str,
    revision: str | None,
    trust_remote_code: bool,
    loader_runs_code: str | None = None,
) -> dict[str, bool]:
    """Return the keyword that loads ``model``, once the switch and the opt-in allow it.

    Every model load passes here first. A model runs hub code when it is asked to
    (``trust_remote_code``), when its loader does on its own (``loader_runs_code``: why), or
    when its local files name code of their own (:func:`hub_code`); it then loads only with
    the opt-in and where the operator allows it.

    Args:
        model: A hub id or a local folder.
        revision: The hub revision to be loaded (None: the cache's ``main``).
        trust_remote_code: The opt-in (:data:`FLAG`, the Run page's checkbox).
        loader_runs_code: Why the model's loader runs hub code whatever it is passed, if it does.

    Returns:
        ``{"trust_remote_code": True}`` where hub code may run, else ``{}`` (the load then
        passes ``trust_remote_code=False``: :func:`load_keyword`).

    Raises:
        InputError: The operator forbids hub code (:data:`ENV`) and the model would run
            some, the model runs its own code and the opt-in was not given, or a file the
            gate must read cannot be read whole (:func:`_read_json`).
    """
    if trust_remote_code and remote_code_allowed():
        return {"trust_remote_code": True}
    why = loader_runs_code or hub_code(model, revision)
    if not trust_remote_code and why is None:
        return {}
    raise _refusal(model, why)


def load_keyword(trust: dict[str, bool]) -> dict[str, bool]:
    """Return the ``trust_remote_code`` a load passes, explicitly, for :func:`gate`'s answer."""
    return {"trust_remote_code": bool(trust)}


def _refusal(model: str, why: str | None) -> InputError:
    """Return the refusal of ``model``'s hub code (``why``: what names it; None: it was asked)."""
    if not remote_code_allowed():
        return InputError(
            "running a model's own code from the hub is forbidden on this installation",
            found=f"{model}{f', whose {why}' if why else ' with trust_remote_code'}, "
            f"{ENV}={os.environ.get(ENV, '')}",
            hint="The operator set this; run a model whose code ships with transformers, "
            "or ask the operator.",
        )
    return InputError(
        f"model {model!r} runs its own code from the hub (trust_remote_code)",
        found=f"{model}, whose {why}, without {FLAG}",
        hint=f"Read that code, then add {FLAG} (the Run page: its checkbox) to run it.",
    )


@contextlib.contextmanager
def no_prompt(model: str) -> Iterator[None]:
    """Run a load of ``model`` with transformers' question on standard input turned off.

    transformers asks "Do you wish to run the custom code? [y/N]" on standard input when a
    model names code of its own and its loader passed no ``trust_remote_code`` (open_clip's
    transformers towers, some of MTEB's loaders), so ``yes y | mmbright ...`` would answer it.
    Its timeout at 0 makes it refuse instead, as an explicit ``trust_remote_code=False`` does
    (the process never wants the question, so it stays off); either refusal becomes the
    gate's one line.

    Raises:
        InputError: transformers refused to run the model's code.
    """
    with contextlib.suppress(ImportError):
        dynamic: Any = importlib.import_module("transformers.dynamic_module_utils")
        dynamic.TIME_OUT_REMOTE_CODE = 0
    try:
        yield
    except ValueError as err:
        if isinstance(err, MMBrightError) or _TRANSFORMERS_REFUSAL not in str(err):
            raise
        raise _refusal(model, "files name code of its own, which transformers would run") from err


def needs_opt_in(preset: str) -> InputError:
    """Return the refusal of a hub-code preset run without :data:`FLAG`."""
    return InputError(
        f"preset {preset!r} runs the model's own code from the hub (trust_remote_code)",
        found=f"--model-preset {preset} without {FLAG}",
        hint=f"Add {FLAG} (the Run page: its checkbox) to run it; docs/models.md says which "
        "code runs.",
    )
