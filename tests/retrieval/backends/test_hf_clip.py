"""CLIP and SigLIP through their transformers processors (``hf``), run from the command line.

Tiny random models of both families (``tests/support/tiny_hf.py``) run Task 2 on the demo (SigLIP as
the catalogue's ``siglip`` preset with the tiny model in place of the hub's); every
score must be the official fusion computed here with transformers directly: 100 x the dot
product of L2-normalise((raw text + raw first query image) / 2) and the normalised raw
passage features. The run is then rebuilt from its ``config.json`` and each hit's score
split exactly into its text and image parts.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pixel_goldens import as_pinned

from mmbright_core.analysis.attribution import explain, retriever_from_config
from mmbright_core.cli import main
from mmbright_core.data.images import query_images
from mmbright_core.data.sources import open_source
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval.explanation import FusionAttribution, Unavailable

DOMAIN = "biology"
pytestmark = pytest.mark.slow


def _features(folder: Path, family: str, texts: list[str], images: list, role: str) -> tuple:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.AutoModel.from_pretrained(folder).eval()
    processor = transformers.AutoProcessor.from_pretrained(folder, **as_pinned())
    padding = "max_length" if family == "siglip" else True
    batch = processor.tokenizer(
        texts, padding=padding, truncation=True, max_length=64, return_tensors="pt"
    )
    # retrieval_siglip reads no mask for queries, all the processor returns for passages.
    masked = family == "clip" or role == "document"
    keys = ["input_ids", "attention_mask"] if masked else ["input_ids"]
    pixels = processor.image_processor(images=images, return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        text = model.get_text_features(**{k: batch[k] for k in keys})
        image = model.get_image_features(pixel_values=pixels)
    as_array = [getattr(t, "pooler_output", t) for t in (text, image)]
    return tuple(np.asarray(t.float().numpy(), dtype=np.float64) for t in as_array)


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


@pytest.mark.parametrize(
    ("family", "chosen"),
    [("clip", ["--retriever", "hf"]), ("siglip", ["--model-preset", "siglip"])],
)
def test_task2_scores_are_the_official_fusion_and_split_after_a_rebuild(
    tiny_hf: dict[str, Path], tmp_path: Path, family: str, chosen: list[str]
) -> None:
    folder, out, cache = tiny_hf[family], tmp_path / "out", str(tmp_path / "cache")
    args = ["run", "--source", "demo", "--task", "2", "--domain", DOMAIN, "--out", str(out)]
    model = ["--model", str(folder), "--option", "max_length=64", "--device", "cpu"]
    assert main([*args, *chosen, *model, "--cache-dir", cache]) == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    stored = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    assert stored["config"]["retriever"] == "hf"
    assert stored["config"]["fusion"] == "raw-mean"
    run = read_outputs(run_dir).runs[DOMAIN]

    source = open_source("demo")
    data = source.task(2, DOMAIN)
    queries = [q for q in data.queries if query_images(source, q, "first").images]
    assert queries, "the demo's biology queries have images"
    pictures = [query_images(source, q, "first").images[0] for q in queries]
    query_text, query_image = _features(
        folder, family, [q.text for q in queries], pictures, "query"
    )
    fused = _unit((query_text + query_image) / 2)
    passages = {d.doc_id: d.text for d in data.corpus}
    for query, vector in zip(queries, fused, strict=True):
        ranked = run[query.query_id]
        ids = list(ranked)[:10]
        passage_text, _ = _features(
            folder, family, [passages[i] for i in ids], pictures[:1], "document"
        )
        expected = 100 * _unit(passage_text) @ vector
        assert [ranked[i] for i in ids] == pytest.approx(list(expected), abs=1e-3)

    rebuilt = retriever_from_config(stored, cache_dir=cache)
    assert not isinstance(rebuilt, Unavailable), rebuilt
    query_id = queries[0].query_id
    explained = explain(rebuilt, data, source, query_id, list(run[query_id])[:10])
    for doc_id, score in list(run[query_id].items())[:10]:
        found = explained[doc_id]
        assert isinstance(found, FusionAttribution)
        assert found.text_part + found.image_part == pytest.approx(score, abs=1e-3)


@pytest.mark.parametrize("family", ["clip", "siglip"])
def test_a_tokenizer_without_a_length_truncates_at_the_models_positions(
    tiny_hf: dict[str, Path], tmp_path: Path, family: str
) -> None:
    # A tokenizer that sets no model_max_length reports transformers' 1e30 placeholder: the
    # tokenizer's truncation overflowed (OverflowError: int too big to convert).
    folder = Path(shutil.copytree(tiny_hf[family], tmp_path / family))
    config = folder / "tokenizer_config.json"
    settings = json.loads(config.read_text(encoding="utf-8"))
    del settings["model_max_length"]
    config.write_text(json.dumps(settings), encoding="utf-8")
    out = tmp_path / "out"
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--retriever", "hf"]
    model = ["--model", str(folder), "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, *model, "--out", str(out)]) == 0
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    stored = json.loads((run_dir / "config.json").read_text(encoding="utf-8"))
    assert stored["config"]["truncation"] == 77  # the text model's max_position_embeddings
