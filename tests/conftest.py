"""Shared fixtures: the tiny MM-BRIGHT copy built once per test session."""

from __future__ import annotations

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
