"""Bounded memory when encoding images: one full-size image decoded at a time.

A batch of corpus images used to be decoded whole before its preprocessing, so a batch of 32
large images held 32 full-size pixel buffers (51 legal 4000x4000 PNGs peaked at about 3 GB).
Every image-encoding path now decodes and preprocesses one image at a time into the batch
tensor: counted here by the images alive at once, and measured in a child process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from large_images import TASK3_CHILD, build_large_images
from PIL import Image

import mmbright_core.retrieval.dual.encoder as dual
from mmbright_core.data.image_batches import LazyImages, each_preprocessed
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputTooLargeError
from mmbright_core.retrieval import get_retriever

pytest.importorskip("torch")


class LiveImages:
    """Wraps ``decode_image`` to count the decoded images alive at once (by weak reference)."""

    def __init__(self, decode: Any) -> None:
        self.decode, self.alive, self.most, self.calls = decode, 0, 0, 0

    def __call__(self, data: bytes | None, path: str) -> Image.Image:
        image = self.decode(data, path)
        self.calls += 1
        self.alive += 1
        self.most = max(self.most, self.alive)
        weakref.finalize(image, self._freed)
        return image

    def _freed(self) -> None:
        self.alive -= 1


@pytest.fixture(scope="module")
def many_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Task 3 domain of 40 corpus images (small: the count matters here, not the size)."""
    return build_large_images(tmp_path_factory.mktemp("many-images"), count=40, side=64)


def _decode_with(monkeypatch: pytest.MonkeyPatch, decode: Callable[..., Any]) -> None:
    # The dual encoder decodes its documents', queries' and cached vectors' images in one module.
    monkeypatch.setattr(dual, "decode_image", decode)


def _retriever(kind: str, cache: Path, tiny_clip: str, tiny_hf: dict[str, Path]) -> Any:
    if kind == "clip":
        return get_retriever("clip", model=tiny_clip, pretrained="none", cache_dir=str(cache))
    return get_retriever("hf", model=str(tiny_hf["clip"]), device="cpu", cache_dir=str(cache))


@pytest.mark.parametrize("kind", ["clip", "hf"])
def test_task3_decodes_one_image_at_a_time(
    kind: str,
    many_images: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    tiny_clip: str,
    tiny_hf: dict[str, Path],
) -> None:
    live = LiveImages(dual.decode_image)
    _decode_with(monkeypatch, live)
    source = open_source(str(many_images))
    data = source.task(3, "academia")
    retriever = _retriever(kind, tmp_path, tiny_clip, tiny_hf)
    assert retriever.batch_size == 32
    run = retriever.retrieve(data, source, 10)
    assert all(len(ranked) == 10 for ranked in run.values())
    # 40 corpus images and the 2 query images, each decoded for its encoding, never more
    # than one alive (a batch of 32 decoded whole would hold 32).
    assert live.calls >= 40
    assert live.most == 1


def test_hf_pixels_of_one_image_at_a_time_equal_the_batch_processed_at_once(
    tiny_hf: dict[str, Path],
) -> None:
    from mmbright_core.retrieval.backends.hf_clip import HFClipEmbedder

    embedder = HFClipEmbedder(str(tiny_hf["clip"]), device="cpu")
    images = [Image.new("RGB", (40 + 30 * i, 90 - 10 * i), (50 * i, 90, 200)) for i in range(4)]
    batch = embedder.image_processor(images=images, return_tensors="pt")
    model = embedder._load()
    expected = embedder._run(lambda: model.get_image_features(**batch))
    lazy = LazyImages([lambda im=im: im for im in images])
    assert np.allclose(embedder.encode_images(lazy, "document"), expected, atol=1e-6)


def test_lazy_images_decode_on_each_read_and_slices_stay_lazy() -> None:
    made: list[int] = []

    def loader(n: int) -> Any:
        return lambda: made.append(n) or Image.new("RGB", (n, n))

    images = LazyImages([loader(n) for n in (1, 2, 3)])
    part = images[1:]
    assert isinstance(part, LazyImages) and len(part) == 2 and made == []
    assert [im.width for im in each_preprocessed(part, lambda im: im)] == [2, 3]
    assert made == [2, 3]


@pytest.mark.slow
def test_51_images_of_4000_pixels_add_little_to_the_peak(tmp_path: Path, tiny_clip: str) -> None:
    folder = build_large_images(tmp_path / "large", count=51, side=4000)
    assert sum(f.stat().st_size for f in folder.rglob("*.parquet")) < 400_000
    config = tmp_path / f"{tiny_clip}.json"
    import tiny_clip

    config.write_text(json.dumps(tiny_clip.TINY_CLIP_CONFIG))
    peaks = {}
    for mode in ("lazy", "eager"):
        out = subprocess.run(
            [
                sys.executable,
                "-c",
                TASK3_CHILD,
                str(folder),
                str(tmp_path / mode),
                str(config),
                "32",
                mode,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        peaks[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    lazy, eager = peaks["lazy"], peaks["eager"]
    # Above what the imports take, one decoded image (64 MB in Pillow's 4-byte RGB) and its
    # preprocessing; the former path held a batch of 32 of them (about 2 GB).
    assert lazy["peak_bytes"] - lazy["imports_bytes"] < 400 * 2**20
    assert eager["peak_bytes"] - eager["imports_bytes"] > 1500 * 2**20


def test_out_of_memory_in_a_run_says_what_ran_out(
    many_images: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tiny_clip: str,
) -> None:
    from mmbright_core.cli import main

    def no_memory(data: bytes | None, path: str) -> Image.Image:
        raise MemoryError  # what Pillow raises when an image's pixels cannot be allocated

    _decode_with(monkeypatch, no_memory)
    args = ["run", "--source", str(many_images), "--task", "3", "--retriever", "clip"]
    model = ["--model", tiny_clip, "--pretrained", "none", "--out", str(tmp_path / "out")]
    assert main([*args, *model, "--cache-dir", str(tmp_path / "cache")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("mmbright run: error: out of memory while the retriever ran")
    assert "--option batch_size=8" in line and "MMBRIGHT_MAX_INPUT_BYTES" not in line


def _long_list_column(root: Path, entries: int) -> Path:
    from fixture_dataset import SCHEMAS, build_fixture

    build_fixture(root)
    path = root / "examples" / "academia.parquet"
    rows = pq.read_table(path).to_pylist()
    rows[0]["negative_ids"] = [f"academia/{i:08x}_1.txt" for i in range(entries)]
    pq.write_table(pa.Table.from_pylist(rows, schema=SCHEMAS["examples"]), path)
    return root


def test_a_list_column_counts_against_the_input_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 10^6 ids of 22 characters: an 8 MB file, 30 MB of Arrow data, about 250 MB as Python
    # lists. Counted before anything is read, so the limit refuses it.
    folder = _long_list_column(tmp_path / "long", 10**6)
    assert (folder / "examples" / "academia.parquet").stat().st_size < 10 * 2**20
    monkeypatch.setenv("MMBRIGHT_MAX_INPUT_BYTES", str(100 * 2**20))
    source = open_source(str(folder))
    with pytest.raises(InputTooLargeError) as caught:
        source.task(1, "academia")
    message = str(caught.value)
    assert message.startswith(f"{folder / 'examples' / 'academia.parquet'}: the file is larger")
    assert "at most 100 MiB" in message and "column 'negative_ids' (1,000,003 values)" in message
    assert "MMBRIGHT_MAX_INPUT_BYTES" in message
    # Under the same limit, the dataset without the long list loads.
    assert open_source(str(_long_list_column(tmp_path / "short", 3))).task(1, "academia").queries
