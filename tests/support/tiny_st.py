"""Tiny random-weight sentence-transformers folders laid out as the hub's models are.

``mpnet`` is all-mpnet-base-v2's stack (MPNet, mean Pooling, Normalize, 384 tokens);
``t5`` is instructor's (T5 encoder, mean Pooling, a bias-free Dense projection, Normalize).
The transformer inside is built from a config with tiny sizes and seeded weights, with the
word-level tokenizer of ``tests/support/tiny_hf.py``, so nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tiny_hf import tokenizer

_WIDTH = 16


def _network(family: str, tok: Any) -> Any:
    from transformers import MPNetConfig, MPNetModel, T5Config, T5EncoderModel

    ids = {"vocab_size": len(tok), "pad_token_id": tok.pad_token_id}
    if family == "mpnet":
        # The hub model's 514 positions: its 384 tokens fit after the padding offset.
        config: Any = MPNetConfig(
            hidden_size=_WIDTH,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            max_position_embeddings=514,
            **ids,
        )
        return MPNetModel(config)
    config = T5Config(
        d_model=_WIDTH,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_heads=2,
        eos_token_id=tok.sep_token_id,
        decoder_start_token_id=tok.pad_token_id,
        **ids,
    )
    return T5EncoderModel(config)


def sentence_model(folder: Path, family: str, texts: Iterable[str]) -> Path:
    """Save a tiny ``mpnet`` (sbert) or ``t5`` (instructor) sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import (
        Dense,
        Normalize,
        Pooling,
        Transformer,
    )

    tok = tokenizer(texts, max_length=512)
    torch.manual_seed(0)
    inner = folder.parent / f"{folder.name}-transformer"
    _network(family, tok).save_pretrained(inner)
    tok.save_pretrained(inner)
    modules: list[Any] = [
        Transformer(str(inner), max_seq_length=384 if family == "mpnet" else 512),
        Pooling(_WIDTH, "mean"),
    ]
    if family == "t5":
        modules.append(Dense(_WIDTH, 8, bias=False, activation_function=torch.nn.Identity()))
    SentenceTransformer(modules=[*modules, Normalize()], device="cpu").save(str(folder))
    return folder
