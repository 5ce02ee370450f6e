"""Tiny local stand-ins of hub-code models: folders that load only with trust_remote_code.

Each folder holds the code files of ``tests/support/hub_code/`` beside a ``config.json`` whose
``auto_map`` names them (or, for GME, a ``modules.json`` naming its module), exactly the
layout of a hub repository with its own code: transformers and sentence-transformers then
import that code only when ``trust_remote_code=True`` is passed.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pixel_goldens import write_config

CODE = Path(__file__).parent / "hub_code"


def hub_model(folder: Path, architecture: str, auto: str = "AutoModel", **config: Any) -> Path:
    """Save the stand-in ``architecture`` of ``hub_code/modeling_tiny.py`` with seeded weights.

    ``auto`` is the transformers auto class that ``auto_map`` maps to it (``AutoModel``, or
    ``AutoModelForSequenceClassification`` for M2).
    """
    import torch
    import transformers
    from transformers import AutoConfig

    folder.mkdir(parents=True, exist_ok=True)
    for name in ("configuration_tiny.py", "modeling_tiny.py"):
        shutil.copy(CODE / name, folder / name)
    auto_map = {
        "AutoConfig": "configuration_tiny.TinyConfig",
        auto: f"modeling_tiny.{architecture}",
    }
    record = {"model_type": "tiny_hub", "architectures": [architecture], "auto_map": auto_map}
    (folder / "config.json").write_text(json.dumps({**record, **config}))
    if architecture == "TinyBgeVl":  # its set_processor loads BGE-VL's (CLIP's) processor
        write_config(folder, "clip")
    torch.manual_seed(0)
    loaded = AutoConfig.from_pretrained(folder, trust_remote_code=True)
    factory = getattr(transformers, auto)
    factory.from_config(loaded, trust_remote_code=True).save_pretrained(folder)
    return folder


def nomic_pair(root: Path, texts: Iterable[str]) -> tuple[Path, Path]:
    """Save Nomic-like text (with a tokenizer) and vision (with a processor) stand-ins."""
    from tiny_hf import tokenizer
    from transformers import CLIPImageProcessor

    tok = tokenizer(texts, max_length=8192)
    text = hub_model(root / "text", "TinyNomicText", vocab_size=len(tok))
    tok.save_pretrained(text)
    vision = hub_model(root / "vision", "TinyNomicVision")
    CLIPImageProcessor(
        size={"shortest_edge": 8}, crop_size={"height": 8, "width": 8}
    ).save_pretrained(vision)
    return text, vision


def m2_pair(root: Path, texts: Iterable[str]) -> tuple[Path, Path]:
    """Save an M2-like sequence-classification stand-in and, apart, its BERT-style tokenizer.

    The tokenizer is a second folder, as ``bert-base-uncased`` is a second hub id.
    """
    from tiny_hf import tokenizer

    tok = tokenizer(texts)
    model = hub_model(
        root / "m2", "TinyM2", "AutoModelForSequenceClassification", vocab_size=len(tok)
    )
    tok.save_pretrained(root / "m2-tokenizer")
    return model, root / "m2-tokenizer"


def gme_folder(folder: Path) -> Path:
    """Save a sentence-transformers folder whose one module is ``hub_code/custom_st.py``.

    Beside it lies Qwen2-VL's preprocessor configuration, which GME's repository holds.
    """
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(CODE / "custom_st.py", folder / "custom_st.py")
    modules = [{"idx": 0, "name": "0", "path": "", "type": "custom_st.TinyGme"}]
    (folder / "modules.json").write_text(json.dumps(modules))
    spec = importlib.util.spec_from_file_location("tiny_custom_st", CODE / "custom_st.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.TinyGme().save(str(folder))
    write_config(folder, "qwen2-vl")
    return folder
