"""A tiny open_clip architecture (random weights), registered by the ``tiny_clip`` fixture."""

from __future__ import annotations

TINY_CLIP = "mmbright-test-tiny"
TINY_CLIP_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}
