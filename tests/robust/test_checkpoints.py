"""Bad model files of every kind give one line and exit status 2, through ``mmbright run``.

Each case hands a real file to the real command: checkpoints for the clip retriever (a pickle
that would run code, text, ``/etc/passwd``, corrupt or truncated safetensors and zip archives,
an empty file, a FIFO, weights of another shape), ``local-dir:`` folders with a config of the
wrong shape, and hf / dense model folders with broken files.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from tiny_clip import TINY_CLIP as TINY
from tiny_clip import TINY_CLIP_CONFIG

from mmbright_core.cli import main

pytestmark = pytest.mark.slow  # imports torch and open_clip
torch = pytest.importorskip("torch")
pytest.importorskip("open_clip")
save_file = pytest.importorskip("safetensors.torch").save_file


@pytest.fixture(scope="module")
def weights(tiny_clip: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, torch.Tensor]:
    """The tiny model's random weights: a state dict that loads."""
    import open_clip

    return dict(open_clip.create_model(tiny_clip, pretrained=None).state_dict())


def _fails_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run the command; it must exit 2 with one line on stderr, which is returned."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"mmbright {argv[0]}: error: "), err
    return err


def _clip_run(fixture_dir: Path, tmp_path: Path, *model: str) -> list[str]:
    args = ["run", "--source", str(fixture_dir), "--task", "1", "--retriever", "clip", *model]
    return [*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "out")]


