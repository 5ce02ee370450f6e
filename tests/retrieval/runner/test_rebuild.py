"""Rebuilding a retriever from a run's configuration: one recipe per registered name."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mmbright_core.analysis.attribution import (
    LexicalAttribution,
    Unavailable,
    explain,
    retriever_from_config,
)
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import available_retrievers, get_retriever, register_retriever
from mmbright_core.retrieval import registry as retriever_registry
from mmbright_core.retrieval.base import RunConfig
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.retrieval.lexical.bm25 import rebuild as rebuild_bm25
from mmbright_core.retrieval.registry import NOT_REBUILDABLE, rebuild_recipe
from mmbright_core.retrieval.runner.folders import conflict
from mmbright_core.retrieval.runner.rebuild import (
    ImportNotAllowed,
    NotRebuildable,
    RebuildContext,
    plugin_module,
    rebuild_retriever,
)
from mmbright_core.retrieval.runner.rewritten import SET_KEY


class NamedBM25(BM25Retriever):
    """BM25 under a name of its own, as a registered retriever would be."""

    name = "bm25-registered"


@pytest.fixture(autouse=True)
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    # Names registered here stay here: the registry is the module's, shared by every test.
    monkeypatch.setattr(retriever_registry, "_EXTRA", dict(retriever_registry._EXTRA))
    monkeypatch.setattr(
        retriever_registry, "_EXTRA_REBUILD", dict(retriever_registry._EXTRA_REBUILD)
    )


def config_of(retriever: Any) -> dict[str, Any]:
    built = RunConfig.build(retriever, task=2, protocol="paper", source="demo", k=10)
    return json.loads(built.to_json())  # through JSON, as config.json stores it


def test_every_registered_name_declares_a_recipe_or_why_it_has_none():
    for name in available_retrievers():
        recipe, reason = rebuild_recipe(name), NOT_REBUILDABLE.get(name)
        assert (recipe is None) != (reason is None), name
        assert recipe is None or callable(recipe), name
        assert reason is None or len(reason) > 20, name


def test_a_retriever_registered_with_its_recipe_is_rebuilt_and_explained():
    register_retriever("bm25-registered", NamedBM25, rebuild=rebuild_bm25)
    original = get_retriever("bm25-registered", k1=1.5)
    rebuilt = retriever_from_config(config_of(original))
    assert isinstance(rebuilt, NamedBM25) and rebuilt.k1 == 1.5
    source = open_source("demo")
    data = source.task(2, "biology")
    query_id, docs = next(iter(original.retrieve(data, source, 3).items()))
    explained = explain(rebuilt, data, source, query_id, list(docs))
    for doc_id, score in docs.items():
        found = explained[doc_id]
        assert isinstance(found, LexicalAttribution)
        assert found.score == pytest.approx(score, rel=1e-6)


def test_registering_again_without_a_recipe_forgets_the_old_one():
    register_retriever("bm25-registered", NamedBM25, rebuild=rebuild_bm25)
    config = config_of(get_retriever("bm25-registered"))
    register_retriever("bm25-registered", NamedBM25)
    assert rebuild_recipe("bm25-registered") is None
    found = retriever_from_config(config)
    assert isinstance(found, Unavailable) and "no recipe" in found.reason


def test_a_builtin_without_a_recipe_is_refused_with_the_same_message():
    config = {**config_of(get_retriever("bm25")), "retriever": "api"}
    with pytest.raises(NotRebuildable, match="no recipe to rebuild retriever 'api'"):
        rebuild_retriever(config)


def test_the_recipe_passes_the_context_it_is_given(tmp_path):
    config = RunConfig.from_dict(config_of(get_retriever("bm25")))
    context = RebuildContext(cache_dir=str(tmp_path))
    options = rebuild_bm25(config, dict(config.options), context)
    assert options["cache_dir"] == str(tmp_path) and options["scoring"] == "gensim"


def _plugin_config(spec: str, options: dict[str, Any]) -> dict[str, Any]:
    config = config_of(BM25Retriever())
    config["retriever"] = spec
    config["options"] = {"plugin_options": options}
    return config


def test_a_config_naming_a_module_function_runs_nothing_without_consent(tmp_path):
    # A folder's config.json names a function of an importable module, with options that
    # would make it run a command: rebuilding it must call nothing.
    marker = tmp_path / "ran"
    config = _plugin_config("subprocess:getoutput", {"cmd": f"touch {marker}"})
    with pytest.raises(NotRebuildable, match=r"'subprocess'.*only when you allow that module"):
        rebuild_retriever(config)
    found = retriever_from_config(config)
    assert isinstance(found, Unavailable) and "subprocess:getoutput" in found.reason
    assert not marker.exists()


def test_a_plugin_module_is_imported_only_when_allowed_and_rewritten_runs_too(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    marker = tmp_path / "imported"
    (tmp_path / "planted_plugin.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('imported')\n"
        "from mmbright_core.retrieval.lexical.bm25 import BM25Retriever\n"
        "def make(**options):\n"
        "    return BM25Retriever()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _plugin_config("planted_plugin:make", {})
    assert plugin_module(config) == "planted_plugin:make"
    assert plugin_module(config_of(BM25Retriever())) is None
    rewritten = {**config, "options": {**config["options"], SET_KEY: {"name": "r"}}}
    for refused in (config, rewritten):
        with pytest.raises(ImportNotAllowed) as err:
            rebuild_retriever(refused, import_modules=["other:make"])
        assert err.value.spec == "planted_plugin:make"
    assert not marker.exists()
    with pytest.raises(NotRebuildable):  # allowed: imported and called, then compared
        rebuild_retriever(config, import_modules=["planted_plugin:make"])
    assert marker.read_text() == "imported"


def test_a_rebuilt_retriever_and_a_stored_folder_name_one_difference_alike(tmp_path):
    # One comparison (io.recorded) for both refusals: the same pair of configurations reads
    # the same whether a rebuilt retriever or an output folder is refused.
    genuine = config_of(BM25Retriever())
    stale = "0" * 16
    recorded = {**genuine, "options": {**genuine["options"], "analyzer_settings": stale}}
    now = genuine["options"]["analyzer_settings"]
    difference = f"options.analyzer_settings (recorded {stale!r}, now {now!r})"
    with pytest.raises(NotRebuildable) as refused:
        rebuild_retriever(recorded)
    assert str(refused.value) == f"the rebuilt 'bm25' differs from the run's: {difference}"
    (tmp_path / "config.json").write_text(json.dumps({"config": recorded}))
    reason = conflict(tmp_path, RunConfig.from_dict(genuine), lambda _: None)
    assert reason == f"holds another configuration (by its config.json): {difference}"


def test_where_the_settings_came_from_is_no_difference_to_a_rebuilt_retriever():
    config = {**config_of(BM25Retriever()), "preset": "bm25-paper", "instructions": "none"}
    assert isinstance(rebuild_retriever(config), BM25Retriever)
