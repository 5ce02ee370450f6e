"""``--model-preset NAME --trust-remote-code``: the hub-code presets, on local stand-ins.

Each preset runs through the CLI on the demo with its model replaced (``--model``) by a tiny
local folder whose own code (``tests/support/hub_code/``, named by ``auto_map`` or ``modules.json``)
offers the same calls as the hub model's code, so transformers and sentence-transformers load
it only with ``trust_remote_code=True``. Every score must be the official recipe computed here
with those libraries directly: Jina-CLIP's zero-image mean, Nomic's normalised mean of two
models, BGE-VL's joint ``encode`` of texts cut at 150 characters, GME's dicts, ReasonIR's
``encode(instruction=)``, M2's ``sentence_embedding`` under a second folder's tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from pixel_goldens import as_pinned

from mmbright_core.cli import main
from mmbright_core.data.images import decode_image, query_images
from mmbright_core.data.sources import open_source
from mmbright_core.retrieval.backends.hub_code.bge import bge_cut
from mmbright_core.retrieval.dual.encoders import document_bytes
from mmbright_core.types import TaskData

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.models]
DOMAIN = "gis"
Encode = Callable[[list[str], list], np.ndarray]


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)  # an empty passage's zero vector stays 0


def _run(tmp_path: Path, preset: str, task: int, folder: Path, *extra: str) -> tuple[dict, dict]:
    args = ["run", "--source", "demo", "--task", str(task), "--domain", DOMAIN, "--k", "10"]
    args += ["--model-preset", preset, "--model", str(folder), "--trust-remote-code", *extra]
    out = tmp_path / "out"
    assert (
        main([*args, "--device", "cpu", "--cache-dir", str(tmp_path / "c"), "--out", str(out)]) == 0
    )
    (scores,) = out.glob(f"*/{DOMAIN}/scores.json")
    (config,) = out.glob("*/config.json")
    return json.loads(scores.read_text()), json.loads(config.read_text())["config"]


def _first_images(data: TaskData) -> list:
    source = open_source("demo")
    found = [query_images(source, q, "first").images for q in data.queries]
    assert any(found), "the demo's queries have images"
    return [images[0].convert("RGB") if images else None for images in found]


def _check(
    run: dict, data: TaskData, queries: np.ndarray, docs: np.ndarray, scale: float = 100.0
) -> None:
    """Every query's top 10 and scores: ``scale`` x the dot product, exclusions applied."""
    scores = scale * _unit(queries) @ _unit(docs).T
    for row, query in zip(scores, data.queries, strict=True):
        excluded = data.excluded.get(query.query_id, ())
        allowed = [
            (float(s), d.doc_id)
            for s, d in zip(row, data.corpus, strict=True)
            if d.doc_id not in excluded
        ]
        expected = {doc: s for s, doc in sorted(allowed, reverse=True)[:10]}
        assert run[query.query_id] == pytest.approx(expected, abs=1e-5 * scale)


def _numpy(vectors) -> np.ndarray:
    if hasattr(vectors, "detach"):
        vectors = vectors.detach().float().numpy()
    return np.asarray(vectors, dtype=np.float64).reshape(-1, np.shape(vectors)[-1])


def test_jina_clip_is_the_zero_image_mean_of_its_encode_calls(tiny_remote, tmp_path):
    run, config = _run(tmp_path, "jina-clip", 2, tiny_remote["jina"])
    assert (config["retriever"], config["preset"], config["fusion"]) == (
        "hub-code",
        "jina-clip",
        "zero-image",
    )
    assert config["options"]["trust_remote_code"] is True
    assert config["options"]["interface"] == "encode-text-image"
    model = transformers.AutoModel.from_pretrained(tiny_remote["jina"], trust_remote_code=True)
    data = open_source("demo").task(2, DOMAIN)
    text = _numpy(model.encode_text([q.text for q in data.queries]))
    image = np.stack(
        [
            np.zeros(text.shape[1]) if im is None else _numpy(model.encode_image([im]))[0]
            for im in _first_images(data)
        ]
    )
    docs = _numpy(model.encode_text([d.text for d in data.corpus]))
    _check(run, data, (text + image) / 2, docs)


def _nomic_text(folder: Path, texts: list[str]) -> np.ndarray:
    # retrieval_nomic_vision: mean pooling over the mask, layer norm, L2 norm.
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
    batch = tokenizer(texts, padding=True, truncation=True, max_length=8192, return_tensors="pt")
    with torch.no_grad():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return _unit(torch.nn.functional.layer_norm(pooled, (pooled.shape[1],)).numpy())


