"""Shared fixtures: the tiny MM-BRIGHT copy built once per test session."""

from __future__ import annotations

import importlib.abc
import json
import os
import sys
from pathlib import Path

import pytest
from fixture_dataset import build_fixture

from mmbright_core.data.sources import Source, open_source


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the fixture dataset in the published layout."""
    return build_fixture(tmp_path_factory.mktemp("mmbright-fixture"))


@pytest.fixture(scope="module")
def source(fixture_dir: Path) -> Source:
    """The fixture dataset opened as a folder source (one per test module, with its caches)."""
    return open_source(str(fixture_dir))


@pytest.fixture(autouse=True)
def _private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    """Keep every cache a test writes (BM25 indexes, embeddings, OCR) out of the home folder."""
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _private_notes(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    """Keep the notes database a test opens (the inspector reads it) out of the home folder."""
    if "MMBRIGHT_NOTES" not in os.environ:
        monkeypatch.setenv("MMBRIGHT_NOTES", str(tmp_path_factory.getbasetemp() / "notes.sqlite3"))


class _NoOcrEngine(importlib.abc.MetaPathFinder):
    """Refuses to import the OCR engine, as in an install without the ``ocr`` extra."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] == "rapidocr_onnxruntime":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


@pytest.fixture
def no_ocr_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The dashboard's own install (``[app]``): no OCR engine to import, no OCR cache."""
    for name in [m for m in sys.modules if m.split(".")[0] == "rapidocr_onnxruntime"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoOcrEngine(), *sys.meta_path])
    monkeypatch.setenv("MMBRIGHT_CACHE", str(tmp_path / "empty-cache"))


TINY_CLIP = "mmbright-test-tiny"
TINY_CLIP_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The name of a tiny open_clip model (random weights) registered for this session."""
    open_clip = pytest.importorskip("open_clip")
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("clip-config") / f"{TINY_CLIP}.json"
    path.write_text(json.dumps(TINY_CLIP_CONFIG))
    open_clip.add_model_config(path)
    return TINY_CLIP
