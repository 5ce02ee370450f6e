"""The ``clip`` and ``siglip`` presets' vectors are those of the official retrievers, per task.

Tiny random models are built in transformers with the configuration flags of the upstream
checkpoints (``CLIPModel`` with ``hidden_act="quick_gelu"``, as openai/clip-vit-large-patch14's
config says; ``SiglipModel``), and the query, passage, corpus-image and pair vectors are
computed here as the official functions compute them (``src/retrievers/task2_multimodal.py``
``retrieval_clip`` / ``retrieval_siglip``, ``task3_image.py`` ``retrieval_clip_it2i`` /
``retrieval_siglip_it2i``, ``task4_pair.py`` ``retrieval_clip_it2it`` /
``retrieval_siglip_it2it``), transcribed line by line, with the processor calls as written
there, and the processors as the official pin (transformers 4.51.3) loads them: on PIL's path
(``pixel_goldens.as_pinned``; ``test_pixel_goldens.py`` holds that path to 4.51.3's own
pixels). The preset's vectors, built from its catalogue entry with the tiny model in place of
the hub's, must equal them within 1e-5.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageOps
from pixel_goldens import as_pinned
from tiny_hf import tokenizer as tiny_tokenizer

from mmbright_core.data.sources import open_source
from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.catalogue.preset_run import resolve
from mmbright_core.retrieval.catalogue.presets import get_preset

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
F = pytest.importorskip("torch.nn.functional")
pytestmark = [pytest.mark.slow]

DOMAIN = "biology"
#: The tiny SigLIP tokenizers' own lengths (the official calls use the tokenizer's): 64, so
#: that the demo's texts are padded and the attention mask counts; 16 for Task 3, whose
#: official queries are padded to the longest of their batch, which is 16 only there.
SIGLIP_LENGTHS = {"siglip": 64, "siglip-short": 16}


def _save(folder: Path, model: Any, processor: Any) -> Path:
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> dict[str, Path]:
    """A tiny CLIP (QuickGELU, as OpenAI's checkpoint) and a tiny SigLIP, 48x48 images."""
    root = tmp_path_factory.mktemp("clip-fidelity")
    sizes = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 2}
    sizes |= {"num_attention_heads": 2}
    vision = {**sizes, "image_size": 48, "patch_size": 16}
    torch.manual_seed(0)
    clip_tok = tiny_tokenizer(demo_texts, max_length=77)
    text = {**sizes, "vocab_size": len(clip_tok), "max_position_embeddings": 77}
    text |= {"pad_token_id": clip_tok.pad_token_id, "eos_token_id": clip_tok.sep_token_id}
    text |= {"bos_token_id": clip_tok.cls_token_id}
    config = transformers.CLIPConfig(
        text_config={**text, "hidden_act": "quick_gelu"},
        vision_config={**vision, "hidden_act": "quick_gelu"},
        projection_dim=8,
    )
    assert config.text_config.hidden_act == config.vision_config.hidden_act == "quick_gelu"
    clip_images = transformers.CLIPImageProcessor(
        size={"shortest_edge": 48}, crop_size={"height": 48, "width": 48}
    )
    clip = _save(
        root / "clip",
        transformers.CLIPModel(config),
        transformers.CLIPProcessor(image_processor=clip_images, tokenizer=clip_tok),
    )
    folders = {"clip": clip}
    siglip = transformers.SiglipModel(
        transformers.SiglipConfig(text_config=text, vision_config=vision)
    )
    for name, length in SIGLIP_LENGTHS.items():  # the same weights, two tokenizer lengths
        processor = transformers.SiglipProcessor(
            image_processor=transformers.SiglipImageProcessor(size={"height": 48, "width": 48}),
            tokenizer=tiny_tokenizer(demo_texts, max_length=length),
        )
        folders[name] = _save(root / name, siglip, processor)
    return folders


def _pil(raw: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(raw))
    image.load()
    return image


def _features(output: Any) -> Any:
    return getattr(output, "pooler_output", output)  # transformers 5 wraps the features