def test_nomic_vision_is_the_normalised_mean_of_its_two_models(tiny_remote, tmp_path):
    vision_folder = tiny_remote["nomic-vision"]
    run, config = _run(
        tmp_path,
        "nomic-vision",
        2,
        tiny_remote["nomic-text"],
        "--option",
        f"image_model={vision_folder}",
    )
    assert config["options"]["image_model"] == str(vision_folder)
    data = open_source("demo").task(2, DOMAIN)
    text = _nomic_text(tiny_remote["nomic-text"], [f"search_query: {q.text}" for q in data.queries])
    processor = transformers.AutoImageProcessor.from_pretrained(vision_folder, **as_pinned())
    vision = transformers.AutoModel.from_pretrained(vision_folder, trust_remote_code=True)
    queries = []
    for vector, image in zip(text, _first_images(data), strict=True):
        if image is None:
            queries.append(vector)  # a query without an image is its text
            continue
        with torch.no_grad():
            first = vision(**processor(image, return_tensors="pt")).last_hidden_state[:, 0]
        queries.append(_unit(vector + _unit(first.numpy())[0]))
    docs = _nomic_text(tiny_remote["nomic-text"], [d.text[:8000] for d in data.corpus])
    _check(run, data, np.stack(queries), docs)


def test_bge_vl_is_its_joint_encode_of_texts_cut_at_150_characters(tiny_remote, tmp_path):
    run, config = _run(tmp_path, "bge-vl-base", 2, tiny_remote["bge"])
    assert (config["fusion"], config["options"]["text_char_limit"]) == ("joint", 150)
    model = transformers.AutoModel.from_pretrained(tiny_remote["bge"], trust_remote_code=True)
    model.set_processor(str(tiny_remote["bge"]))
    data = open_source("demo").task(2, DOMAIN)
    queries = []
    for query, image in zip(data.queries, _first_images(data), strict=True):
        text = bge_cut(query.text, 150)
        if image is None:
            queries.append(_numpy(model.encode(text=text))[0])
            continue
        path = tmp_path / f"{query.query_id.replace('/', '_')}.png"
        image.save(path, format="PNG")  # the hub code reads image files
        queries.append(_numpy(model.encode(images=str(path), text=text))[0])
    docs = np.concatenate([_numpy(model.encode(text=bge_cut(d.text, 150))) for d in data.corpus])
    _check(run, data, np.stack(queries), docs)


def test_bge_vl_cuts_shorter_while_the_model_overflows(tmp_path):
    import tiny_remote as build

    from mmbright_core.retrieval.backends.hub_code.bge import EncodeImagesText

    folder = build.hub_model(tmp_path / "bge", "TinyBgeVl", max_chars=100)
    text = "word " * 40  # 200 characters: 150 and 120 overflow, 100 fits
    vector = EncodeImagesText(str(folder), interface="encode-images-text", device="cpu")
    got = vector.encode_texts([text], "document")
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)
    model.set_processor(str(folder))
    assert np.allclose(got, _numpy(model.encode(text=bge_cut(text, 100))), atol=1e-6)


def _gme(folder: Path, inputs: list) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), trust_remote_code=True, device="cpu")
    return np.concatenate([model.encode([item], normalize_embeddings=True) for item in inputs])


def test_gme_encodes_text_and_image_dicts_through_sentence_transformers(tiny_remote, tmp_path):
    run, config = _run(tmp_path, "gme-qwen2-vl-2b", 2, tiny_remote["gme"])
    assert (config["fusion"], config["options"]["interface"]) == ("joint", "st-dicts")
    data = open_source("demo").task(2, DOMAIN)
    inputs = [
        q.text[:4000] if image is None else {"text": q.text[:4000], "image": image}
        for q, image in zip(data.queries, _first_images(data), strict=True)
    ]
    docs = _gme(tiny_remote["gme"], [d.text[:4000] for d in data.corpus])
    _check(run, data, _gme(tiny_remote["gme"], inputs), docs)


def test_gme_task3_ranks_images_encoded_as_image_dicts(tiny_remote, tmp_path):
    run, _ = _run(tmp_path, "gme-qwen2-vl-7b", 3, tiny_remote["gme"])
    source = open_source("demo")
    data = source.task(3, DOMAIN)
    paths = [d.doc_id if d.image is None else d.image.path for d in data.corpus]
    images = [decode_image(document_bytes(source, DOMAIN, path), path) for path in paths]
    inputs = [
        q.text[:4000] if image is None else {"text": q.text[:4000], "image": image}
        for q, image in zip(data.queries, _first_images(data), strict=True)
    ]
    docs = _gme(tiny_remote["gme"], [{"image": im.convert("RGB")} for im in images])
    _check(run, data, _gme(tiny_remote["gme"], inputs), docs)


