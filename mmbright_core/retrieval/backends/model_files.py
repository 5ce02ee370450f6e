"""Model files read from disk: every fault of one is a one-line :class:`InputError`.

A checkpoint, a model config or a model folder is input like a run file: a user may hand over
a text file, ``/etc/passwd``, a truncated download, a config of the wrong shape, or
serialised Python objects that would run code when loaded. The loaders (``torch.load``,
safetensors, open_clip, transformers, sentence-transformers) answer such files with whatever
their code happens to raise (KeyError, IndexError, EOFError, SafetensorError, TypeError...), so
each load of user files runs inside :func:`model_files`, which turns those into one message
naming the file, what was wrong and what to do (docs/safety.md, "One line for every expected
failure").

A checkpoint holding objects beyond tensors is refused by ``torch.load`` in its weights-only
mode (open_clip and transformers load that way); the refusal says so and never repeats torch's
advice to turn that mode off, which would run the file's code.
"""

from __future__ import annotations

import contextlib
import json
import re
import zipfile
from _pickle import UnpicklingError  # where the class torch.load raises is defined
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError, MMBrightError

__all__ = [
    "FILE_HINT",
    "FOLDER_HINT",
    "check_open_clip_folder",
    "check_weights_file",
    "looks_like_file",
]
__all__ += ["model_files", "read_config_object"]

_SAFE_HINT = (
    "Save the weights alone, as a state dict (torch.save(model.state_dict(), path)) or as "
    ".safetensors"
)
# What open_clip's factory (``_find_checkpoint_in_dir``) loads from a local-dir: folder.
_CHECKPOINT_SUFFIXES = (".safetensors", ".bin", ".pth")
# The fields open_clip's factory indexes in a local-dir: open_clip_config.json unchecked.
_MODEL_CFG = {"embed_dim": int, "vision_cfg": dict, "text_cfg": dict}
#: How to fix a weights file no loader can read.
FILE_HINT = (
    "Give a checkpoint file of this model (.pt, .pth or .bin from torch.save, or .safetensors)."
)
#: How to fix a local model folder whose files cannot be loaded.
FOLDER_HINT = (
    "Check the folder's config.json and weights files, or save the model again "
    "(save_pretrained) into a fresh folder."
)
_AGAIN = "Download or save the weights again."
# How every loadable weights file starts: zip (torch.save, .npz), serialised objects
# (protocol 2 and later: the legacy torch.save), .npy.
_WEIGHTS_MAGIC = (b"PK\x03\x04", b"\x80", b"\x93NUMPY")
_HEAD = 64
# The global a refused checkpoint names: "Unsupported global: GLOBAL posix.system was not ...".
_GLOBAL = re.compile(r"GLOBAL ([\w.]+)")


def _fault_types() -> tuple[type[BaseException], ...]:
    """Return what the loaders raise for a file they cannot use (the optional ones if present)."""
    faults: list[type[BaseException]] = [OSError, ValueError, TypeError, KeyError, IndexError]
    faults += [AttributeError, EOFError, RuntimeError, UnpicklingError, zipfile.BadZipFile]
    with contextlib.suppress(ImportError):
        from safetensors import SafetensorError

        faults.append(SafetensorError)
    with contextlib.suppress(ImportError):
        from huggingface_hub.errors import StrictDataclassError  # a config field's wrong type

        faults.append(StrictDataclassError)
    return tuple(faults)


@contextlib.contextmanager
def model_files(what: str, source: str, hint: str) -> Iterator[None]:
    """Run a load of local model files, turning a fault of the files into one InputError.

    Args:
        what: What is loaded, for the message (``the open_clip model``).
        source: The file or folder loaded, named first in the message.
        hint: How to fix a file that cannot be loaded (said after the cause).

    Raises:
        InputError: The files cannot be loaded; the message names ``source`` and the cause.
    """
    try:
        yield
    except MMBrightError:
        raise
    except MemoryError:
        raise  # not the file's fault: the command line says so on its own
    except _fault_types() as err:
        raise load_error(what, source, err, hint) from err


def load_error(what: str, source: str, err: BaseException, hint: str) -> InputError:
    """Return the one-line error for ``err``, raised while loading ``what`` from ``source``."""
    if isinstance(err, UnpicklingError):
        named = _GLOBAL.search(str(err))
        return InputError(
            "not a plain weights file: it holds Python objects, and loading it could run "
            "code; refused for safety",
            source=source,
            found=f"a reference to {named.group(1)}" if named else "objects that are not tensors",
            hint=f"{_SAFE_HINT}.",
        )
    kind = type(err).__name__
    if kind == "SafetensorError":
        return InputError(
            "corrupt or truncated safetensors file",
            source=source,
            found=_one_line(err),
            hint=_AGAIN,
        )
    if isinstance(err, RuntimeError) and "state_dict" in str(err):
        return InputError(
            f"the weights do not fit {what}",
            source=source,
            found=_one_line(err),
            hint="Use the weights of this very model (its name and config), or pick the model "
            "the weights were trained as.",
        )
    return InputError(
        f"cannot load {what}", source=source, found=f"{kind}: {_one_line(err)}", hint=hint
    )