class Payload:
    """A pickle that would create a folder when loaded without ``weights_only``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Callable[[str], None], tuple[str]]:
        return os.mkdir, (str(self.marker),)


def _truncated(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _make(kind: str, folder: Path, weights: dict[str, torch.Tensor]) -> Path:
    """Write the bad checkpoint ``kind`` into ``folder`` and return its path."""
    if kind == "passwd":
        return Path("/etc/passwd")
    path = folder / ("bad.safetensors" if "safetensors" in kind else "bad.pt")
    if kind == "text":
        path.write_text("these are not weights\n")
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "fifo":
        os.mkfifo(path)  # reading it would block for ever
    elif kind == "corrupt safetensors":
        path.write_bytes((20).to_bytes(8, "little") + b'{"a": not json at all}')
    elif kind == "truncated safetensors":
        save_file({k: v.contiguous() for k, v in weights.items()}, path)
        _truncated(path)
    elif kind == "truncated zip":
        torch.save(weights, path)
        _truncated(path)
    elif kind == "missing key":
        torch.save({k: v for k, v in weights.items() if k != "text_projection"}, path)
    elif kind == "list":
        torch.save([1, 2, 3], path)
    return path


CHECKPOINTS = {
    "text": "not a weights file; expected a PyTorch checkpoint (a zip archive or serialised",
    "passwd": "/etc/passwd: not a weights file",
    "empty": "empty weights file",
    "fifo": "not a regular file",
    "corrupt safetensors": "corrupt or truncated safetensors file",
    "truncated safetensors": "corrupt or truncated safetensors file",
    "truncated zip": "cannot load the open_clip model; found RuntimeError",
    "missing key": "the weights do not fit the open_clip model; found Error(s) in loading",
    "list": "cannot load the open_clip model; found AttributeError",
}


@pytest.mark.parametrize("kind", CHECKPOINTS)
def test_a_bad_checkpoint_file_is_one_line(
    kind: str, fixture_dir: Path, tmp_path: Path, weights, capsys: pytest.CaptureFixture[str]
):
    checkpoint = _make(kind, tmp_path, weights)
    argv = _clip_run(fixture_dir, tmp_path, "--model", TINY, "--pretrained", str(checkpoint))
    err = _fails_in_one_line(argv, capsys)
    assert f"{checkpoint}: {CHECKPOINTS[kind].removeprefix('/etc/passwd: ')}" in err


def test_a_pickle_that_would_run_code_is_refused_for_safety(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    marker = tmp_path / "ran"
    checkpoint = tmp_path / "evil.pt"
    torch.save({"weight": Payload(marker)}, checkpoint)
    argv = _clip_run(fixture_dir, tmp_path, "--model", TINY, "--pretrained", str(checkpoint))
    err = _fails_in_one_line(argv, capsys)
    assert f"{checkpoint}: not a plain weights file" in err and "refused for safety" in err
    assert "a reference to posix.mkdir" in err
    assert "weights_only" not in err  # torch's advice to load it unsafely is not repeated
    assert not marker.exists()


def _model_cfg(**changes: object) -> dict[str, object]:
    return {"model_cfg": {**TINY_CLIP_CONFIG, **changes}}


LOCAL_DIRS: dict[str, tuple[str | dict[str, object], str]] = {
    "string": ('"ViT-B-32"', "open_clip_config.json: wrong JSON shape at $; expected an object"),
    "malformed": ('{"model_cfg": ', "open_clip_config.json:1: invalid JSON"),
    "no model_cfg": ({"preprocess_cfg": {}}, "bad field at $.model_cfg; expected an object"),
    "model_cfg string": ({"model_cfg": "ViT-B-32"}, "bad field at $.model_cfg; expected an obj"),
    "embed_dim string": (_model_cfg(embed_dim="32"), "bad field at $.model_cfg.embed_dim"),
    "text_cfg missing": (
        {"model_cfg": {"embed_dim": 32, "vision_cfg": {}}},
        "bad field at $.model_cfg.text_cfg; expected an object; found nothing",
    ),
    "layers string": (
        _model_cfg(vision_cfg={**TINY_CLIP_CONFIG["vision_cfg"], "layers": "one"}),
        "cannot load the open_clip model; found TypeError",
    ),
}


@pytest.mark.parametrize("kind", LOCAL_DIRS)
def test_a_bad_local_dir_config_is_one_line(
    kind: str, fixture_dir: Path, tmp_path: Path, weights, capsys: pytest.CaptureFixture[str]
):
    config, expected = LOCAL_DIRS[kind]
    folder = tmp_path / "model"
    folder.mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "open_clip_config.json").write_text(text)
    save_file(
        {k: v.contiguous() for k, v in weights.items()}, folder / "open_clip_model.safetensors"
    )
    err = _fails_in_one_line(
        _clip_run(fixture_dir, tmp_path, "--model", f"local-dir:{folder}"), capsys
    )
    assert str(folder) in err and expected in err


def test_a_local_dir_with_text_for_weights_is_one_line(
    fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "open_clip_config.json").write_text(json.dumps(_model_cfg()))
    (folder / "open_clip_pytorch_model.bin").write_text("root:x:0:0:root:/root:/bin/bash\n")
    err = _fails_in_one_line(
        _clip_run(fixture_dir, tmp_path, "--model", f"local-dir:{folder}"), capsys
    )
    assert f"{folder / 'open_clip_pytorch_model.bin'}: not a weights file; " in err
    assert "found text" in err and "root:x" not in err  # what the file is like, not its text


# --- hf and dense model folders ----------------------------------------------------------------


@pytest.fixture(scope="module")
def bert(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> Path:
    """A tiny random bert folder that both the hf and the dense backends load."""
    pytest.importorskip("transformers")
    import tiny_hf

    return tiny_hf.text_model(tmp_path_factory.mktemp("bert") / "bert", "bert", demo_texts)


def _config_with(**changes: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **changes}))

    return edit


FOLDERS: dict[str, tuple[Callable[[Path], object], str]] = {
    "corrupt safetensors": (
        lambda f: (f / "model.safetensors").write_bytes(b"\x10" + b"\0" * 7 + b"{not json"),
        "corrupt or truncated safetensors file",
    ),
    "empty safetensors": (
        lambda f: (f / "model.safetensors").write_bytes(b""),
        "corrupt or truncated safetensors file",
    ),
    "truncated safetensors": (
        lambda f: _truncated(f / "model.safetensors"),
        "corrupt or truncated safetensors file",
    ),
    "config string": (  # refused by the gate, which reads every configuration whole
        lambda f: (f / "config.json").write_text('"bert"'),
        "config.json: wrong JSON shape at $; expected an object; found the string 'bert'",
    ),
    "config field type": (
        _config_with(hidden_size="16"),
        "cannot load the {what} model; found StrictDataclassFieldValidationError",
    ),
}
BACKENDS = {"hf": "transformers", "dense": "sentence-transformers"}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", FOLDERS)
def test_a_bad_model_folder_is_one_line(
    kind: str, backend: str, bert: Path, fixture_dir: Path, tmp_path: Path, capsys
):
    folder = shutil.copytree(bert, tmp_path / "model")
    edit, expected = FOLDERS[kind]
    edit(folder)
    argv = ["run", "--source", str(fixture_dir), "--task", "1", "--retriever", backend]
    argv += ["--model", str(folder), "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path)]
    err = _fails_in_one_line([*argv, "--device", "cpu"], capsys)
    said = expected.format(what=BACKENDS[backend])
    assert f"{folder}: {said}" in err or f"{folder}/{said}" in err