def test_qwen_runs_the_hub_automodel_pooled_at_its_last_token(tiny_remote, tmp_path):
    folder = tiny_remote["nomic-text"]  # any AutoModel with hub code and a tokenizer
    run, config = _run(tmp_path, "qwen2", 1, folder, "--option", "dtype=float32")
    options = config["options"]
    assert (config["retriever"], options["pooling"], options["trust_remote_code"]) == (
        "hf",
        "last-token",
        True,
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=True)
    model = transformers.AutoModel.from_pretrained(folder, trust_remote_code=True)

    def last_token(texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            batch = tokenizer(text, max_length=8192, truncation=True, return_tensors="pt")
            with torch.no_grad():
                rows.append(model(**batch).last_hidden_state[0, -1].numpy())
        return np.stack(rows)

    data = open_source("demo").task(1, DOMAIN)
    _check(
        run,
        data,
        last_token([q.text for q in data.queries]),
        last_token([d.text for d in data.corpus]),
    )


def test_nomic_text_runs_sentence_transformers_with_hub_code(tiny_remote, tmp_path):
    run, config = _run(tmp_path, "nomic", 1, tiny_remote["gme"])
    assert (config["retriever"], config["options"]["trust_remote_code"]) == ("dense", True)
    data = open_source("demo").task(1, DOMAIN)
    queries = _gme(tiny_remote["gme"], [q.text for q in data.queries])
    # retrieval_nomic writes the plain cosine.
    _check(run, data, queries, _gme(tiny_remote["gme"], [d.text for d in data.corpus]), 1.0)


@pytest.fixture(scope="module")
def tiny_text_hub(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> dict:
    """ReasonIR's and M2's stand-ins, and M2's tokenizer in a folder of its own."""
    import tiny_remote as build

    root = tmp_path_factory.mktemp("tiny-text-hub")
    m2, tokenizer = build.m2_pair(root, demo_texts)
    reasonir = build.hub_model(root / "reasonir", "TinyReasonIr")
    return {"reasonir": reasonir, "m2": m2, "m2-tokenizer": tokenizer}


def test_reasonir_is_its_own_encode_with_each_roles_instruction(tiny_text_hub, tmp_path):
    folder = tiny_text_hub["reasonir"]
    instructions = ["query_instruction=Given a {domain} post: ", "document_instruction=Doc: "]
    run, config = _run(
        tmp_path, "reasonir", 1, folder, "--option", instructions[0], "--option", instructions[1]
    )
    options = config["options"]
    assert (config["retriever"], options["interface"], options["trust_remote_code"]) == (
        "hub-code",
        "encode-instruction",
        True,
    )
    assert (options["dtype"], config["truncation"]) == ("auto", 32768)
    assert (options["batch_size"], options["one_call"]) == (8, True)
    # retrieval_reasonir: torch_dtype="auto", one encode(texts, instruction=, batch_size=8,
    # max_length=32768) call for the passages and one for the queries (the runner's
    # batch_size=8; the model's code forms the batches), the plain cosine of the two.
    model = transformers.AutoModel.from_pretrained(folder, dtype="auto", trust_remote_code=True)
    data = open_source("demo").task(1, DOMAIN)

    def encode(texts: list[str], instruction: str, size: int = 8) -> np.ndarray:
        vectors = model.encode(texts, instruction=instruction, batch_size=size, max_length=32768)
        return _numpy(vectors)

    queries = encode([q.text for q in data.queries], f"Given a {DOMAIN} post: ")
    docs = [d.text for d in data.corpus]
    _check(run, data, queries, encode(docs, "Doc: "), 1.0)
    # The batches show (the stand-in's vectors move with their batch's longest text, as a
    # padded batch's do): other batches of the passages give other scores.
    with pytest.raises(AssertionError):
        _check(run, data, queries, encode(docs, "Doc: ", 1), 1.0)


def test_m2_is_the_normalised_sentence_embedding_under_a_second_tokenizer(tiny_text_hub, tmp_path):
    tokenizer_folder = tiny_text_hub["m2-tokenizer"]
    chosen = [f"tokenizer={tokenizer_folder}", "query_instruction=Represent this {domain} query: "]
    flags = [part for option in chosen for part in ("--option", option)]
    run, config = _run(tmp_path, "m2", 1, tiny_text_hub["m2"], *flags)
    options = config["options"]
    assert (options["interface"], options["tokenizer"], options["batch_size"]) == (
        "sentence-embedding",
        str(tokenizer_folder),
        1,
    )
    # retrieval_m2: AutoModelForSequenceClassification with its code, the tokenizer at
    # model_max_length=32768, queries after their instruction, batches of 1 padded and cut at
    # 32,768 tokens, outputs['sentence_embedding'] normalised, 100 x the dot product.
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        tiny_text_hub["m2"], trust_remote_code=True
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(tokenizer_folder, model_max_length=32768)

    def embed(texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            batch = tokenizer(
                [text], max_length=32768, padding=True, truncation=True, return_tensors="pt"
            )
            with torch.no_grad():
                rows.append(_numpy(model(**batch)["sentence_embedding"])[0])
        return np.stack(rows)

    data = open_source("demo").task(1, DOMAIN)
    queries = embed([f"Represent this {DOMAIN} query: {q.text}" for q in data.queries])
    _check(run, data, queries, embed([d.text for d in data.corpus]))


def test_m2_refuses_an_instruction_before_passages_as_retrieval_m2_gives_none(
    tiny_text_hub, capsys, tmp_path
):
    args = ["run", "--source", "demo", "--domain", DOMAIN, "--task", "1", "--out", str(tmp_path)]
    args += ["--model-preset", "m2", "--model", str(tiny_text_hub["m2"]), "--trust-remote-code"]
    args += ["--option", f"tokenizer={tiny_text_hub['m2-tokenizer']}"]
    assert main([*args, "--option", "document_instruction=Doc: "]) == 2
    err = capsys.readouterr().err
    assert "sentence-embedding interface takes no document_instruction" in err
    assert "It takes tokenizer, max_length, query_instruction" in err


TEXT_HUB_CODE = ("qwen", "qwen2", "nomic", "reasonir", "m2")
HUB_CODE = [*TEXT_HUB_CODE, "jina-clip", "nomic-vision", "bge-vl-base", "gme-qwen2-vl-7b"]


@pytest.mark.parametrize("preset", HUB_CODE)
def test_without_the_flag_a_hub_code_preset_is_refused_in_one_line(preset, capsys, tmp_path):
    task = "1" if preset in TEXT_HUB_CODE else "2"
    args = ["run", "--source", "demo", "--domain", DOMAIN, "--task", task, "--out", str(tmp_path)]
    assert main([*args, "--model-preset", preset]) == 2
    err = capsys.readouterr().err
    assert "--trust-remote-code" in err and err.count("\n") == 1
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    "chosen",
    [
        ["--model-preset", "jina-clip"],
        ["--retriever", "hf", "--option", "pooling=mean"],
        ["--retriever", "hub-code", "--option", "interface=encode-text-image"],
        ["--retriever", "remote", "--option", "interface=encode-text-image"],  # its former name
    ],
)
def test_the_operator_forbids_hub_code_whoever_asks(
    tiny_remote, chosen, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("MMBRIGHT_ALLOW_REMOTE_CODE", "0")
    args = ["run", "--source", "demo", "--domain", DOMAIN, "--task", "2", "--out", str(tmp_path)]
    model = ["--model", str(tiny_remote["jina"]), "--trust-remote-code", "--device", "cpu"]
    assert main([*args, *chosen, *model]) == 2
    err = capsys.readouterr().err
    assert "forbidden on this installation" in err and "MMBRIGHT_ALLOW_REMOTE_CODE=0" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("name", ["hub-code", "remote"])
def test_the_hub_code_backend_needs_the_flag(name, tiny_remote, capsys, tmp_path):
    args = ["run", "--source", "demo", "--domain", DOMAIN, "--task", "2", "--out", str(tmp_path)]
    chosen = ["--retriever", name, "--option", "interface=encode-text-image"]
    assert main([*args, *chosen, "--model", str(tiny_remote["jina"])]) == 2
    assert "without --trust-remote-code" in capsys.readouterr().err


def test_a_hub_code_run_is_not_rebuilt_to_be_explained(tiny_remote, tmp_path):
    from mmbright_core.analysis.attribution import retriever_from_config
    from mmbright_core.retrieval.explanation import Unavailable

    _run(tmp_path, "jina-clip", 2, tiny_remote["jina"])
    (config_file,) = (tmp_path / "out").glob("*/config.json")
    rebuilt = retriever_from_config(json.loads(config_file.read_text()))
    assert isinstance(rebuilt, Unavailable) and "trust_remote_code" in rebuilt.reason
