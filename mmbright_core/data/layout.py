"""Where MM-BRIGHT lives and how its files are laid out.

Both are described in docs/protocol.md, The benchmark and The data as published.

The dataset is one parquet file per config and domain, ``{config}/{domain}.parquet``, on the
Hugging Face hub or in a local folder with the same layout. This module only declares names;
reading happens in :mod:`mmbright_core.data.sources`.
"""

from __future__ import annotations

from types import MappingProxyType

REPO_ID = "mm-bright/MM-BRIGHT"
"""The Hugging Face dataset repository."""

PINNED_REVISION = "97702ca9ea81cd0a25288e74a9402439550d6bd4"
"""The revision MTEB and the official reproduction script evaluate (docs/protocol.md, The data as
published)."""

DOMAIN_GROUPS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "STEM & Life Sciences": (
            "academia",
            "bioacoustics",
            "bioinformatics",
            "biology",
            "chemistry",
            "earthscience",
            "math",
            "medicalsciences",
            "physics",
        ),
        "Software & Technical": (
            "apple",
            "askubuntu",
            "bitcoin",
            "crypto",
            "gis",
            "quantumcomputing",
            "robotics",
            "salesforce",
        ),
        "Social Sciences & Humanities": (
            "christianity",
            "economics",
            "islam",
            "law",
            "philosophy",
            "psychology",
        ),
        "Applied": ("aviation", "gaming", "pm", "quant", "sustainability", "travel"),
    }
)
"""The paper's four domain groups (docs/protocol.md, The benchmark)."""

DOMAINS: tuple[str, ...] = tuple(sorted(d for group in DOMAIN_GROUPS.values() for d in group))
"""The 29 StackExchange domains, sorted; they are the dataset's splits."""

CONFIGS: MappingProxyType[str, tuple[str, ...]] = MappingProxyType(
    {
        "documents": ("id", "content"),
        "examples": ("id", "query", "gold_ids", "negative_ids", "image_paths", "gold_answers"),
        "examples_multimodal": (
            "id",
            "query",
            "gold_ids",
            "negative_ids",
            "image_paths",
            "gold_answers",
            "positive_images",
            "negative_images",
        ),
        "examples_images": ("path", "bytes"),
        "document_images": ("path", "bytes"),
    }
)
"""Config name -> its published columns (docs/protocol.md, The data as published)."""


def parquet_name(config: str, domain: str) -> str:
    """Return the path of one config's split inside the dataset: ``{config}/{domain}.parquet``."""
    return f"{config}/{domain}.parquet"
