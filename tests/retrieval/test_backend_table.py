"""One record per built-in backend, and every consumer reading it
(retrieval/backend_table.py)."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import mmbright_core
from mmbright_core.cli import main
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.backend_table import (
    BACKENDS,
    PRESET_BACKENDS,
    Backend,
    canonical_name,
)
from mmbright_core.retrieval.catalogue.presets import load_catalogue
from mmbright_core.retrieval.registry import (
    NOT_REBUILDABLE,
    available_retrievers,
    declared_tasks,
    rebuild_recipe,
)
from mmbright_core.retrieval.runner.engines import DISTRIBUTED
from mmbright_core.ui.common.confine import Confinement
from mmbright_core.ui.run import run_choice

PACKAGE = Path(mmbright_core.__file__).parent


@pytest.mark.parametrize("name", sorted(BACKENDS))
def test_a_records_factory_and_recipe_are_where_it_says(name):
    backend = BACKENDS[name]
    module = importlib.import_module(backend.module)
    assert callable(getattr(module, backend.factory))
    if backend.rebuild is not None:
        assert callable(getattr(module, backend.rebuild))
    assert (backend.rebuild is None) == (backend.not_rebuildable is not None)
    takes = inspect.signature(getattr(module, backend.factory)).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in takes.values()):
        assert ("model" in takes) == backend.takes_model
        assert set(backend.fields) - {"checkpoint"} <= set(takes)  # open_clip's file


def test_the_registry_the_catalogue_and_the_run_page_read_the_records():
    assert set(BACKENDS) <= set(available_retrievers())
    assert {
        n: b.not_rebuildable for n, b in BACKENDS.items() if b.not_rebuildable
    } == NOT_REBUILDABLE
    assert {p.backend for p in load_catalogue()} <= set(PRESET_BACKENDS)
    assert {"api"} == run_choice.COMMAND_LINE_ONLY
    assert {"hub-code", "gritlm"} == run_choice.PRESETS_ONLY
    assert dict(run_choice.RETRIEVER_FIELDS) == {
        n: b.fields for n, b in BACKENDS.items() if b.fields
    }


def test_the_hub_code_interfaces_are_the_backends_calls():
    from mmbright_core.retrieval.backends.hub_code import interfaces as remote

    assert set(BACKENDS["hub-code"].interfaces) == set(remote.INTERFACES)
    assert {p.interface for p in load_catalogue() if p.interface} <= set(remote.INTERFACES)


def test_the_clip_default_is_the_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from mmbright_core.retrieval.backends.clip import ClipRetriever

    default = inspect.signature(ClipRetriever).parameters["model"].default
    # The Run page checks a tag typed with a blank Model field against the record's default.
    asked: list[tuple[str, str]] = []

    def known_tags(backend: Backend, model: str) -> list[str]:
        asked.append((backend.name, model))
        return ["openai"]

    monkeypatch.setattr(run_choice, "_known_tags", known_tags)
    confined = Confinement(tmp_path)
    assert run_choice.retriever_options("clip", {"pretrained": "openai"}, confined)
    assert asked == [("clip", default)]
    assert default == BACKENDS["clip"].default_model


def test_the_engines_the_catalogue_page_and_the_run_page_read_the_records(
    monkeypatch: pytest.MonkeyPatch,
):
    assert DISTRIBUTED == ("dense", "clip")
    assert tuple(n for n, b in BACKENDS.items() if b.distributed) == DISTRIBUTED
    for name, backend in BACKENDS.items():  # a pretrained field takes the tags it lists
        assert ("pretrained" in backend.fields) == (backend.pretrained_tags is not None), name
        if backend.pretrained_tags is not None:
            module = importlib.import_module(backend.module)
            assert callable(getattr(module, backend.pretrained_tags))
    for preset in load_catalogue():  # docs/models.md says how each runs hub code
        backend = BACKENDS[preset.backend]
        hub = backend.interfaces[preset.interface] if preset.interface else backend.hub_code
        assert (preset.offline == "hub-code") <= (hub is not None), preset.name
    # A preset of the sentence-transformers interface needs that package beside its backend's.
    monkeypatch.setattr(run_choice, "_findable", lambda module: module != "sentence_transformers")
    assert run_choice.missing_extras("hub-code", "st-dicts") == ("text",)
    assert run_choice.missing_extras("hub-code", "encode-text-image") == ()
    assert run_choice.missing_extras("dense") == ("text",)


def test_the_model_flags_help_names_every_backend_that_runs_a_model(capsys):
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = "".join(capsys.readouterr().out.split())  # argparse wraps lines at hyphens too
    named = ",".join(n for n, b in BACKENDS.items() if b.takes_model)
    assert f"modelnameorlocalpath({named})" in text
    assert "bm25" not in named


def test_the_tasks_a_backend_runs_are_read_from_the_task_table():
    # The facts of docs/protocol.md: text retrievers rank the tasks whose documents carry text,
    # OCR adds words where queries carry images, an endpoint embeds passages alone.
    assert BACKENDS["bm25"].tasks == BACKENDS["dense"].tasks == {1, 2, 4}
    assert BACKENDS["ocr-bm25"].tasks == BACKENDS["ocr-dense"].tasks == {2, 4}
    assert BACKENDS["api"].tasks == {1, 2}
    assert BACKENDS["clip"].tasks == BACKENDS["random"].tasks == {1, 2, 3, 4}
    for name in ("bm25", "random"):
        assert get_retriever(name).tasks == BACKENDS[name].tasks
    for name in ("dense", "clip", "api"):
        backend = BACKENDS[name]
        made = getattr(importlib.import_module(backend.module), backend.factory)
        assert made.tasks == backend.tasks


def test_no_retriever_spells_its_tasks():
    spelled = re.compile(r"frozenset\(\{[1-4](, [1-4])*\}\)")
    found = [
        str(path.relative_to(PACKAGE))
        for part in ("retrieval", "rerank")
        for path in (PACKAGE / part).rglob("*.py")
        if spelled.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_hub_code_backend_answers_to_its_former_name():
    # ``remote`` named the hub-code backend while the remote endpoint is ``api``: runs,
    # scripts and preset files that name it keep working.
    assert canonical_name("remote") == "hub-code" == canonical_name("hub-code")
    assert "remote" not in BACKENDS and "remote" not in available_retrievers()
    factory = BACKENDS["hub-code"].factory
    assert declared_tasks("remote") == declared_tasks("hub-code")
    assert rebuild_recipe("remote") is None is rebuild_recipe("hub-code")
    assert factory == "hub_code_retriever"


@pytest.mark.parametrize(
    ("option", "found"),
    [
        ("k1=abc", "option k1 is not valid; expected a finite number; found 'abc'"),
        ("k1=NaN", "option k1 is not valid; expected a finite number; found nan"),
        ("b=true", "option b is not valid; expected a finite number; found True"),
    ],
)
def test_an_option_that_is_not_the_number_a_backend_takes_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, found: str
) -> None:
    # k1=abc reached BM25 as a text: a TypeError traceback ('<' between str and int).
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis", "--retriever", "bm25"]
    assert main([*args, "--option", option, "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"mmbright run: error: {found}\n"
    assert not (tmp_path / "o").exists()
