"""The sentence-transformers presets against the official recipes, on tiny random stacks.

``mmbright run --model-preset`` runs sbert, bge, nomic, inst-l and inst-xl on the demo with the
model replaced by a tiny random sentence-transformers folder (``tests/support/tiny_st.py``; bge: the
tiny BERT of ``tests/support/tiny_hf.py`` under sentence-transformers' own pooling). The
reference is sentence-transformers called as ``src/retrievers/task1_text.py`` calls it, with
the instruction texts transcribed from xlang-ai/BRIGHT's ``configs/<model>/biology.json`` (not
read from the catalogue):

- ``retrieval_sbert_bge``: bge's queries get ``add_instruct_concatenate`` (the instruction
  glued before the text), sbert's nothing; ``encode(..., batch_size=8,
  normalize_embeddings=True)``, sklearn's cosine;
- ``retrieval_nomic``: ``encode(..., batch_size=8, normalize_embeddings=True)`` with no
  prefix (the model's hub code is NomicBERT's; the stand-in is the tiny MPNet stack);
- ``retrieval_instructor``: ``set_pooling_include_prompt(False)``, ``max_seq_length = 2048``,
  the instructions as ``prompt=`` (``.format(task=domain)``), normalised.

All of them write the plain cosine (sklearn's ``cosine_similarity`` / the dot product of
normalised vectors, never x 100), and so does the preset's ``scores.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tiny_hf import top_scores
from tiny_st import sentence_model

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue.preset_run import resolve
from mmbright_core.retrieval.catalogue.presets import get_preset

st = pytest.importorskip("sentence_transformers")
pytestmark = [pytest.mark.models]

DOMAIN = "biology"
#: BRIGHT configs/bge/biology.json "instructions" "query".
BGE_QUERY = "Represent this {task} post for searching relevant passages: "
#: BRIGHT configs/inst-l/biology.json and inst-xl/biology.json "instructions".
INSTRUCTOR = {
    "query": "Represent the {task} post for retrieving relevant paragraphs: ",
    "document": "Represent the {task} paragraph for retrieval: ",
}
NONE = {"query": "", "document": ""}


@pytest.fixture(scope="module")
def stacks(tmp_path_factory, demo_texts, tiny_hf) -> dict[str, Path]:
    """The tiny folder each preset runs on."""
    root = tmp_path_factory.mktemp("tiny-dense")
    t5 = sentence_model(root / "t5", "t5", demo_texts)
    bert = root / "bert-st"
    st.SentenceTransformer(str(tiny_hf["bert"]), device="cpu").save(str(bert))
    mpnet = sentence_model(root / "mpnet", "mpnet", demo_texts)
    return {"sbert": mpnet, "nomic": mpnet, "bge": bert} | {
        "inst-l": t5,
        "inst-xl": t5,
    }


def _sbert_bge(folder, queries, docs, name, instruction):
    # retrieval_sbert_bge: only bge's queries take the instruction; retrieval_nomic encodes
    # as sbert does (batch_size 8, normalised, no prefix). Returns the query and passage
    # vectors.
    model = st.SentenceTransformer(str(folder), device="cpu")
    if name == "bge":
        queries = [instruction["query"].format(task=DOMAIN) + q for q in queries]
    encode = {"batch_size": 8, "normalize_embeddings": True}
    return model.encode(queries, **encode), model.encode(docs, **encode)


def _instructor(folder, queries, docs, name, instruction):
    # retrieval_instructor. Returns the query and passage vectors.
    model = st.SentenceTransformer(str(folder), device="cpu")
    model.set_pooling_include_prompt(False)
    model.max_seq_length = 2048
    doc_prompt = instruction["document"].format(task=DOMAIN)
    query_prompt = instruction["query"].format(task=DOMAIN)
    doc_embs = model.encode(docs, batch_size=8, normalize_embeddings=True, prompt=doc_prompt)
    query_embs = model.encode(queries, batch_size=8, prompt=query_prompt, normalize_embeddings=True)
    return query_embs, doc_embs


def _scores(vectors):
    queries, docs = vectors
    return queries @ docs.T


#: (preset, instruction set) -> the official recipe and the texts it takes.
CASES = {
    ("sbert", "official"): (_sbert_bge, NONE),
    ("sbert", "bright"): (_sbert_bge, NONE),
    ("bge", "official"): (_sbert_bge, NONE),
    ("bge", "bright"): (_sbert_bge, {"query": BGE_QUERY, "document": ""}),
    ("nomic", "official"): (_sbert_bge, NONE),
    ("inst-l", "official"): (_instructor, NONE),
    ("inst-l", "bright"): (_instructor, INSTRUCTOR),
    ("inst-xl", "bright"): (_instructor, INSTRUCTOR),
}


def _run(name, instructions, folder, tmp_path):
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--k", "10"]
    args += ["--model-preset", name, "--instructions", instructions, "--model", str(folder)]
    args += [
        "--device",
        "cpu",
        "--trust-remote-code",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path),
    ]
    assert main(args) == 0
    (run_file,) = tmp_path.glob(f"*/{DOMAIN}/scores.json")
    return json.loads(run_file.read_text())


def _matches(run, scores, data):
    return all(
        set(run[q]) == set(s) and run[q] == pytest.approx(s, abs=1e-5)
        for q, s in top_scores(scores, data).items()
    )


@pytest.mark.parametrize(("name", "instructions"), sorted(CASES))
def test_dense_preset_scores_are_the_official_recipe(stacks, tmp_path, name, instructions):
    recipe, texts = CASES[name, instructions]
    data = open_source("demo").task(1, DOMAIN)
    queries, docs = [q.text for q in data.queries], [d.text for d in data.corpus]
    run = _run(name, instructions, stacks[name], tmp_path)
    # The official code writes plain cosine for these models, so scores.json does too.
    assert _matches(run, _scores(recipe(stacks[name], queries, docs, name, texts)), data)
    if texts != NONE:  # the run tells BRIGHT's instructions from none
        assert not _matches(run, _scores(recipe(stacks[name], queries, docs, name, NONE)), data)


@pytest.mark.parametrize(("name", "instructions"), sorted(CASES))
def test_vectors_are_those_of_the_official_calls_batches_of_8(stacks, tmp_path, name, instructions):
    # The official functions hand sentence-transformers the whole corpus in one
    # encode(texts, batch_size=8) call (and the queries in another): it sorts them by length
    # and pads each batch of 8 to its longest, which moves a vector by rounding. The preset's
    # vectors, as its run encodes them, are those bit for bit; the demo's 112 passages span
    # several of the backend's default calls, whose batches would be others.
    recipe, texts = CASES[name, instructions]
    data = open_source("demo").task(1, DOMAIN)
    resolved = resolve(get_preset(name), 1, instructions, trust_remote_code=True)
    options = {**resolved.options, "model": str(stacks[name]), "device": "cpu"}
    retriever = get_retriever(resolved.retriever, **options, cache_dir=str(tmp_path / "c"))
    encoded: dict[str, np.ndarray] = {}
    encode = retriever.encode

    def spy(texts_: list[str], prefix: str, role: str = "document") -> np.ndarray:
        encoded[role] = encode(texts_, prefix, role)
        return encoded[role]

    retriever.encode = spy
    retriever.retrieve(data, None, 10)
    queries, docs = [q.text for q in data.queries], [d.text for d in data.corpus]
    official_queries, official_docs = recipe(stacks[name], queries, docs, name, texts)
    assert np.array_equal(encoded["document"], official_docs)
    assert np.array_equal(encoded["query"], official_queries)
