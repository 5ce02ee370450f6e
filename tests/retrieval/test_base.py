from __future__ import annotations

import json

import pytest

from mmbright_core.errors import InputError, MissingDependencyError, UnknownNameError, require
from mmbright_core.retrieval import RunConfig, available_retrievers, get_retriever
from mmbright_core.retrieval.base import check_k, passage_id
from mmbright_core.retrieval.lexical.bm25 import BM25Retriever
from mmbright_core.retrieval.registry import register_retriever
from mmbright_core.types import TaskData


def test_every_builtin_name_is_listed():
    assert {"bm25", "dense", "clip", "ocr-bm25", "ocr-dense", "random"} <= set(
        available_retrievers()
    )


def test_unknown_name_suggests_close_match():
    with pytest.raises(UnknownNameError, match="did you mean 'bm25'"):
        get_retriever("bm52")


def test_unknown_option_is_an_input_error_naming_accepted_ones():
    with pytest.raises(InputError, match=r"does not take option.*pretrained") as err:
        get_retriever("bm25", pretrained="openai")
    assert "k1" in str(err.value)


def test_none_options_keep_defaults():
    retriever = get_retriever("bm25", model=None, k1=None)
    assert isinstance(retriever, BM25Retriever)
    assert retriever.k1 == 0.9 and retriever.b == 0.4


def test_unsupported_task_raises_input_error():
    data = TaskData(3, "d", "paper", (), (), {}, {})
    with pytest.raises(InputError, match="cannot run task 3"):
        get_retriever("bm25").retrieve(data, None, 10)


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_invalid_k(k):
    with pytest.raises(InputError, match="cut-off"):
        check_k(k)


def test_missing_module_names_the_extra():
    with pytest.raises(MissingDependencyError, match=r"pip install 'mmbright\[clip\]'"):
        require("mmbright_no_such_module", "the clip retriever", "clip")


def test_register_retriever_adds_a_name():
    register_retriever("bm25-strict", lambda k1=1.2: BM25Retriever(k1=k1))
    assert "bm25-strict" in available_retrievers()
    assert get_retriever("bm25-strict", k1=2.0).k1 == 2.0


def test_passage_id_of_pair_and_passage():
    assert passage_id("bio/x_1_0.txt|||bio/bio_ab_0001/image_1.png") == "bio/x_1_0.txt"
    assert passage_id("bio/x_1_0.txt") == "bio/x_1_0.txt"


def test_run_config_records_settings_and_round_trips_through_json():
    config = RunConfig.build(BM25Retriever(k1=1.2), task=1, protocol="paper", source="demo", k=100)
    assert config.retriever == "bm25" and config.model == "bm25"
    assert dict(config.options)["k1"] == 1.2
    again = RunConfig.from_dict(json.loads(config.to_json()))
    assert again == config
    assert again != RunConfig.build(BM25Retriever(), task=1, protocol="paper", source="demo", k=100)


def test_run_config_rejects_unknown_fields():
    with pytest.raises(InputError, match="not a run configuration"):
        RunConfig.from_dict({"retriever": "bm25", "colour": "red"})
