"""Tiny random-weight transformers models of the benchmark's architectures, built offline.

Each builder trains a word-level tokenizer in memory over the given texts (nothing is fetched),
builds the architecture from a config with tiny sizes and seeded random weights, and saves
model, tokenizer (and processor) to a folder that ``from_pretrained`` loads by path.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
_SIZES = {"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1}
_HEADS = {"num_attention_heads": 2}


def tokenizer(texts: Iterable[str], *, max_length: int = 64, padding_side: str = "right") -> Any:
    """Return a fast tokenizer trained on ``texts``: lower-cased words, ``[CLS] x [SEP]``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator(texts, trainers.WordLevelTrainer(special_tokens=SPECIALS))
    ids = {name: backend.token_to_id(name) for name in ("[CLS]", "[SEP]")}
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=list(ids.items())
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        eos_token="[SEP]",
        model_max_length=max_length,
        padding_side=padding_side,
    )


def _save(folder: Path, model: Any, *parts: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    for part in parts:
        part.save_pretrained(folder)
    return folder


def text_model(folder: Path, family: str, texts: Iterable[str], **tokenizer_options: Any) -> Path:
    """Save a tiny ``bert``, ``mistral`` or ``qwen2`` model and its tokenizer to ``folder``."""
    import torch
    from transformers import AutoModel, BertConfig, MistralConfig, Qwen2Config

    tok = tokenizer(texts, **tokenizer_options)
    vocab = {"vocab_size": len(tok), "pad_token_id": tok.pad_token_id}
    configs = {
        "bert": lambda: BertConfig(**_SIZES, **_HEADS, **vocab, max_position_embeddings=128),
        "mistral": lambda: MistralConfig(
            **_SIZES, **_HEADS, **vocab, num_key_value_heads=1, head_dim=8
        ),
        "qwen2": lambda: Qwen2Config(**_SIZES, **_HEADS, **vocab, num_key_value_heads=1),
    }
    torch.manual_seed(0)
    return _save(folder, AutoModel.from_config(configs[family]()), tok)


def clip_model(folder: Path, family: str, texts: Iterable[str]) -> Path:
    """Save a tiny ``clip`` or ``siglip`` model with its processor (32x32 images) to ``folder``."""
    import torch
    from transformers import (
        CLIPConfig,
        CLIPImageProcessor,
        CLIPModel,
        CLIPProcessor,
        SiglipConfig,
        SiglipImageProcessor,
        SiglipModel,
        SiglipProcessor,
    )

    # SigLIP pads to max_length, so its position table must hold the whole padded text.
    tok = tokenizer(texts, max_length=16 if family == "siglip" else 77)
    text = {**_SIZES, **_HEADS, "vocab_size": len(tok), "max_position_embeddings": 77}
    text |= {"pad_token_id": tok.pad_token_id, "eos_token_id": tok.sep_token_id}
    text |= {"bos_token_id": tok.cls_token_id}
    vision = {**_SIZES, **_HEADS, "image_size": 32, "patch_size": 16}
    torch.manual_seed(0)
    if family == "clip":
        size = {"shortest_edge": 32}
        model: Any = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=8))
        images: Any = CLIPImageProcessor(size=size, crop_size={"height": 32, "width": 32})
        processor: Any = CLIPProcessor(image_processor=images, tokenizer=tok)
    else:
        model = SiglipModel(SiglipConfig(text_config=text, vision_config=vision))
        images = SiglipImageProcessor(size={"height": 32, "width": 32})
        processor = SiglipProcessor(image_processor=images, tokenizer=tok)
    return _save(folder, model, processor)


def pooled_vectors(folder: Path, texts: Iterable[str], pooling: str) -> Any:
    """Return L2-normalised pooled states of ``texts``, one text at a time (no padding).

    ``pooling`` is ``last-token`` or ``mean``; texts are cut at the tiny models' 64 tokens.
    """
    import numpy as np
    import torch
    from transformers import AutoModel, AutoTokenizer

    pools = {"last-token": lambda h: h[-1], "mean": lambda h: h.mean(dim=0)}
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            ids = tok(text, max_length=64, truncation=True, return_tensors="pt")
            out.append(pools[pooling](model(**ids).last_hidden_state[0]).numpy())
    vectors = np.stack(out)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cross_encoder_model(folder: Path, texts: Iterable[str]) -> Path:
    """Save a tiny ``bert`` relevance model (one output) whose tokenizer joins text pairs.

    sentence-transformers loads the folder as a ``CrossEncoder``: ``[CLS] a [SEP] b [SEP]``
    into ``BertForSequenceClassification`` with ``num_labels=1``.
    """
    import torch
    from tokenizers import processors
    from transformers import BertConfig, BertForSequenceClassification

    tok = tokenizer(texts, max_length=64)
    specials = [(name, tok.convert_tokens_to_ids(name)) for name in ("[CLS]", "[SEP]")]
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=specials
    )
    vocab = {"vocab_size": len(tok), "pad_token_id": tok.pad_token_id}
    config = BertConfig(**_SIZES, **_HEADS, **vocab, max_position_embeddings=128, num_labels=1)
    config.initializer_range = 0.5  # scores far apart: no near-ties at float32
    torch.manual_seed(0)
    return _save(folder, BertForSequenceClassification(config), tok)


def top_scores(scores: Any, data: Any, k: int = 10) -> dict[str, dict[str, float]]:
    """Return each query's ``k`` best passages of a query x passage score matrix.

    ``data`` is the task's :class:`~mmbright_core.types.TaskData`: its excluded passages are
    dropped first, as the benchmark does, then ties go to the larger doc id.
    """
    out = {}
    for row, query in zip(scores, data.queries, strict=True):
        allowed = [
            (float(s), d.doc_id)
            for s, d in zip(row, data.corpus, strict=True)
            if d.doc_id not in data.excluded.get(query.query_id, ())
        ]
        out[query.query_id] = {doc: s for s, doc in sorted(allowed, reverse=True)[:k]}
    return out
