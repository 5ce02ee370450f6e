"""Shared fixtures: the tiny MM-BRIGHT copy built once per test session."""

from __future__ import annotations

import importlib.abc
import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import isolation
import openai_server
import pytest
import write_audit
from fixture_dataset import build_fixture
from tiny_clip import TINY_CLIP, TINY_CLIP_CONFIG

from mmbright_core.data.sources import Source, open_source

_TEST_HOME = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the fixture dataset in the published layout."""
    return build_fixture(tmp_path_factory.mktemp("mmbright-fixture"))


@pytest.fixture(scope="module")
def source(fixture_dir: Path) -> Source:
    """The fixture dataset opened as a folder source (one per test module, with its caches)."""
    return open_source(str(fixture_dir))


@pytest.fixture
def chat_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[openai_server.OpenAIServer]:
    """The loopback OpenAI-compatible server, its key in ``OPENAI_API_KEY``."""
    monkeypatch.setenv("OPENAI_API_KEY", openai_server.KEY)
    with openai_server.serving() as running:
        yield running


def pytest_configure(config: pytest.Config) -> None:
    """Run the whole suite in a temporary home (see ``tests/support/isolation.py``), and
    record any write of its own into the real home's mmbright folders."""
    home = config.stash[_TEST_HOME] = isolation.redirect()
    write_audit.install(isolation.watched(isolation.real_home()), _write_log(home))
    write_audit.enable_in_subprocesses(home / "write-audit")


def _write_log(home: Path) -> Path:
    return home / "writes-into-the-real-home.log"


# The suites kept apart by folder carry their folder's marker, so `-m "not robust"` and a path
# select the same tests.
_FOLDER_MARKERS = ("browser", "scale", "robust")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/<suite>/`` with the suite's marker."""
    here = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(here).parts[0] if item.path.is_relative_to(here) else ""
        if folder in _FOLDER_MARKERS:
            item.add_marker(folder)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if it wrote anything under the real home's mmbright folders.

    Only the suite's own writes count: another process (the user's dashboard) may write
    there meanwhile (``tests/support/write_audit.py``).
    """
    home = session.config.stash[_TEST_HOME]
    written = write_audit.recorded(_write_log(home))
    if written:
        print(f"\nthe test run wrote into the user's home: {written[:5]}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def test_home(pytestconfig: pytest.Config) -> Path:
    """The temporary home the whole run uses instead of the user's."""
    return pytestconfig.stash[_TEST_HOME]


@pytest.fixture(scope="session")
def real_home_writes(pytestconfig: pytest.Config) -> Path:
    """The log of the suite's writes into the real home's mmbright folders."""
    return _write_log(pytestconfig.stash[_TEST_HOME])


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


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The name of a tiny open_clip model (random weights) registered for this session."""
    open_clip = pytest.importorskip("open_clip")
    pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("clip-config") / f"{TINY_CLIP}.json"
    path.write_text(json.dumps(TINY_CLIP_CONFIG))
    open_clip.add_model_config(path)
    return TINY_CLIP


@pytest.fixture(scope="session")
def demo_texts() -> list[str]:
    """Queries and passages of two demo domains (the vocabulary of the tiny hf tokenizers)."""
    demo = open_source("demo")
    tasks = [demo.task(task, domain) for task in (1, 2) for domain in ("biology", "gis")]
    return [item.text for data in tasks for item in (*data.queries, *data.corpus)]


@pytest.fixture(scope="session")
def tiny_hf(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> dict[str, Path]:
    """Folders of tiny random transformers models: bert, mistral, qwen2 (left-padded), clip,
    siglip, each with a tokenizer trained on the demo texts (``tests/support/tiny_hf.py``)."""
    pytest.importorskip("transformers")
    import tiny_hf as build

    root = tmp_path_factory.mktemp("tiny-hf")
    models = {
        family: build.text_model(root / family, family, demo_texts)
        for family in ("bert", "mistral")
    }
    models["qwen2"] = build.text_model(root / "qwen2", "qwen2", demo_texts, padding_side="left")
    for family in ("clip", "siglip"):
        models[family] = build.clip_model(root / family, family, demo_texts)
    return models


@pytest.fixture(scope="session")
def tiny_remote(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> dict[str, Path]:
    """Folders of tiny stand-ins of hub-code models (``tests/support/tiny_remote.py``): ``jina``,
    ``bge``, ``gme`` (sentence-transformers), ``nomic-text`` and ``nomic-vision``."""
    pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    import tiny_remote as build

    root = tmp_path_factory.mktemp("tiny-remote")
    text, vision = build.nomic_pair(root / "nomic", demo_texts)
    return {
        "jina": build.hub_model(root / "jina", "TinyJinaClip"),
        "bge": build.hub_model(root / "bge", "TinyBgeVl"),
        "gme": build.gme_folder(root / "gme"),
        "nomic-text": text,
        "nomic-vision": vision,
    }


@pytest.fixture(autouse=True)
def _retrievers_registered_by_a_test_stay_in_it() -> Iterator[None]:
    # register_retriever fills a module-level registry: what one test adds must not be seen by
    # the next (a check of the package's own names would otherwise depend on test order).
    from mmbright_core.retrieval import registry

    kept = dict(registry._EXTRA), dict(registry._EXTRA_REBUILD)
    yield
    for table, before in zip((registry._EXTRA, registry._EXTRA_REBUILD), kept, strict=True):
        table.clear()
        table.update(before)