class Official:
    """The official CLIP and SigLIP retrievers' vector computations, one model each."""

    def __init__(self, folder: Path, family: str) -> None:
        self.family = family
        self.model = transformers.AutoModel.from_pretrained(folder).eval()
        processor = transformers.CLIPProcessor if family == "clip" else transformers.AutoProcessor
        self.processor = processor.from_pretrained(folder, **as_pinned())
        self.white = (224, 224) if family == "clip" else (384, 384)

    def text(self, inputs: dict[str, Any], masked: bool) -> Any:
        # masked: the attention mask the processor returned is read (``**inputs``,
        # ``inputs.get("attention_mask", None)``); else ``input_ids`` alone.
        mask = inputs.get("attention_mask") if masked else None
        return _features(
            self.model.get_text_features(input_ids=inputs["input_ids"], attention_mask=mask)
        )

    def image(self, inputs: dict[str, Any]) -> Any:
        return _features(self.model.get_image_features(pixel_values=inputs["pixel_values"]))

    def passage_inputs(self, texts: list[str]) -> dict[str, Any]:
        # retrieval_clip(_it2it): padding=True, truncation=True, max_length=77;
        # retrieval_siglip(_it2it): padding="max_length", truncation=True.
        if self.family == "clip":
            return self.processor(
                text=texts, return_tensors="pt", padding=True, truncation=True, max_length=77
            )
        return self.processor(
            text=texts, return_tensors="pt", padding="max_length", truncation=True
        )

    def passages(self, texts: list[str]) -> np.ndarray:
        # get_text_features(**inputs): all the processor returns.
        inputs = self.passage_inputs(texts)
        return F.normalize(self.text(inputs, masked=True), p=2, dim=1).numpy()

    def task2_queries(self, texts: list[str], images: list[Image.Image | None]) -> np.ndarray:
        # retrieval_clip / retrieval_siglip: images[0].convert('RGB') or a white image.
        pictures = [
            Image.new("RGB", self.white, color="white") if im is None else im.convert("RGB")
            for im in images
        ]
        padding: bool | str = True if self.family == "clip" else "max_length"
        inputs = self.processor(
            text=texts, images=pictures, return_tensors="pt", padding=padding, truncation=True
        )
        # CLIP reads the attention mask; SigLIP's line has it commented out.
        fused = (self.text(inputs, masked=self.family == "clip") + self.image(inputs)) / 2
        return F.normalize(fused, p=2, dim=1).numpy()

    def task3_corpus(self, images: list[Image.Image]) -> np.ndarray:
        # retrieval_*_it2i: safe_rgb_np (np.asarray of the RGB image), then the processor.
        arrays = [np.asarray(im.convert("RGB")) for im in images]
        inputs = self.processor(images=arrays, return_tensors="pt")
        return F.normalize(self.image(inputs), p=2, dim=1).numpy()

    def task3_queries(self, texts: list[str], images: list[Image.Image | None]) -> np.ndarray:
        # retrieval_clip_it2i: np.array(qp.convert('RGB')); retrieval_siglip_it2i resizes it
        # to 384x384 first; white np.full((H, W, 3), 255) for a query without image.
        arrays = []
        for image in images:
            if image is None:
                arrays.append(np.full((*self.white, 3), 255, dtype=np.uint8))
                continue
            rgb = image.convert("RGB")
            if self.family == "siglip" and rgb.size != (384, 384):
                rgb = rgb.resize((384, 384))
            arrays.append(np.array(rgb))
        inputs = self.processor(
            text=texts, images=arrays, return_tensors="pt", padding=True, truncation=True
        )
        fused = (self.text(inputs, masked=True) + self.image(inputs)) / 2
        return F.normalize(fused, p=2, dim=1).numpy()

    def task4_pairs(self, texts: list[str], images: list[Image.Image | None]) -> np.ndarray:
        # retrieval_*_it2it: _safe_open_image (exif_transpose, RGB, white if None), each
        # image processed alone (_clip_safe_images / _siglip_safe_images).
        inputs = self.passage_inputs(texts)
        pixels = torch.stack(
            [
                self.processor(images=self._safe_open(im), return_tensors="pt")["pixel_values"][0]
                for im in images
            ]
        )
        fused = (self.text(inputs, masked=True) + self.image({"pixel_values": pixels})) / 2
        return F.normalize(fused, p=2, dim=1).numpy()

    def task4_queries(self, texts: list[str], images: list[Image.Image | None]) -> np.ndarray:
        pictures = [self._safe_open(im) for im in images]
        if self.family == "clip":
            inputs = self.passage_inputs(texts)
            inputs["pixel_values"] = self.processor(images=pictures, return_tensors="pt")[
                "pixel_values"
            ]
        else:
            inputs = self.processor(
                text=texts,
                images=pictures,
                return_tensors="pt",
                padding="max_length",
                truncation=True,
            )
        fused = (self.text(inputs, masked=True) + self.image(inputs)) / 2
        return F.normalize(fused, p=2, dim=1).numpy()

    def _safe_open(self, image: Image.Image | None) -> Image.Image:
        if image is None:
            return Image.new("RGB", self.white, color="white")
        return ImageOps.exif_transpose(image).convert("RGB")


