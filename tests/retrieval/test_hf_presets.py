"""``mmbright run --model-preset`` for the hf text presets, on tiny models of their architecture.

Each preset runs through the CLI on the demo with its model replaced by a tiny random model of
the same family (``--model``, recorded in ``config.json``); the expected score of a passage is
100 x the cosine of the preset's recipe computed here one text at a time with transformers:
its pooling, its instructions, RaDeR's end-of-sequence token and character cut.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_hf import pooled_vectors, top_scores

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval.catalogue import get_preset
from mmbright_core.retrieval.instructions import fill_domain

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.models]

#: The tiny model of each preset's architecture (tests/support/tiny_hf.py).
FAMILIES = {
    "e5": "mistral",
    "sf": "mistral",
    "contriever": "bert",
    "rader": "qwen2",
    "diver-retriever": "qwen2",
}
# The tiny models hold 64 positions, in float32: the only settings changed from the preset.
OVERRIDES = ["--option", "max_length=64", "--option", "dtype=float32"]


def _expected(name: str, folder: Path, domain: str) -> dict[str, dict[str, float]]:
    preset = get_preset(name)
    texts = preset.instructions_for("official")
    eos = ""
    if preset.options.get("append_eos"):
        eos = transformers.AutoTokenizer.from_pretrained(folder).eos_token
    limit = preset.options.get("document_char_limit")
    data = open_source("demo").task(1, domain)
    queries = [fill_domain(texts.query, domain) + q.text + eos for q in data.queries]
    docs = [fill_domain(texts.document, domain) + d.text[:limit] + eos for d in data.corpus]
    pooling = str(preset.pooling)
    scores = (
        100 * pooled_vectors(folder, queries, pooling) @ pooled_vectors(folder, docs, pooling).T
    )
    return top_scores(scores, data)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_hf_text_preset_scores_are_its_recipe(tiny_hf, tmp_path, name):
    folder = tiny_hf[FAMILIES[name]]
    args = ["run", "--source", "demo", "--task", "1", "--domain", "biology", "--k", "10"]
    args += ["--model-preset", name, "--model", str(folder), *OVERRIDES, "--device", "cpu"]
    assert main([*args, "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path)]) == 0
    (run_file,) = tmp_path.glob("*/biology/scores.json")
    run = json.loads(run_file.read_text())
    for query_id, expected in _expected(name, folder, "biology").items():
        assert set(run[query_id]) == set(expected)
        assert run[query_id] == pytest.approx(expected, abs=1e-3)
    (config_file,) = tmp_path.glob("*/config.json")
    text = config_file.read_text()
    config = json.loads(text)["config"]
    assert (config["preset"], config["fusion"]) == (name, get_preset(name).fusion)
    # Wherever the configuration nests the embedder's settings, the override and recipe are in it.
    assert json.dumps(str(folder)) in text and f'"pooling": "{get_preset(name).pooling}"' in text
