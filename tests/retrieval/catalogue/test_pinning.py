"""Model revisions: a preset loads its pinned commit, ``--revision`` overrides it, and a run
that nothing pins says so in one warning line.

The models live in a temporary Hugging Face hub cache with the hub's layout
(``models--ORG--NAME/snapshots/COMMIT/``, ``refs/main``), read offline: each preset's model
holds two snapshots of a tiny random sentence-transformers model of its stack
(``tests/support/tiny_st.py``), the preset's pinned commit and another one that ``main`` names,
whose weights differ. Which snapshot a run loaded is told by its scores, equal to those of a
run of that snapshot's folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_st import sentence_model

from mmbright_core.cli import main
from mmbright_core.retrieval.catalogue.pinning import with_revision
from mmbright_core.retrieval.catalogue.presets import get_preset

st = pytest.importorskip("sentence_transformers")
pytestmark = [pytest.mark.models]

DOMAIN = "biology"
MAIN = "f" * 40
"""The commit ``refs/main`` names: the hub's latest, other than any preset's pin."""
#: A preset's hub model and the tiny stack of its architecture.
MODELS = {"sbert": "mpnet", "inst-l": "t5"}
WARNING = "mmbright run: warning: "


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory: pytest.TempPathFactory, demo_texts: list[str]) -> Path:
    """A hub cache: each preset's model at its pin (or a first commit) and at ``main``."""
    import torch

    cache = tmp_path_factory.mktemp("hub")
    for name, family in MODELS.items():
        preset = get_preset(name)
        entry = cache / f"models--{str(preset.model).replace('/', '--')}"
        first = entry / "snapshots" / (preset.revision or "e" * 40)
        sentence_model(first, family, demo_texts)
        later = st.SentenceTransformer(str(first), device="cpu")
        torch.manual_seed(1)
        with torch.no_grad():
            for weights in later.parameters():
                weights.add_(torch.randn_like(weights))
        later.save(str(entry / "snapshots" / MAIN))
        (entry / "refs").mkdir()
        (entry / "refs" / "main").write_text(MAIN)
    return cache


@pytest.fixture
def hub(snapshots: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The hub cache, read offline by every loader."""
    constants = pytest.importorskip("huggingface_hub.constants")
    monkeypatch.setenv("HF_HUB_CACHE", str(snapshots))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(snapshots))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return snapshots


def _snapshot(cache: Path, name: str, revision: str) -> Path:
    return (
        cache / f"models--{str(get_preset(name).model).replace('/', '--')}" / "snapshots" / revision
    )


def _run(
    out: Path, capsys: pytest.CaptureFixture[str], *chosen: str, model: bool = True
) -> tuple[dict, dict, str]:
    """Run on the demo's Task 1 domain; return its scores, its configuration and stderr."""
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--k", "10"]
    args += ["--device", "cpu", "--cache-dir", str(out / "cache")] if model else []
    args += ["--out", str(out), *chosen]
    capsys.readouterr()
    assert main(args) == 0
    (scores,) = out.glob(f"*/{DOMAIN}/scores.json")
    (config,) = out.glob("*/config.json")
    return (
        json.loads(scores.read_text()),
        json.loads(config.read_text())["config"],
        capsys.readouterr().err,
    )


def _same(run: dict, expected: dict) -> bool:
    return all(
        list(run[q]) == list(s) and run[q] == pytest.approx(s, abs=1e-6)
        for q, s in expected.items()
    )


def test_a_preset_loads_and_records_its_pinned_commit_and_revision_overrides_it(
    hub, tmp_path, capsys
):
    pin = get_preset("sbert").revision
    assert pin is not None
    pinned, config, err = _run(tmp_path / "pinned", capsys, "--model-preset", "sbert")
    assert config["model"] == "sentence-transformers/all-mpnet-base-v2"
    assert config["revision"] == pin
    assert WARNING not in err
    # The same preset on each snapshot's folder: the pin's scores, not main's.
    at_pin, at_pin_config, _ = _run(
        tmp_path / "at-pin",
        capsys,
        "--model-preset",
        "sbert",
        "--model",
        str(_snapshot(hub, "sbert", pin)),
    )
    at_main, _, _ = _run(
        tmp_path / "at-main",
        capsys,
        "--model-preset",
        "sbert",
        "--model",
        str(_snapshot(hub, "sbert", MAIN)),
    )
    assert at_pin_config["revision"] is None  # the pin is the preset's model's, not a folder's
    assert _same(pinned, at_pin) and not _same(pinned, at_main)
    # --revision over the preset's pin: loaded and recorded.
    chosen, chosen_config, err = _run(
        tmp_path / "chosen", capsys, "--model-preset", "sbert", "--revision", MAIN
    )
    assert chosen_config["revision"] == MAIN
    assert _same(chosen, at_main) and WARNING not in err


def test_a_run_of_an_unpinned_hub_model_warns_in_one_line_and_records_no_revision(
    hub, tmp_path, capsys
):
    model = str(get_preset("sbert").model)
    run, config, err = _run(tmp_path / "main", capsys, "--retriever", "dense", "--model", model)
    assert config["revision"] is None
    assert err.count(WARNING) == 1
    assert (
        f"{WARNING}{model} is not pinned to a revision; it loads what the hub holds on the day "
        "it runs: pass --revision <commit> to make the run repeatable\n"
    ) in err
    at_main, _, _ = _run(
        tmp_path / "folder",
        capsys,
        "--retriever",
        "dense",
        "--model",
        str(_snapshot(hub, "sbert", MAIN)),
    )
    assert _same(run, at_main)  # the hub's main, as the warning says
    # A local folder is named by its files' hash; a pinned run, by its commit.
    pinned = ["--retriever", "dense", "--model", model, "--revision", MAIN]
    _, pinned_config, pinned_err = _run(tmp_path / "pinned", capsys, *pinned)
    assert pinned_config["revision"] == MAIN and WARNING not in pinned_err
    _, _, lexical_err = _run(tmp_path / "bm25", capsys, "--retriever", "bm25", model=False)
    assert WARNING not in lexical_err  # no model, no revision


def test_a_preset_the_catalogue_leaves_unpinned_warns(hub, tmp_path, capsys):
    preset = get_preset("inst-l")
    assert preset.revision is None and preset.revision_source.startswith("unpinned: ")
    _, config, err = _run(tmp_path, capsys, "--model-preset", "inst-l")
    assert config["revision"] is None
    assert err.count(WARNING) == 1
    assert f"{WARNING}{preset.model} is not pinned to a revision;" in err


def test_a_branch_is_not_a_pin(hub, tmp_path, capsys):
    _, config, err = _run(tmp_path, capsys, "--model-preset", "sbert", "--revision", "main")
    assert config["revision"] == "main"  # recorded as given
    assert "(revision 'main' is a branch or tag, which moves)" in err


def test_mtebs_backend_takes_the_revision_as_its_registry_checks_it(capsys, tmp_path):
    assert with_revision("mteb", {"model": "a/b", "revision": "c"}) == {"model": "a/b@c"}
    assert with_revision("dense", {"model": "a/b", "revision": "c"}) == {
        "model": "a/b",
        "revision": "c",
    }
    args = ["run", "--source", "demo", "--task", "1", "--domain", DOMAIN, "--out", str(tmp_path)]
    other = ["--retriever", "mteb", "--model", "nomic-ai/nomic-embed-text-v1", "--revision", MAIN]
    assert main([*args, *other]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MTEB's registry pins another revision" in err
    assert main([*args, "--retriever", "bm25", "--revision", MAIN]) == 2
    assert "does not take option(s) revision" in capsys.readouterr().err
