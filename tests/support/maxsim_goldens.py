"""Golden MaxSim rankings, as PyLate 1.6.0 and colpali-engine 0.3.18 score the same vectors.

Run once where ``pylate==1.6.0`` and ``colpali-engine==0.3.18`` import beside torch and
transformers (they pin sentence-transformers 5.3 and torch below 2.14, so they cannot join the
package's ``dev`` extra; installed with ``pip install --no-deps`` into a separate virtual
environment, their scoring functions run on the same torch)::

    python tests/support/maxsim_goldens.py [OUT.npz]

It builds three tiny random-weight multi-vector encoders from their configurations (seeded):
a ColBERT as PyLate defines it (a BERT, a linear projection of every token, L2-normalised
rows), and transformers' ``ColPaliForRetrieval`` and ``ColQwen2ForRetrieval``. Each encodes
random token ids of random lengths as queries and documents; the token vectors (padding
dropped) and the top 10 documents per query by the upstream scoring are written to
:data:`GOLDEN` (or ``OUT.npz``): PyLate's ``colbert_scores`` for the ColBERT,
colpali-engine's ``BaseVisualRetrieverProcessor.score_multi_vector`` for the other two. The
tests rank the stored vectors with the package's MaxSim and compare the top 10.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

GOLDEN = Path(__file__).parent / "samples" / "maxsim_goldens.npz"
MODELS = ("colbert", "colpali", "colqwen2")
QUERIES, DOCUMENTS, DIM = 6, 40, 16
_TEXT = {
    "hidden_size": 16,
    "intermediate_size": 32,
    "num_hidden_layers": 1,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 8,
    "vocab_size": 64,
}


def encoder(kind: str) -> Any:
    """Return a seeded tiny encoder of ``kind``: token ids and mask -> ``(n, tokens, DIM)``."""
    import torch
    import transformers as tf

    torch.manual_seed(0)
    if kind == "colbert":
        bert = tf.BertModel(
            tf.BertConfig(
                **{key: _TEXT[key] for key in ("hidden_size", "intermediate_size", "vocab_size")},
                num_hidden_layers=1,
                num_attention_heads=2,
            )
        ).eval()
        projection = torch.nn.Linear(16, DIM, bias=False)

        def colbert(ids: Any, mask: Any) -> Any:
            tokens = projection(bert(input_ids=ids, attention_mask=mask).last_hidden_state)
            return torch.nn.functional.normalize(tokens, dim=-1) * mask.unsqueeze(-1)

        return colbert
    if kind == "colpali":
        vision = {"model_type": "siglip_vision_model", "hidden_size": 16}
        vision |= {"intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
        config = tf.ColPaliConfig(
            vlm_config=tf.PaliGemmaConfig(
                text_config={"model_type": "gemma", **_TEXT},
                vision_config={**vision, "image_size": 28, "patch_size": 14},
                projection_dim=16,
            ),
            embedding_dim=DIM,
        )
        model = tf.ColPaliForRetrieval(config).eval()
    else:
        rope = {"type": "mrope", "mrope_section": [1, 1, 2]}
        config = tf.ColQwen2Config(
            vlm_config=tf.Qwen2VLConfig(
                text_config={"model_type": "qwen2_vl_text", **_TEXT, "rope_scaling": rope},
                vision_config={"depth": 1, "embed_dim": 16, "hidden_size": 16, "num_heads": 2},
            ),
            embedding_dim=DIM,
        )
        model = tf.ColQwen2ForRetrieval(config).eval()
    return lambda ids, mask: model(input_ids=ids, attention_mask=mask).embeddings


def vectors(kind: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Return ``kind``'s query and document token vectors (padding dropped), float32."""
    import torch

    encode = encoder(kind)
    generator = torch.Generator().manual_seed(1)

    def encoded(count: int, longest: int) -> list[np.ndarray]:
        lengths = torch.randint(3, longest + 1, (count,), generator=generator)
        ids = torch.randint(4, 64, (count, longest), generator=generator)
        mask = (torch.arange(longest) < lengths.unsqueeze(1)).long()
        with torch.inference_mode():
            tokens = encode(ids, mask).float().numpy()
        return [tokens[row, : int(n)].copy() for row, n in enumerate(lengths)]

    return encoded(QUERIES, 8), encoded(DOCUMENTS, 20)


def upstream_top10(kind: str, queries: list[np.ndarray], documents: list[np.ndarray]) -> Any:
    """Return the upstream library's top 10 document positions per query."""
    import torch

    qs = [torch.from_numpy(q) for q in queries]
    ds = [torch.from_numpy(d) for d in documents]
    if kind == "colbert":
        from pylate.scores import colbert_scores

        pad = torch.nn.utils.rnn.pad_sequence
        qmask = pad([torch.ones(len(q)) for q in qs], batch_first=True)
        dmask = pad([torch.ones(len(d)) for d in ds], batch_first=True)
        scores = colbert_scores(
            pad(qs, batch_first=True),
            pad(ds, batch_first=True),
            queries_mask=qmask,
            documents_mask=dmask,
        )
    else:
        from colpali_engine.utils.processing_utils import BaseVisualRetrieverProcessor

        scores = BaseVisualRetrieverProcessor.score_multi_vector(qs, ds, device="cpu")
    return torch.topk(scores.float(), 10, dim=1).indices.numpy()


def main(out: Path = GOLDEN) -> None:
    """Write every model's vectors and upstream top 10 to ``out``."""
    from importlib.metadata import version

    arrays: dict[str, np.ndarray] = {}
    for kind in MODELS:
        queries, documents = vectors(kind)
        for role, tokens in (("queries", queries), ("documents", documents)):
            arrays[f"{kind}/{role}"] = np.concatenate(tokens)
            arrays[f"{kind}/{role}_lengths"] = np.array([len(t) for t in tokens])
        arrays[f"{kind}/top10"] = upstream_top10(kind, queries, documents)
    arrays["versions"] = np.array(
        [f"{name} {version(name)}" for name in ("pylate", "colpali-engine", "torch")]
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)  # type: ignore[arg-type]


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else GOLDEN)
