"""Each image preset's image preprocessing is shown by ``mmbright models`` and docs/models.md."""

from __future__ import annotations

import json

from mmbright_core.cli import main
from mmbright_core.retrieval.catalogue.doc import models_markdown
from mmbright_core.retrieval.catalogue.presets import load_catalogue

PIL_PRESETS = {"clip", "siglip", "nomic-vision"}
"""The presets whose processors this package loads on PIL's path, as transformers 4.51.3."""
HUB_PIL_PRESETS = {"bge-vl-base", "bge-vl-large", "gme-qwen2-vl-2b", "gme-qwen2-vl-7b"}
"""The presets whose hub code loads a processor that this package rebuilds on PIL's path."""


def test_models_json_names_each_image_presets_preprocessing(capsys):
    assert main(["models", "--format", "json"]) == 0
    records = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    for name, record in records.items():
        text = record["image_preprocessing"]
        if record["fusion"] == "text":
            assert text is None, name
        elif name in PIL_PRESETS | HUB_PIL_PRESETS:
            assert "PIL's path, as transformers 4.51.3" in text, name
        else:
            assert text and "as transformers 4.51.3" not in text, name
    assert "set_processor loads" in records["bge-vl-large"]["image_preprocessing"]
    assert "pixel bounds" in records["gme-qwen2-vl-7b"]["image_preprocessing"]


def test_models_table_has_an_images_column(capsys):
    assert main(["models"]) == 0
    header, *rows = capsys.readouterr().out.partition("\n\n")[0].splitlines()
    column = header.split().index("images")
    shown = {row.split()[0]: row.split()[column] for row in rows}
    pil = {name for name, label in shown.items() if label == "pil"}
    assert pil == PIL_PRESETS | HUB_PIL_PRESETS
    assert shown["bm25"] == "-" and shown["jina-clip"] == "model-code"
    assert shown["gme-qwen2-vl-7b"] == "pil"


def test_docs_models_md_says_each_image_presets_preprocessing():
    page = models_markdown()
    for preset in load_catalogue():
        section = page.split(f"### `{preset.name}` ")[1].split("\n### ")[0]
        assert ("- image preprocessing: " in section) == (preset.fusion != "text"), preset.name
