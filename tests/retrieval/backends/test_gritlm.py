"""The ``grit`` preset against ``gritlm.GritLM`` called as the official ``retrieval_grit`` calls it.

The model is a tiny random transformers Mistral saved with its tokenizer
(``tests/support/tiny_hf.py``), which ``gritlm.GritLM(path, torch_dtype="auto",
mode="embedding")`` loads by path. The reference is gritlm's own ``encode`` with the arguments
of ``retrieval_grit`` (src/retrievers/task1_text.py): documents with
``instruction=instructions['document'], batch_size=1, max_length=2048``, queries with
``instruction=instructions['query'].format(task=domain), batch_size=1, max_length=256``. The
``bright`` texts are transcribed from xlang-ai/BRIGHT ``configs/grit/biology.json``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue.preset_run import resolve
from mmbright_core.retrieval.catalogue.presets import get_preset
from mmbright_core.types import Query

gritlm = pytest.importorskip("gritlm")
pytestmark = [pytest.mark.models]

DOMAIN = "biology"
#: xlang-ai/BRIGHT configs/grit/biology.json, "instructions".
BRIGHT = {
    "query": "<|user|>\nGiven a {task} post, retrieve relevant passages that help answer the "
    "post\n<|embed|>\n",
    "document": "<|embed|>\n",
}
OFFICIAL = {"query": "", "document": ""}  # the runner's default: no configs/grit/default.json


@pytest.fixture(scope="module")
def grit(tiny_hf):
    """The tiny Mistral loaded by gritlm as the official code loads GritLM-7B."""
    return gritlm.GritLM(
        str(tiny_hf["mistral"]), torch_dtype="auto", mode="embedding", device="cpu"
    )


def _official(grit, queries, documents, instructions):
    # retrieval_grit: the query instruction is formatted with the domain, the document one not.
    query_instruction = instructions["query"].format(task=DOMAIN)
    docs = grit.encode(
        documents, instruction=instructions["document"], batch_size=1, max_length=2048
    )
    return grit.encode(queries, instruction=query_instruction, batch_size=1, max_length=256), docs


def _preset_vectors(folder, data, instructions, tmp_path):
    chosen = resolve(get_preset("grit"), 1, instructions, trust_remote_code=True)
    retriever = get_retriever(
        chosen.retriever,
        **{**chosen.options, "model": str(folder), "device": "cpu"},
        cache_dir=str(tmp_path),
    )
    with retriever.bound(data):
        return retriever.encode_queries(data.queries, None), retriever.corpus_vectors(data, None)


@pytest.mark.parametrize(("name", "texts"), [("official", OFFICIAL), ("bright", BRIGHT)])
def test_grit_vectors_are_gritlms_as_the_official_code_calls_it(
    grit, tiny_hf, tmp_path, name, texts
):
    data = open_source("demo").task(1, DOMAIN)
    # One query past 256 tokens: the official query cut must apply, not the document one.
    long = Query("long", DOMAIN, ("cells divide " * 200).strip())
    data = dataclasses.replace(data, queries=(*data.queries, long))
    queries, docs = _preset_vectors(tiny_hf["mistral"], data, name, tmp_path)
    expected_queries, expected_docs = _official(
        grit, [q.text for q in data.queries], [d.text for d in data.corpus], texts
    )
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)
    np.testing.assert_allclose(docs, expected_docs, atol=1e-5)


def test_the_instruction_and_the_query_cut_change_the_vectors(grit):
    # The comparison above can tell a missing instruction or the document cut on queries.
    long = ("cells divide " * 200).strip()
    with_instruction = grit.encode([long], instruction=BRIGHT["document"], max_length=256)
    assert not np.allclose(with_instruction, grit.encode([long], max_length=256), atol=1e-5)
    assert not np.allclose(
        grit.encode([long], max_length=256), grit.encode([long], max_length=2048), atol=1e-5
    )


def test_the_backend_runs_only_with_the_opt_in_to_hub_code(tiny_hf):
    with pytest.raises(InputError, match="--trust-remote-code"):
        get_retriever("gritlm", model=str(tiny_hf["mistral"]))
