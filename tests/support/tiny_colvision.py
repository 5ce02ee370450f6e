"""Tiny random-weight ColQwen2 and ColPali models and their processors, built offline.

The tokenizers are ``tiny_hf.py``'s word-level one with the vision tokens added; the image
processors are Qwen2-VL's with a small pixel budget (at most 16 merged patches an image) and
SigLIP's at 28 x 28 pixels (4 patches); the models are transformers' ``ColQwen2ForRetrieval``
and ``ColPaliForRetrieval`` with seeded random weights.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tiny_hf import tokenizer

VISION_TOKENS = ["<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def colqwen2_model(folder: Path, texts: Iterable[str]) -> Path:
    """Save a tiny ColQwen2 (8-wide vectors) and its processor to ``folder``."""
    import transformers as tf

    tok = tokenizer(texts, max_length=64)
    tok.add_special_tokens({"additional_special_tokens": VISION_TOKENS})
    images = tf.Qwen2VLImageProcessor(min_pixels=56 * 56, max_pixels=112 * 112)
    processor = tf.ColQwen2Processor(image_processor=images, tokenizer=tok)
    text = {
        "model_type": "qwen2_vl_text",
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "vocab_size": len(tok),
        "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]},
    }
    vlm = tf.Qwen2VLConfig(
        text_config=text,
        vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 16, "num_heads": 2},
        image_token_id=tok.convert_tokens_to_ids("<|image_pad|>"),
        vision_start_token_id=tok.convert_tokens_to_ids("<|vision_start|>"),
    )
    return _saved(
        folder,
        lambda: tf.ColQwen2ForRetrieval(tf.ColQwen2Config(vlm_config=vlm, embedding_dim=8)),
        processor,
    )


def colpali_model(folder: Path, texts: Iterable[str]) -> Path:
    """Save a tiny ColPali (8-wide vectors) and its processor to ``folder``."""
    import transformers as tf

    tok = tokenizer(texts, max_length=64)
    tok.add_special_tokens({"additional_special_tokens": ["<image>"], "bos_token": "[CLS]"})
    images = tf.SiglipImageProcessor(size={"height": 28, "width": 28})
    images.image_seq_length = 4
    processor = tf.ColPaliProcessor(image_processor=images, tokenizer=tok)
    text = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
    text |= {"num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 8}
    vision = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
    vision |= {"num_attention_heads": 2, "image_size": 28, "patch_size": 14}
    vlm = tf.PaliGemmaConfig(
        text_config={"model_type": "gemma", **text, "vocab_size": len(tok)},
        vision_config={"model_type": "siglip_vision_model", **vision, "projection_dim": 16},
        projection_dim=16,
        image_token_index=tok.convert_tokens_to_ids("<image>"),
    )
    return _saved(
        folder,
        lambda: tf.ColPaliForRetrieval(tf.ColPaliConfig(vlm_config=vlm, embedding_dim=8)),
        processor,
    )


def _saved(folder: Path, build: Callable[[], Any], processor: Any) -> Path:
    # The model built with seeded random weights, saved beside its processor.
    import torch

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    build().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


def token_vectors(folder: Path, model: str, **inputs: Any) -> Any:
    """Return one input's token vectors (``text=[...]`` or ``images=[...]``), straight from
    transformers' class ``model``: its embeddings at the positions the attention mask keeps."""
    import torch
    import transformers as tf

    processor = tf.AutoProcessor.from_pretrained(folder)
    loaded = getattr(tf, model).from_pretrained(folder).eval()
    batch = processor(**inputs, return_tensors="pt")
    with torch.inference_mode():
        vectors = loaded(**batch).embeddings[0]
    return vectors[batch["attention_mask"][0].bool()].float().numpy()
