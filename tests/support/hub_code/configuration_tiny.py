"""The configuration of the tiny stand-ins of hub-code models (copied into model folders)."""

from transformers import PretrainedConfig


class TinyConfig(PretrainedConfig):
    """Sizes of a tiny stand-in: ``dim`` outputs; ``max_chars`` the longest text it takes."""

    model_type = "tiny_hub"

    def __init__(self, dim: int = 8, vocab_size: int = 64, max_chars: int = 100_000, **kwargs):
        self.dim, self.vocab_size, self.max_chars = dim, vocab_size, max_chars
        super().__init__(**kwargs)