def check_weights_file(path: Path) -> None:
    """Refuse a file that no weights loader can read, before one tries and fails obscurely.

    Read are the first bytes only: a checkpoint is a zip archive (``torch.save``, ``.npz``),
    serialised objects (the legacy ``torch.save``), a ``.npy`` array, or, by its suffix,
    safetensors (a little-endian header length, then a JSON header).

    Raises:
        InputError: ``path`` does not exist, is not a regular file, is empty, or starts
            like no weights file.
    """
    where = str(path)
    if not path.exists():
        raise InputError("checkpoint file not found", source=where, hint="Check the path.")
    if not path.is_file():  # a FIFO would block, a device (/dev/zero) read without end
        raise InputError("not a regular file", source=where, hint=FILE_HINT)
    size = path.stat().st_size
    with path.open("rb") as handle:
        head = handle.read(_HEAD)
    if not head:
        raise InputError("empty weights file", source=where, found="0 bytes", hint=_AGAIN)
    if path.suffix == ".safetensors":
        header = int.from_bytes(head[:8].ljust(8, b"\0"), "little")
        if len(head) < 9 or head[8:9] != b"{" or 8 + header > size:
            raise InputError(
                "corrupt or truncated safetensors file",
                source=where,
                expected="an 8-byte header length, then a JSON header within the file",
                found=f"{size:,} bytes starting {head[:12]!r}",
                hint=_AGAIN,
            )
    elif not head.startswith(_WEIGHTS_MAGIC):
        raise InputError(
            "not a weights file",
            source=where,
            expected="a PyTorch checkpoint (a zip archive or serialised tensors), .npy/.npz or "
            ".safetensors",
            found=_what_bytes(head),
            hint=FILE_HINT,
        )


def _what_bytes(head: bytes) -> str:
    # Say what the file is like without quoting it: it may be /etc/passwd.
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        return "binary data of another kind"
    return "text"


def read_config_object(path: Path, required: dict[str, type]) -> dict[str, Any]:
    """Read a model's JSON config and check the fields its loader indexes without a check.

    Args:
        path: The config file.
        required: Each field the object must have, with its type; a ``dict`` field is
            checked for the same shape one level down only by the caller.

    Returns:
        The parsed object.

    Raises:
        InputError: The file is not UTF-8 JSON, not an object, or a field is missing or of
            another type.
    """
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise InputError("not UTF-8 text", source=str(path), found=_one_line(err)) from err
    except json.JSONDecodeError as err:
        raise InputError(
            "invalid JSON",
            source=str(path),
            line=err.lineno,
            found=f"{err.msg} at column {err.colno}",
        ) from err
    check_fields(value, required, str(path), "$")
    return dict(value)


def check_fields(value: Any, required: dict[str, type], source: str, at: str) -> None:
    """Check that ``value`` is an object holding each of ``required`` with its type.

    Raises:
        InputError: Not an object, or a field missing or of another type (named by JSON path).
    """
    if not isinstance(value, dict):
        raise InputError(
            f"wrong JSON shape at {at}", source=source, expected="an object", found=_kind(value)
        )
    for name, kind in required.items():
        field = value.get(name)
        if not isinstance(field, kind) or isinstance(field, bool):
            raise InputError(
                f"bad field at {at}.{name}",
                source=source,
                expected=_kind_name(kind),
                found="nothing" if name not in value else _kind(field),
            )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else "a number"
    )


def _kind_name(kind: type) -> str:
    return {dict: "an object", int: "an integer", str: "a string"}.get(kind, kind.__name__)


def _one_line(err: BaseException) -> str:
    # Loader messages wrap over lines (state-dict key lists): one line, the first 300 chars.
    return " ".join(str(err).split()).rstrip(".") or type(err).__name__


def looks_like_file(pretrained: str) -> bool:
    """Tell a checkpoint file from a pretrained tag (``openai``), which holds no separator."""
    # A tag (openai, laion2b_s34b_b79k) holds no separator and names no file here.
    path = Path(pretrained).expanduser()
    return path.exists() or "/" in pretrained or path.suffix in (*_CHECKPOINT_SUFFIXES, ".pt")


def check_open_clip_folder(folder: Path) -> None:
    """Check an open_clip ``local-dir:`` folder: its config's shape and its weights files.

    Raises:
        InputError: No config or no weights, a config of another shape, a bad weights file.
    """
    # open_clip only warns when a local-dir: folder holds no weights, then runs with random
    # ones: refuse that instead of scoring a random model under the folder's name. Its config
    # is read here first, since open_clip indexes it without a check (a TypeError, not a line).
    config = folder / "open_clip_config.json"
    weights = [p for p in folder.glob("*") if p.suffix in _CHECKPOINT_SUFFIXES]
    if not config.is_file() or not weights:
        raise InputError(
            "not an open_clip local-dir: model folder",
            expected="open_clip_config.json and a weights file (.safetensors, .bin or .pth)",
            found=", ".join(sorted(p.name for p in folder.glob("*"))) or "nothing",
            source=str(folder),
        )
    model_cfg = read_config_object(config, {"model_cfg": dict})["model_cfg"]
    check_fields(model_cfg, _MODEL_CFG, str(config), "$.model_cfg")
    for path in weights:
        check_weights_file(path)
