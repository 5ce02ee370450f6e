"""Models whose own hub code encodes, called as the official harness calls them.

``src/retrievers/task2_multimodal.py`` of the released harness loads four multimodal models
with ``trust_remote_code=True`` and calls into their code; each call is an interface named by
the catalogue preset (``interface``), and each becomes an
:class:`~mmbright_core.retrieval.dual.embedder.Embedder` behind
:class:`~mmbright_core.retrieval.dual.encoder.DualEncoderRetriever` (cache, exclusions, cut, Ray,
attribution where the fusion is linear):

- ``encode-text-image`` (``retrieval_jina_clip``): ``AutoModel`` with the model's
  ``encode_text(texts)`` and ``encode_image(images)``; fusion ``zero-image``
  (:mod:`.remote_towers`);
- ``text-vision-pair`` (``retrieval_nomic_vision``): a text model (mean pooling, layer norm,
  ``search_query: `` before queries, passages cut at 8,000 characters) and an image model
  (its first token), each ``AutoModel`` with hub code; fusion ``normalised-mean``
  (:mod:`.remote_towers`);
- ``encode-images-text`` (``retrieval_bge_vl``): ``AutoModel`` with ``set_processor(model)``
  and ``encode(images=PATH, text=TEXT)`` (its images are read from files), texts cut at 150
  characters and cut shorter while the model raises ``size of tensor``; fusion ``joint``
  (:mod:`.remote_bge`);
- ``st-dicts`` (``retrieval_gme_qwen2_vl``): a sentence-transformers model with hub code,
  ``encode`` of ``{"text": ..., "image": ...}`` dicts, texts cut at 4,000 characters,
  normalised; fusion ``joint`` (:mod:`.remote_st`);
- ``encode-instruction`` (``retrieval_reasonir``, ``src/retrievers/task1_text.py``): the
  model's ``encode(texts, instruction=, batch_size=, max_length=)``; text only
  (:mod:`.remote_text`);
- ``sentence-embedding`` (``retrieval_m2``): ``AutoModelForSequenceClassification`` with a
  second hub id's tokenizer, its output's ``sentence_embedding``; text only
  (:mod:`.remote_text`).

Nothing here loads without ``trust_remote_code=True``, which only ``--trust-remote-code``
gives (:mod:`.remote_code`).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backends.hub_code.bge import EncodeImagesText
from mmbright_core.retrieval.backends.hub_code.shared import HUB_OPTIONS, HubModel
from mmbright_core.retrieval.backends.hub_code.st import SentenceDicts
from mmbright_core.retrieval.backends.hub_code.text import EncodeInstruction, SentenceEmbedding
from mmbright_core.retrieval.backends.hub_code.towers import EncodeTextImage, TextVisionPair
from mmbright_core.retrieval.dual.encoder import DualOptions
from mmbright_core.retrieval.dual.encoders import ONE_CALL
from mmbright_core.retrieval.search.index import IndexKind


class Interface(NamedTuple):
    """An interface's embedder, and the options of its recipe."""

    embedder: type[HubModel]
    options: tuple[str, ...]


INTERFACES: dict[str, Interface] = {
    "encode-text-image": Interface(EncodeTextImage, ()),
    "text-vision-pair": Interface(
        TextVisionPair,
        (
            "image_model",
            "pooling",
            "max_length",
            "query_instruction",
            "document_instruction",
            "document_char_limit",
            "layer_norm",
        ),
    ),
    "encode-images-text": Interface(EncodeImagesText, ("text_char_limit",)),
    "st-dicts": Interface(SentenceDicts, ("text_char_limit", "max_length")),
    "encode-instruction": Interface(
        EncodeInstruction, ("max_length", "query_instruction", "document_instruction", "one_call")
    ),
    "sentence-embedding": Interface(
        SentenceEmbedding, ("tokenizer", "max_length", "query_instruction")
    ),
}
"""Each interface the ``remote`` backend calls: its embedder and the options of its recipe."""


