"""Tiny stand-ins of hub code: the calls of Jina-CLIP, BGE-VL, Nomic's two models, ReasonIR, M2.

The files are copied into a model folder whose ``config.json`` names them in ``auto_map``, so
transformers loads them only with ``trust_remote_code=True``, as it loads the hub's code.
Texts are featurised by their bytes (64 buckets), images by their 8x8 grey pixels.
"""

import numpy as np
import torch
from PIL import Image
from transformers import AutoImageProcessor, PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from .configuration_tiny import TinyConfig


def text_features(texts):
    """Return one 64-bucket byte count per text."""
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for row, text in enumerate(texts):
        for byte in text.encode("utf-8"):
            out[row, byte % 64] += 1.0
    return torch.from_numpy(out)


def image_features(images):
    """Return each image's 8x8 grey pixels in [0, 1]; a path is opened first."""
    opened = [Image.open(im) if isinstance(im, str) else im for im in images]
    pixels = [np.asarray(im.convert("L").resize((8, 8)), dtype=np.float32) / 255 for im in opened]
    return torch.from_numpy(np.stack(pixels).reshape(len(opened), 64))


class TinyTowers(PreTrainedModel):
    """A text tower and an image tower: two linear maps of the features."""

    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.text = torch.nn.Linear(64, config.dim, bias=False)
        self.image = torch.nn.Linear(64, config.dim, bias=False)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, torch.nn.Linear):
            module.weight.data.normal_(0.0, 1.0)


class TinyJinaClip(TinyTowers):
    """Jina-CLIP's calls: ``encode_text(sentences)`` and ``encode_image(images)`` (arrays)."""

    def encode_text(self, sentences):
        return self.text(text_features(sentences)).detach().numpy()

    def encode_image(self, images):
        return self.image(image_features(images)).detach().numpy()


class TinyProcessor:
    """What a hub model's processor holds here: the image processor loaded from its folder."""

    def __init__(self, name, **options):
        self.image_processor = AutoImageProcessor.from_pretrained(name, **options)


class TinyBgeVl(TinyTowers):
    """BGE-VL's calls: ``set_processor(name)``, then ``encode(images=PATH(S), text=TEXT(S))``.

    ``set_processor`` loads the folder's processor into ``processor``, as BGE-VL's does with
    transformers' default backend. A path or a text may come alone or in a list, as the hub
    code takes them (Task 2's official call passes strings, Task 4's lists of one). A text
    longer than ``max_chars`` raises what an overlong CLIP text raises.
    """

    processor_name = None

    def set_processor(self, name):
        self.processor_name = name
        self.processor = TinyProcessor(name)

    def encode(self, images=None, text=None):
        if self.processor_name is None:
            raise RuntimeError("set_processor was not called")
        texts = [text] if isinstance(text, str) else text
        if texts is not None and any(len(t) > self.config.max_chars for t in texts):
            raise RuntimeError("The size of tensor a (80) must match the size of tensor b (77)")
        paths = [images] if isinstance(images, str) else images
        parts = []
        if texts is not None:
            parts.append(self.text(text_features(texts)))
        if paths is not None:
            parts.append(self.image(image_features(paths)))
        return sum(parts)


class TinyNomicText(PreTrainedModel):
    """A text model with hub code: causal token states (the mean of the embeddings so far).

    Each state depends on the tokens before it, so its last token summarises the text, as a
    decoder's does (gte-Qwen's last-token pooling), and its mean pools as Nomic's does.
    """

    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(config.vocab_size, config.dim)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, torch.nn.Embedding):
            module.weight.data.normal_(0.0, 1.0)

    def forward(self, input_ids=None, attention_mask=None, **kwargs):
        states = self.embed(input_ids).cumsum(dim=1)
        positions = torch.arange(1, input_ids.shape[1] + 1, dtype=states.dtype)
        return BaseModelOutput(last_hidden_state=states / positions[None, :, None])


class TinyNomicVision(TinyTowers):
    """Nomic's vision model: ``last_hidden_state`` whose first token is the image's vector."""

    def forward(self, pixel_values=None, **kwargs):
        first = self.image(pixel_values.float().mean(dim=1).flatten(1)[:, :64])
        return BaseModelOutput(last_hidden_state=torch.stack([first, -first], dim=1))


class TinyReasonIr(TinyTowers):
    """ReasonIR's call: ``encode(sentences, instruction=, batch_size=, max_length=)`` (arrays).

    The instruction is encoded with each text; ``max_length`` cuts the characters, so a text
    past it is cut as an overlong one is. The code forms its own batches of ``batch_size``
    over all the texts it is given, longest first (as sentence-transformers' ``encode``
    does), and a text's vector moves with the longest text of its batch, as padding to it
    moves a vector's last bits: a text's vector depends on every text of the call.
    """

    def encode(self, sentences, instruction="", batch_size=256, max_length=512, **kwargs):
        texts = [(instruction + text)[:max_length] for text in sentences]
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        rows = torch.zeros(len(texts), self.config.dim)
        for start in range(0, len(texts), batch_size):
            batch = order[start : start + batch_size]
            padded = max(len(texts[i]) for i in batch)
            rows[batch] = self.text(text_features([texts[i] for i in batch])) + 1e-3 * padded
        return rows.detach().numpy()


class TinyM2(PreTrainedModel):
    """M2-BERT's output: a sequence-classification model returning ``sentence_embedding``.

    Its vector is the mean of the token embeddings over the attention mask, mixed by a linear
    map, from the ids of a BERT-style tokenizer (``token_type_ids`` are taken and ignored).
    """

    config_class = TinyConfig

    def __init__(self, config):
        super().__init__(config)
        self.embed = torch.nn.Embedding(config.vocab_size, config.dim)
        self.mix = torch.nn.Linear(config.dim, config.dim, bias=False)
        self.post_init()

    def _init_weights(self, module):
        if isinstance(module, (torch.nn.Embedding, torch.nn.Linear)):
            module.weight.data.normal_(0.0, 1.0)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **kwargs):
        mask = attention_mask.unsqueeze(-1).float()
        mean = (self.embed(input_ids) * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return {"sentence_embedding": self.mix(mean)}
