"""The hf text presets against the official recipes, on tiny random models of their families.

Each preset runs through ``mmbright run --model-preset`` on the demo with its model replaced by
a tiny random transformers model of the same family (``--model``, recorded in ``config.json``).
The reference is computed here with transformers alone, as the official functions of
``src/retrievers/task1_text.py`` compute it (each transcribed below, one text at a time): the
texts they build, their pooling, their normalisation, the scale of the scores (x 100 for
e5/sf/qwen/qwen2, the plain cosine for the others); the instruction
texts are transcribed from the official code and from xlang-ai/BRIGHT's
``configs/<model>/biology.json``, not read from the catalogue, so a preset that loses an
instruction, pools otherwise or builds another text fails here.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from tiny_hf import top_scores

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue.preset_run import resolve
from mmbright_core.retrieval.catalogue.presets import get_preset

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.models]

DOMAIN = "biology"
#: The tiny model's positions: the preset's truncation is set to it (OVERRIDES).
LENGTH = 64
#: The tiny models are float32: the only settings changed from the preset's, with the length.
OVERRIDES = ["--option", f"max_length={LENGTH}", "--option", "dtype=float32"]
#: BRIGHT configs/{e5,sf,qwen,qwen2}/biology.json "instructions" "query" ({task}: the domain).
BRIGHT_INSTRUCT = (
    "Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: "
)
#: The tiny model of each preset's family (tests/support/tiny_hf.py).
FAMILIES = {
    "e5": "mistral",
    "sf": "mistral",
    "qwen": "qwen2",
    "qwen2": "qwen2",
    "contriever": "bert",
    "rader": "qwen2",
    "diver-retriever": "qwen2",
}


def last_token_pool(last_hidden_states, attention_mask):
    # src/utils.py last_token_pool (imported by task1_text.py), as written there.
    left_padding = attention_mask[:, -1].sum() == attention_mask.shape[0]
    if left_padding:
        return last_hidden_states[:, -1]
    sequence_lengths = attention_mask.sum(dim=1) - 1
    batch_size = last_hidden_states.shape[0]
    return last_hidden_states[
        torch.arange(batch_size, device=last_hidden_states.device), sequence_lengths
    ]


def mean_pooling(token_embeddings, mask):
    # retrieval_contriever's mean_pooling.
    token_embeddings = token_embeddings.masked_fill(~mask[..., None].bool(), 0.0)
    return token_embeddings.sum(dim=1) / mask.sum(dim=1)[..., None]


def _last_state(last_hidden_state, attention_mask):
    # retrieval_rader: outputs.last_hidden_state[:, -1, :] (one text per call, no padding).
    return last_hidden_state[:, -1, :]


def _encode(folder, texts, pool, dtype=None, **tokenize):
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, torch_dtype=dtype).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            inputs = tokenizer([text], return_tensors="pt", **tokenize)
            out.append(pool(model(**inputs).last_hidden_state, inputs["attention_mask"]).float())
    return torch.nn.functional.normalize(torch.cat(out), p=2, dim=1).numpy()


def _sf_qwen_e5(folder, queries, docs, instruction, dtype=None, length=LENGTH):
    # retrieval_sf_qwen_e5: add_instruct_concatenate on queries only, the same max_length for
    # both, last_token_pool, .float(), F.normalize, scores (query_emb @ doc_emb.T) * 100.
    # Its batches: kwargs.get('encode_batch_size', 1), which src/eval_runner.py
    # EvaluationRunner._evaluate_domain never passes: one text per tokenizer and model call.
    queries = [instruction.format(task=DOMAIN) + q for q in queries]
    cut = {"max_length": length, "padding": True, "truncation": True}
    return (
        100
        * _encode(folder, queries, last_token_pool, dtype, **cut)
        @ _encode(folder, docs, last_token_pool, dtype, **cut).T
    )


def _contriever(folder, queries, docs, instruction):
    # retrieval_contriever: no instruction, the tokenizer's own truncation, mean_pooling,
    # normalised, sklearn cosine_similarity: the plain cosine.
    cut = {"padding": True, "truncation": True}
    return (
        _encode(folder, queries, mean_pooling, **cut) @ _encode(folder, docs, mean_pooling, **cut).T
    )


def _rader(folder, queries, docs, instruction):
    # retrieval_rader: f"query: {text}{eos}" untruncated, f"document: {text[:8192]}{eos}"
    # truncated at the tokenizer's length, last_hidden_state[:, -1, :], normalised.
    eos = transformers.AutoTokenizer.from_pretrained(folder).eos_token
    queries = [f"query: {instruction.format(task=DOMAIN)}{q}{eos}" for q in queries]
    docs = [f"document: {d[:8192]}{eos}" for d in docs]
    # The plain cosine.
    return (
        _encode(folder, queries, _last_state)
        @ _encode(folder, docs, _last_state, padding=True, truncation=True).T
    )


def _diver(folder, queries, docs, instruction):
    # retrieval_qwen3_ft_diver through Qwen3EmbeddingModel's recipe (the transformers twin of
    # its vLLM model in the same file): embed_docs prefixes "Represent this text:{}",
    # embed_queries truncates the raw queries (the Instruct prompt it builds is discarded),
    # last-token pooled, normalised; sklearn cosine_similarity.
    cut = {"max_length": LENGTH, "padding": True, "truncation": True}
    docs = [f"Represent this text:{d}" for d in docs]
    return (
        _encode(folder, queries, last_token_pool, **cut)
        @ _encode(folder, docs, last_token_pool, **cut).T
    )


#: (preset, instruction set) -> its official recipe and the query instruction it takes.
CASES = {
    ("e5", "official"): (_sf_qwen_e5, ""),
    ("e5", "bright"): (_sf_qwen_e5, BRIGHT_INSTRUCT),
    ("sf", "official"): (_sf_qwen_e5, ""),
    ("sf", "bright"): (_sf_qwen_e5, BRIGHT_INSTRUCT),
    ("qwen", "bright"): (_sf_qwen_e5, BRIGHT_INSTRUCT),
    ("qwen2", "official"): (_sf_qwen_e5, ""),
    ("qwen2", "bright"): (_sf_qwen_e5, BRIGHT_INSTRUCT),
    ("contriever", "official"): (_contriever, ""),
    ("rader", "official"): (_rader, ""),
    ("diver-retriever", "official"): (_diver, ""),
}


def _run(name, instructions, folder, tmp_path, overrides=OVERRIDES):
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--k", "10"]
    args += ["--model-preset", name, "--instructions", instructions, "--model", str(folder)]
    args += [*overrides, "--device", "cpu", "--trust-remote-code"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]) == 0
    (run_file,) = tmp_path.glob(f"*/{DOMAIN}/scores.json")
    (config_file,) = tmp_path.glob("*/config.json")
    return json.loads(run_file.read_text()), config_file.read_text()


def _matches(run, scores, data, tolerance):
    expected = top_scores(scores, data)
    return all(
        set(run[q]) == set(s) and run[q] == pytest.approx(s, abs=tolerance)
        for q, s in expected.items()
    )


@pytest.mark.parametrize(("name", "instructions"), sorted(CASES))
def test_hf_text_preset_scores_are_the_official_recipe(tiny_hf, tmp_path, name, instructions):
    folder = tiny_hf[FAMILIES[name]]
    recipe, instruction = CASES[name, instructions]
    data = open_source("demo").task(1, DOMAIN)
    queries, docs = [q.text for q in data.queries], [d.text for d in data.corpus]
    run, text = _run(name, instructions, folder, tmp_path)
    # The cosines agree within 1e-5: abs 1e-3 on the x100 scale.
    tolerance = 1e-3 if recipe is _sf_qwen_e5 else 1e-5
    assert _matches(run, recipe(folder, queries, docs, instruction), data, tolerance)
    if instruction:  # the run tells BRIGHT's instruction from none
        assert not _matches(run, recipe(folder, queries, docs, ""), data, tolerance)
    config = json.loads(text)["config"]
    assert (config["preset"], config["instructions"]) == (name, instructions)
    assert config["fusion"] == get_preset(name).fusion
    # Wherever the configuration nests the embedder's settings, the override and recipe are in it.
    assert json.dumps(str(folder)) in text and f'"pooling": "{get_preset(name).pooling}"' in text


def test_the_recipes_tell_the_poolings_apart(tiny_hf):
    # The comparison above fails a preset that pools the wrong way: the poolings differ here.
    folder = tiny_hf["mistral"]
    texts = [q.text for q in open_source("demo").task(1, DOMAIN).queries]
    cut = {"max_length": LENGTH, "truncation": True}
    last = _encode(folder, texts, last_token_pool, **cut)
    assert not np.allclose(last, _encode(folder, texts, mean_pooling, **cut), atol=1e-3)


@pytest.fixture(scope="module")
def left_padded(tiny_hf, tmp_path_factory, demo_texts):
    """The tiny mistral and qwen2 models, both padding on the left."""
    import tiny_hf as build

    mistral = build.text_model(
        tmp_path_factory.mktemp("left") / "mistral", "mistral", demo_texts, padding_side="left"
    )
    return {"mistral": mistral, "qwen2": tiny_hf["qwen2"]}


@pytest.mark.parametrize("name", ["e5", "sf", "qwen", "qwen2"])
def test_bfloat16_vectors_are_the_official_runners_one_text_batches(left_padded, tmp_path, name):
    # In the preset's bfloat16 a padded batch moves a text's vector in its last bits; the
    # official runner encodes one text per call (_sf_qwen_e5 above), and so must the preset.
    # Cut at 512 tokens the demo's texts differ in length, so a batch of several is padded.
    folder = left_padded[FAMILIES[name]]
    data = open_source("demo").task(1, DOMAIN)
    queries, docs = [q.text for q in data.queries], [d.text for d in data.corpus]
    official = _sf_qwen_e5(folder, queries, docs, BRIGHT_INSTRUCT, torch.bfloat16, 512)
    run, text = _run(name, "bright", folder, tmp_path, ["--option", "max_length=512"])
    # The same vectors: the scores agree to float32 rounding (x 100).
    assert _matches(run, official, data, 1e-4)
    config = json.loads(text)["config"]
    assert config["options"]["batch_size"] == 1 and config["options"]["dtype"] == "bfloat16"


def _contriever_batches(folder, texts, dtype):
    # retrieval_contriever's batches: the runner's batch_size=8, eight consecutive texts per
    # tokenizer and model call, padded to the longest of them (padding=True, truncation=True),
    # mean_pooling (the vectors before the function normalises them).
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, torch_dtype=dtype).eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), 8):
            inputs = tokenizer(
                texts[start : start + 8], padding=True, truncation=True, return_tensors="pt"
            )
            states = model(**inputs).last_hidden_state
            out.append(mean_pooling(states, inputs["attention_mask"]).float())
    return torch.cat(out).numpy()


def test_contrievers_vectors_are_the_official_batches_of_8(tiny_hf, tmp_path):
    # A padded batch moves a text's vector by rounding (float32, the preset's dtype), so the
    # preset's vectors, as its run encodes them, are the official function's bit for bit only
    # where its batches are: eight consecutive texts at a time.
    folder = tiny_hf["bert"]
    data = open_source("demo").task(1, DOMAIN)
    resolved = resolve(get_preset("contriever"), 1, "official")
    # The tiny model's truncation, which the official tokenizer call reads from the model.
    options = {**resolved.options, "model": str(folder), "device": "cpu", "max_length": LENGTH}
    retriever = get_retriever(resolved.retriever, **options, cache_dir=str(tmp_path / "c"))
    encoded: dict[str, np.ndarray] = {}
    encode = retriever.encode_texts

    def spy(texts: list[str], role: str = "document") -> np.ndarray:
        encoded[role] = encode(texts, role)
        return encoded[role]

    retriever.encode_texts = spy
    retriever.retrieve(data, None, 10)
    queries, docs = [q.text for q in data.queries], [d.text for d in data.corpus]
    for role, texts in (("query", queries), ("document", docs)):
        official = _contriever_batches(folder, texts, torch.float32)
        assert np.array_equal(encoded[role], official), role
    # The batches show: one text per call gives other vectors.
    alone = [_contriever_batches(folder, [text], torch.float32) for text in docs]
    assert not np.array_equal(encoded["document"], np.concatenate(alone))
    assert '"batch_size": 8' in json.dumps(retriever.settings())