def hub_embedder(interface: str, model: str, options: dict[str, Any]) -> Any:
    """Build the embedder of ``interface`` for ``model`` from the factory's options.

    Raises:
        UnknownNameError: An interface the ``remote`` backend does not call.
        InputError: An option the interface does not take.
    """
    common = {key: options.pop(key) for key in HUB_OPTIONS}
    if interface not in INTERFACES:
        raise UnknownNameError("remote interface", interface, INTERFACES)
    embedder, taken = INTERFACES[interface]
    given = {k: v for k, v in options.items() if v not in (None, "")}
    extra = sorted(set(given) - set(taken))
    if extra:
        raise InputError(
            f"the {interface} interface takes no {', '.join(extra)}",
            found=str(model),
            hint=f"It takes {', '.join(taken) or 'no further options'}.",
        )
    return embedder(model, interface=interface, **given, **common)


def refuse_untrusted(model: str) -> InputError:
    """Return the refusal of a ``remote`` run without ``trust_remote_code``."""
    return InputError(
        "the remote backend runs a model's own code from the hub",
        found=f"--retriever hub-code --model {model} without --trust-remote-code",
        hint="Add --trust-remote-code to run it.",
    )


def hub_code_retriever(
    model: str,
    interface: str,
    trust_remote_code: bool = False,
    revision: str | None = None,
    dtype: str = "float32",
    batch_size: int = 32,
    device: str | None = None,
    image_policy: str = "first",
    cache_dir: str | None = None,
    index: IndexKind = "flat",
    cache_dtype: str = "float32",
    image_model: str | None = None,
    pooling: str | None = None,
    max_length: int | None = None,
    query_instruction: str | None = None,
    document_instruction: str | None = None,
    document_char_limit: int | None = None,
    layer_norm: bool | None = None,
    text_char_limit: int | None = None,
    tokenizer: str | None = None,
    one_call: bool | None = None,
) -> Any:
    """Build the ``remote`` retriever: a model's own hub code under the package's protocol.

    Args:
        model: A hub id or a local folder holding the model and its code.
        interface: The call into its code (one of :data:`INTERFACES`).
        trust_remote_code: Must be True: this backend runs nothing else.
        revision: The hub revision (it pins the code as well as the weights).
        dtype: Weights' dtype; vectors are float32.
        batch_size: Items per call.
        device: Torch device (default: ``cuda`` when available, else ``cpu``).
        image_policy: Which query images are read (``first``: the released ``images[0]``).
        cache_dir: Embedding cache root.
        index: Vector index kind.
        cache_dtype: ``float32`` or ``float16``.
        image_model: ``text-vision-pair``: the image model beside the text model.
        pooling: ``text-vision-pair``: the text model's pooling (Nomic's ``mean``).
        max_length: Token truncation (``text-vision-pair``, ``st-dicts``, and the text
            interfaces, whose default is the official 32,768).
        query_instruction: Put before (``encode-instruction``: handed with) every query.
        document_instruction: Put before (``encode-instruction``: handed with) every passage.
        document_char_limit: ``text-vision-pair``: cut passages at this many characters.
        layer_norm: ``text-vision-pair``: layer-normalise the pooled text vector.
        text_char_limit: ``encode-images-text`` and ``st-dicts``: the character cut.
        tokenizer: ``sentence-embedding``: the tokenizer's hub id or folder.
        one_call: ``encode-instruction``: hand the model every text the cache lacks in one
            call (its own batches of ``batch_size`` then span them all, as ReasonIR's official
            call over the whole corpus does); otherwise ``batch_size`` texts per call.

    Raises:
        InputError: No ``trust_remote_code``, a forbidding operator, or a bad option.
    """
    if not trust_remote_code:
        raise refuse_untrusted(model)
    options = {"revision": revision, "dtype": dtype, "batch_size": batch_size, "device": device}
    options |= {"image_model": image_model, "pooling": pooling, "max_length": max_length}
    options |= {"query_instruction": query_instruction, "document_char_limit": document_char_limit}
    options |= {"document_instruction": document_instruction, "layer_norm": layer_norm}
    options |= {"text_char_limit": text_char_limit, "tokenizer": tokenizer, "one_call": one_call}
    embedder = hub_embedder(interface, str(model), options)
    call = ONE_CALL if one_call else batch_size
    store = DualOptions(image_policy, cache_dir, index, cache_dtype, call)
    return store.build(embedder, "hub-code")
