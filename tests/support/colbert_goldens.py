"""A tiny ColBERT saved by PyLate 1.6.0, and PyLate's own vectors and top 10 on the demo.

Run once where ``pylate==1.6.0`` imports (it pins sentence-transformers 5.3, so it cannot join
the package's ``dev`` extra; ``pip install --no-deps pylate==1.6.0 sentence-transformers==5.3.0``
into a separate virtual environment that sees this package's torch and transformers)::

    python tests/support/colbert_goldens.py

It builds a tiny random-weight BERT from its config (seeded, the word-level tokenizer of
``tiny_hf.py`` trained on the demo's biology texts, with ``[MASK]`` for query expansion), lets
``pylate.models.ColBERT`` add its prefix tokens and an 8-wide projection and save the model
(:data:`FOLDER`), loads it back with PyLate and writes :data:`GOLDEN`: PyLate's token vectors of
the Task 1 biology queries and passages (``encode``, ``is_query``) and each query's top 10 of
all passages by PyLate's ``colbert_scores``. The tests run the package's ``late-interaction``
backend on the folder and compare both.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np

SAMPLES = Path(__file__).parent / "samples"
FOLDER = SAMPLES / "tiny-pylate-colbert"
GOLDEN = SAMPLES / "colbert_goldens.npz"
SKIPLIST = ["!", ",", ".", "?"]


def demo_texts() -> tuple[list[str], list[str]]:
    """Return the demo's Task 1 biology query and passage texts, in order."""
    from mmbright_core.data.sources import open_source

    data = open_source("demo").task(1, "biology")
    return [q.text for q in data.queries], [d.text for d in data.corpus]


def main() -> None:
    """Save the PyLate folder and PyLate's vectors and top 10."""
    from importlib.metadata import version

    import torch
    from pylate import models
    from pylate.scores import colbert_scores
    from tiny_hf import tokenizer
    from transformers import BertConfig, BertModel

    queries, passages = demo_texts()
    with tempfile.TemporaryDirectory() as base:
        bert = Path(base)
        tok = tokenizer([*queries, *passages, " ".join(SKIPLIST)], max_length=64)
        tok.add_special_tokens({"mask_token": "[MASK]"})
        torch.manual_seed(0)
        config = BertConfig(
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            vocab_size=len(tok),
            pad_token_id=tok.pad_token_id,
            max_position_embeddings=128,
        )
        BertModel(config).save_pretrained(bert)
        tok.save_pretrained(bert)
        made = models.ColBERT(
            str(bert),
            device="cpu",
            embedding_size=8,
            query_length=12,
            document_length=24,
            skiplist_words=SKIPLIST,
        )
        shutil.rmtree(FOLDER, ignore_errors=True)
        made.save(str(FOLDER), create_model_card=False)
    model = models.ColBERT(str(FOLDER), device="cpu")
    query_vectors = model.encode(queries, is_query=True, convert_to_numpy=True)
    passage_vectors = model.encode(passages, is_query=False, convert_to_numpy=True)
    pad = torch.nn.utils.rnn.pad_sequence
    qs = [torch.from_numpy(v) for v in query_vectors]
    ps = [torch.from_numpy(v) for v in passage_vectors]
    scores = colbert_scores(
        pad(qs, batch_first=True),
        pad(ps, batch_first=True),
        queries_mask=pad([torch.ones(len(v)) for v in qs], batch_first=True),
        documents_mask=pad([torch.ones(len(v)) for v in ps], batch_first=True),
    )
    np.savez_compressed(
        GOLDEN,
        queries=np.concatenate(query_vectors),
        queries_lengths=np.array([len(v) for v in query_vectors]),
        passages=np.concatenate(passage_vectors),
        passages_lengths=np.array([len(v) for v in passage_vectors]),
        top10=torch.topk(scores.float(), 10, dim=1).indices.numpy(),
        versions=np.array([f"{name} {version(name)}" for name in ("pylate", "torch")]),
    )


if __name__ == "__main__":
    main()
