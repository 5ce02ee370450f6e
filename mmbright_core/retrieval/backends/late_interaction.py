"""Late-interaction retrieval: ColBERT as PyLate saves it, ColPali and ColQwen2 as transformers.

Two kinds of multi-vector model, told apart by their folder. A PyLate model folder (tasks 1, 2
and 4) is a sentence-transformers folder: the transformer at its root, one or more ``Dense``
projections (``modules.json``; each a folder with ``config.json`` and ``model.safetensors``
holding ``linear.weight``), and ``config_sentence_transformers.json`` with the ColBERT settings.
Texts are encoded as PyLate's ``ColBERT.encode`` encodes them (pylate 1.6.0,
``pylate/models/colbert.py``): tokenised to one token less than the query or document length,
the prefix token (``[Q] `` / ``[D] ``) inserted after the first; queries padded to their length
with the mask token (query expansion), attended to where ``attend_to_expansion_tokens`` says,
every position kept; documents without padding and without the skiplist's tokens
(punctuation); every kept token projected and L2-normalised. A folder whose ``config.json``
names ``colpali`` or ``colqwen2`` runs through transformers (:mod:`.colvision`): Task 3, the
query's text against every image's patches.

A query's score of a document is their MaxSim, exact, in float32
(:mod:`mmbright_core.retrieval.search.maxsim`). Document token vectors go through the
content-keyed embedding cache, one zero-padded row per document (a passage keyed by its text,
an image by its bytes), and are scored a block at a time, so a domain's tokens are never all in
memory. Task 4 pairs share their passage's row.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mmbright_core.data.images import decode_image
from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.colvision import ColVision, model_type
from mmbright_core.retrieval.backends.hf_model import load_torch, load_transformers
from mmbright_core.retrieval.backends.sentence_models import cannot_load, model_identity
from mmbright_core.retrieval.base import check_k, check_task, model_label, passage_id
from mmbright_core.retrieval.cache.store import (
    EmbeddingCache,
    check_dtype,
    content_key,
    default_cache_dir,
)
from mmbright_core.retrieval.search.groups import Groups
from mmbright_core.retrieval.search.index import doc_positions, excluded_indices
from mmbright_core.retrieval.search.maxsim import maxsim_top_k, pack_tokens
from mmbright_core.task_table import TEXT_CORPUS_TASKS, tasks_where

#: The tasks a ColPali or ColQwen2 model runs: those ranking the domain's images.
IMAGE_CORPUS_TASKS = tasks_where(lambda t: t.corpus == "images")

if TYPE_CHECKING:
    from mmbright_core.data.images import ImageSource
    from mmbright_core.retrieval.base import RebuildContext, RunConfig
    from mmbright_core.types import TaskData

_SETTINGS_FILE = "config_sentence_transformers.json"
_DENSE = "pylate.models.Dense.Dense"


class LateInteractionRetriever:
    """MaxSim between the token vectors of a PyLate ColBERT model's queries and passages.

    Args:
        model: A PyLate model folder, or a hub name in the local cache.
        revision: The model revision, for hub names.
        query_length: Query tokens, expansion included (default: the model's own).
        document_length: Document tokens at most (default: the model's own).
        batch_size: Texts per encoder call.
        device: Torch device (default: cpu).
        cache_dir: Embedding cache root (default: ``$MMBRIGHT_CACHE`` or ``~/.cache/mmbright``).
        cache_dtype: How cached token vectors are stored: ``float32`` or ``float16`` (half the
            disk; scores are computed in float32 either way).
    """

    name = "late-interaction"

    def __init__(
        self,
        model: str,
        revision: str | None = None,
        query_length: int | None = None,
        document_length: int | None = None,
        batch_size: int = 32,
        device: str | None = None,
        cache_dir: str | None = None,
        cache_dtype: str = "float32",
    ) -> None:
        self.model = str(model)
        self.local = Path(self.model).expanduser().exists()
        self.revision = revision
        self.batch_size, self.device = batch_size, device or "cpu"
        self.cache_root = default_cache_dir(cache_dir)
        self.cache_dtype = check_dtype(cache_dtype)
        self.folder = self._folder()
        kind = model_type(self.folder)
        self.vision = (
            None if kind is None else ColVision(self.folder, kind, self.device, batch_size)
        )
        self.tasks: frozenset[int] = TEXT_CORPUS_TASKS
        if self.vision is not None:
            self.tasks = IMAGE_CORPUS_TASKS
            self.config: dict[str, Any] = {"architecture": kind}
            self.query_length = query_length
            self.document_length = document_length or self.vision.width()
        else:
            self.config = _colbert_settings(self.folder)
            self.query_length = query_length or int(self.config["query_length"])
            self.document_length = document_length or int(self.config["document_length"])
        for option, value in (
            ("query_length", self.query_length or 2),
            ("document_length", self.document_length),
        ):
            if value < 2:
                raise InputError(
                    f"option {option} is too small", expected="2 or more tokens", found=str(value)
                )
        self._loaded: tuple[Any, Any, list[Any]] | None = None

    def _folder(self) -> Path:
        if self.local:
            return Path(self.model).expanduser()
        hub = load_transformers().utils.hub
        try:
            found = hub.cached_file(self.model, "config.json", revision=self.revision)
        except OSError as err:
            raise cannot_load("the late-interaction model", self.model, err) from err
        return Path(found).parent

    def label(self) -> str:
        """Return the model's last path component."""
        return model_label(self.model, self.local)

    def settings(self) -> dict[str, Any]:
        """Return the model's identity and the ColBERT settings its token vectors depend on."""
        colbert = ("query_prefix", "document_prefix", "attend_to_expansion_tokens")
        return {
            **model_identity(self.model, self.revision, self.local, self.document_length),
            "query_length": self.query_length,
            **{
                key: value
                for key, value in self.config.items()
                if key in (*colbert, "architecture")
            },
            "scoring": "maxsim",
            "cache_dtype": self.cache_dtype,
        }

    def _load(self) -> tuple[Any, Any, list[Any]]:
        if self._loaded is None:
            transformers, torch = load_transformers(), load_torch()
            tokenizer = transformers.AutoTokenizer.from_pretrained(self.folder)
            encoder = transformers.AutoModel.from_pretrained(self.folder).to(self.device).eval()
            layers = [
                _dense(torch, self.folder / path).to(self.device)
                for path in _dense_paths(self.folder)
            ]
            self._loaded = (tokenizer, encoder, layers)
        return self._loaded

    def encode(self, texts: list[str], is_query: bool) -> list[np.ndarray]:
        """Return each text's kept token vectors, L2-normalised float32 (PyLate's ``encode``)."""
        torch = load_torch()
        tokenizer, encoder, layers = self._load()
        prefix = self.config["query_prefix" if is_query else "document_prefix"]
        length = self.query_length if is_query and self.query_length else self.document_length
        pad = (
            tokenizer.mask_token_id
            if tokenizer.mask_token_id is not None
            else tokenizer.eos_token_id
        )
        out: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            batch = tokenizer(
                texts[start : start + self.batch_size],
                padding="max_length" if is_query else True,
                truncation=True,
                max_length=length - 1 if prefix else length,
                return_tensors="pt",
            )
            ids, mask = batch["input_ids"], batch["attention_mask"]
            ids = torch.where(mask.bool(), ids, pad)  # PyLate pads with the mask token
            if prefix:
                ids = _insert(torch, ids, tokenizer.convert_tokens_to_ids(prefix))
                mask = _insert(torch, mask, 1)
            if is_query and self.config["attend_to_expansion_tokens"]:
                mask = torch.ones_like(mask)
            with torch.inference_mode():
                tokens = encoder(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device)
                ).last_hidden_state
                for layer in layers:
                    tokens = layer(tokens)
                tokens = torch.nn.functional.normalize(tokens.float(), p=2, dim=-1).cpu()
            keep = (
                torch.ones_like(mask, dtype=torch.bool)
                if is_query
                else mask.bool() & ~torch.isin(ids, self._skiplist(tokenizer))
            )
            out.extend(tokens[row][keep[row]].numpy() for row in range(len(ids)))
        return out

    def _skiplist(self, tokenizer: Any) -> Any:
        torch = load_torch()
        words = self.config["skiplist_words"]
        return torch.tensor(
            [tokenizer.convert_tokens_to_ids(word) for word in words], dtype=torch.long
        )

    def _cache(self) -> EmbeddingCache:
        keys = {"revision", "checkpoint_sha256", "truncation"} | (
            set() if self.local else {"model"}
        )
        settings = {key: value for key, value in self.settings().items() if key in keys}
        encoder = {"encoder": "pylate-colbert", "prefix": self.config.get("document_prefix")}
        if self.vision is not None:
            encoder = {"encoder": "transformers", "architecture": self.vision.kind}
        return EmbeddingCache(
            self.cache_root,
            {**encoder, **settings},
            dtype=self.cache_dtype,
        )

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        """Rank passages (tasks 1-2) or pairs by their passage's text (Task 4) by MaxSim.

        Args:
            data: The task's data for one domain.
            source: Unused (text only).
            k: How many documents to keep per query, after exclusions.

        Returns:
            query_id -> doc_id -> MaxSim score.
        """
        check_task(self, data.task)
        check_k(k)
        query_ids = [q.query_id for q in data.queries]
        if not data.corpus or not query_ids:
            return {query_id: {} for query_id in query_ids}
        if self.vision is not None:
            return self._retrieve_images(data, _image_source(data, source), k)
        groups = Groups.from_keys([passage_id(d.doc_id) for d in data.corpus])
        texts = [data.corpus[i].text for i in groups.members[groups.offsets[:-1]]]
        keys = [content_key(text) for text in texts]
        cache, width = self._cache(), self.document_length

        def rows(units: np.ndarray) -> np.ndarray:
            return cache.encode(
                [texts[u] for u in units.tolist()],
                [keys[u] for u in units.tolist()],
                lambda chunk: pack_tokens(self.encode(chunk, is_query=False), width),
                self.batch_size,
                desc="passages",
            )

        queries = self.encode([q.text for q in data.queries], is_query=True)
        return self._ranked(data, queries, rows, k, groups)

    def _retrieve_images(
        self, data: TaskData, source: ImageSource, k: int
    ) -> dict[str, dict[str, float]]:
        # Task 3: the query's text against every image's patches (the model cards' usage).
        assert self.vision is not None
        vision, cache, width = self.vision, self._cache(), self.document_length
        paths = [d.doc_id for d in data.corpus]

        def image(path: str) -> Any:
            return decode_image(source.document_image_bytes(data.domain, path), path)

        def rows(units: np.ndarray) -> np.ndarray:
            asked = [paths[u] for u in units.tolist()]
            raw = [source.document_image_bytes(data.domain, path) or b"" for path in asked]
            return cache.encode(
                asked,
                [content_key(content) for content in raw],
                lambda chunk: pack_tokens(vision.encode_images([image(p) for p in chunk]), width),
                self.batch_size,
                desc="images",
            )

        queries = vision.encode_queries([q.text for q in data.queries])
        return self._ranked(data, queries, rows, k, None)

    def _ranked(
        self,
        data: TaskData,
        queries: list[np.ndarray],
        rows: Callable[[np.ndarray], np.ndarray],
        k: int,
        groups: Groups | None,
    ) -> dict[str, dict[str, float]]:
        query_ids = [q.query_id for q in data.queries]
        doc_ids = np.array([d.doc_id for d in data.corpus])
        exclude = excluded_indices(query_ids, data.excluded, doc_positions(doc_ids.tolist()))
        found = maxsim_top_k(
            queries,
            rows,
            doc_ids,
            k,
            exclude,
            groups,
            width=self.document_length,
            device=self.device,
        )
        return dict(zip(query_ids, found, strict=True))


def _image_source(data: TaskData, source: ImageSource | None) -> ImageSource:
    if source is None:
        raise InputError(
            f"task {data.task} needs image bytes", found="no source", hint="Pass the source."
        )
    return source


def _insert(torch: Any, values: Any, token: int) -> Any:
    # PyLate's insert_prefix_token: the prefix goes after the first token (the [CLS]).
    column = torch.full((values.shape[0], 1), token, dtype=values.dtype)
    return torch.cat([values[:, :1], column, values[:, 1:]], dim=1)


def _colbert_settings(folder: Path) -> dict[str, Any]:
    path = folder / _SETTINGS_FILE
    try:
        given = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(
            "not a PyLate ColBERT model folder",
            source=str(path),
            found=type(err).__name__,
            hint="Give the folder a PyLate model was saved to (with its "
            "config_sentence_transformers.json).",
        ) from err
    defaults = {
        "query_prefix": "[Q] ",
        "document_prefix": "[D] ",
        "query_length": 32,
        "document_length": 180,
        "attend_to_expansion_tokens": False,
        "skiplist_words": [],
    }
    return {
        key: given.get(key, value) if given.get(key) is not None else value
        for key, value in defaults.items()
    }


def _dense_paths(folder: Path) -> list[str]:
    modules = json.loads((folder / "modules.json").read_text(encoding="utf-8"))
    return [m["path"] for m in modules if m.get("type") == _DENSE]


def _dense(torch: Any, folder: Path) -> Any:
    from safetensors.torch import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    activation = config.get("activation_function", "torch.nn.modules.linear.Identity")
    if activation != "torch.nn.modules.linear.Identity" or config.get("use_residual"):
        raise InputError(
            "unsupported PyLate projection",
            source=str(folder),
            expected="a linear projection without activation or residual",
            found=f"activation {activation}, residual {bool(config.get('use_residual'))}",
        )
    layer = torch.nn.Linear(
        config["in_features"], config["out_features"], bias=config.get("bias", False)
    )
    layer.load_state_dict(
        {k.removeprefix("linear."): v for k, v in load_file(folder / "model.safetensors").items()}
    )
    return layer.eval()


def rebuild(config: RunConfig, options: dict[str, Any], context: RebuildContext) -> dict[str, Any]:
    """Return the options that rebuild a run's ``late-interaction`` from its configuration."""
    return {
        "model": config.model,
        "revision": config.revision,
        "query_length": options.get("query_length"),
        "document_length": config.truncation,
        "cache_dtype": options["cache_dtype"],
        "cache_dir": context.cache_dir,
        "device": context.device,
    }