def _preset(name: str, task: int, folder: str, cache: Path) -> Any:
    resolved = resolve(get_preset(name), task)
    options = {**resolved.options, "model": folder, "device": "cpu", "cache_dir": str(cache)}
    if name == "siglip":  # the tiny tokenizer's length, as the official calls take it
        options["max_length"] = transformers.AutoTokenizer.from_pretrained(folder).model_max_length
    return get_retriever(resolved.retriever, **options)


def _first_images(source: Any, queries: Any) -> list[Image.Image | None]:
    # The released code's images[0]: the query's first image, decoded.
    return [
        _pil(source.query_image_bytes(q.domain, q.images[0].path)) if q.images else None
        for q in queries
    ]


@pytest.mark.parametrize("name", ["clip", "siglip"])
@pytest.mark.parametrize("task", [2, 3, 4])
def test_preset_vectors_are_the_official_retrievers(models, tmp_path, name, task):
    source = open_source("demo")
    data = source.task(task, DOMAIN)
    folder = models["siglip-short" if (name, task) == ("siglip", 3) else name]
    official = Official(folder, name)
    retriever = _preset(name, task, str(folder), tmp_path)
    assert get_preset(name).backend == "hf"
    texts = [q.text for q in data.queries]
    pictures = _first_images(source, data.queries)
    with retriever.bound(data), torch.no_grad():
        queries = retriever.encode_queries(data.queries, source)
        corpus = retriever.corpus_vectors(data, source)
        if task == 2:
            expected_queries = official.task2_queries(texts, pictures)
            expected_corpus = official.passages([d.text for d in data.corpus])
        elif task == 3:
            expected_queries = official.task3_queries(texts, pictures)
            raws = [source.document_image_bytes(DOMAIN, d.image.path) for d in data.corpus]
            expected_corpus = official.task3_corpus([_pil(raw) for raw in raws])
        else:
            expected_queries = official.task4_queries(texts, pictures)
            images = [
                None if d.image is None else _pil(source.document_image_bytes(DOMAIN, d.image.path))
                for d in data.corpus
            ]
            expected_corpus = official.task4_pairs([d.text for d in data.corpus], images)
    np.testing.assert_allclose(queries, expected_queries, atol=1e-5)
    np.testing.assert_allclose(corpus, expected_corpus, atol=1e-5)


def test_the_siglip_steps_of_each_task_change_the_vectors(models):
    """Each SigLIP step the tasks differ in moves the vectors, so the test above sees it."""
    source = open_source("demo")
    data = source.task(2, DOMAIN)
    texts = [q.text for q in data.queries]
    pictures = [p for p in _first_images(source, data.queries) if p is not None]
    official = Official(models["siglip"], "siglip")
    inputs = official.processor(
        text=texts, return_tensors="pt", padding="max_length", truncation=True
    )
    assert not bool(inputs["attention_mask"].all()), "the demo's texts are padded to 64"
    resized = [np.array(p.convert("RGB").resize((384, 384))) for p in pictures]
    with torch.no_grad():
        masked = official.text(inputs, masked=True).numpy()
        bare = official.text(inputs, masked=False).numpy()
        direct = official.image(official.processor(images=pictures, return_tensors="pt"))
        pre = official.image(official.processor(images=resized, return_tensors="pt"))
    assert np.abs(masked - bare).max() > 1e-3  # Tasks 2 (queries) vs 4 and Task 2 passages
    assert np.abs(direct.numpy() - pre.numpy()).max() > 1e-4  # Task 3's pre-resize
