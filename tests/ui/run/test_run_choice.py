"""Every field of the Run page is confined to the server's root, and says so the same way.

A shared server sets ``MMBRIGHT_DATA_ROOT``. A value that names a file (a model folder, a
pretrained tag, a checkpoint, the output folder) must resolve inside it; a refusal reads the
same for a file that exists outside, a path that does not exist, and a symlink inside the
root that leads out, so that a visitor learns nothing about the files outside. Nothing runs.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
from apptest import error_messages, fresh, goto
from locations import ROOT
from streamlit.testing.v1 import AppTest

from mmbright_core.errors import InputError
from mmbright_core.retrieval import registry
from mmbright_core.retrieval.catalogue.presets import presets
from mmbright_core.ui.common.confine import ROOT_ENV, Confinement
from mmbright_core.ui.run import run_choice

OUTSIDE = "outside the folder this server may read"


@pytest.fixture
def served(fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A root holding the dataset, and beside it (outside) a private checkpoint."""
    root = tmp_path / "served"
    shutil.copytree(fixture_dir, root / "data")
    private = tmp_path / "private"
    private.mkdir()
    torch = pytest.importorskip("torch")
    torch.save({"weight": torch.zeros(2)}, private / "private_vits32.pth")
    (root / "link.pth").symlink_to(private / "private_vits32.pth")
    (root / "linkdir").symlink_to(private)
    monkeypatch.setenv(ROOT_ENV, str(root))
    return root.resolve()


def _targets(served: Path) -> dict[str, str]:
    """Paths outside the root: a real file, a missing one, a symlink leading out, a system file."""
    private = served.parent / "private"
    targets = {
        "exists": str(private / "private_vits32.pth"),
        "missing": str(private / "absent.pth"),
        "symlink": "link.pth",
    }
    if Path("/etc/shadow").exists():  # the probe's: an IndexError once, telling it exists
        targets["system"] = "/etc/shadow"
    return targets


def _page() -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input("data").run()
    at.selectbox(key="task").set_value(2).run()
    return goto(at, "run")


def _refusal(at: AppTest, typed: str) -> str:
    """The one error on the page, unescaped, with the typed value cut out of it."""
    errors = error_messages(at)
    assert not at.exception and len(errors) == 1, errors
    shown = re.sub(r"\\(.)", r"\1", errors[0])  # the Markdown escapes of the message
    assert OUTSIDE in shown, shown
    return shown.replace(typed, "<typed>")


def _try(at: AppTest, retriever: str, fields: dict[str, str], out: str = "outputs") -> None:
    at.selectbox(key="run_retriever").set_value(retriever).run()
    for key in ("run_model", "run_pretrained", "run_checkpoint"):
        if any(t.key == key for t in at.text_input):
            at.text_input(key=key).input(fields.get(key.removeprefix("run_"), "")).run()
    at.text_input(key="run_out").input(out).run()
    at.button(key="run_start").click().run()


FIELDS = [
    ("clip", "pretrained", "{}", {"model": "ViT-S-32"}),  # the probe's case
    ("clip", "checkpoint", "{}", {"model": "ViT-S-32"}),
    ("clip", "model", "local-dir:{}", {}),
    ("dense", "model", "{}", {}),
    ("ocr-dense", "model", "{}", {}),
    ("hf", "model", "{}", {}),
    ("mteb", "model", "{}", {}),
]


@pytest.mark.parametrize(("retriever", "field", "form", "others"), FIELDS)
def test_each_field_refuses_a_path_outside_the_root_alike(
    served: Path, retriever: str, field: str, form: str, others: dict[str, str]
):
    at = _page()
    said = set()
    for target in _targets(served).values():
        typed = form.format(target)
        _try(at, retriever, {**others, field: typed})
        said.add(_refusal(at, target))
        assert not at.success and not (served / "outputs").exists()  # nothing ran
    assert len(said) == 1, said  # the same words whether the file exists, is absent or a link


def test_the_output_folder_refuses_a_path_outside_the_root_alike(served: Path):
    at = _page()
    targets = {
        "exists": str(served.parent / "private"),
        "missing": str(served.parent / "absent" / "out"),
        "symlink": "linkdir/out",
    }
    said = {(_try(at, "random", {}, typed), _refusal(at, typed))[1] for typed in targets.values()}
    assert len(said) == 1, said
    assert sorted(p.name for p in (served.parent / "private").iterdir()) == ["private_vits32.pth"]


def test_a_pretrained_tag_stays_a_tag_only_when_open_clip_knows_it(served: Path):
    confined = Confinement.from_env()
    fields = {"model": "ViT-B-32", "pretrained": "openai"}
    assert run_choice.retriever_options("clip", fields, confined)["pretrained"] == "openai"
    for tag in ("none", "auto"):
        assert run_choice.retriever_options("clip", {"pretrained": tag}, confined) == {
            "pretrained": tag
        }
    # A tag of another model is no tag of this one: open_clip would look for it as a file.
    with pytest.raises(InputError, match="not one open_clip knows for ViT-S-32, nor a file"):
        run_choice.retriever_options(
            "clip", {"model": "ViT-S-32", "pretrained": "openai"}, confined
        )
    (served / "mine.pth").write_bytes(b"\0")
    inside = run_choice.retriever_options("clip", {"pretrained": "mine.pth"}, confined)
    assert inside == {"pretrained": str(served / "mine.pth")}  # a file inside the root


def test_model_names_are_hub_ids_or_paths_inside_the_root(
    served: Path, monkeypatch: pytest.MonkeyPatch
):
    confined = Confinement.from_env()
    for hub in ("BAAI/bge-large-en-v1.5", "mteb/baseline-random-encoder@abc123", "hf-hub:a/b"):
        assert run_choice.retriever_options("hf", {"model": hub}, confined) == {"model": hub}
    for path in ("../private", "~root", "a/../../private", "/etc", "x\\..\\y"):
        with pytest.raises(InputError):
            run_choice.retriever_options("dense", {"model": path}, confined)
    # A hub-like name that exists in the server's working folder is that folder: read from
    # the root, not from where the server was started.
    (served.parent / "org" / "model").mkdir(parents=True)
    monkeypatch.chdir(served.parent)
    with pytest.raises(InputError, match="model folder does not exist"):
        run_choice.retriever_options("dense", {"model": "org/model"}, confined)
    (served / "org" / "model").mkdir(parents=True)
    found = run_choice.retriever_options("dense", {"model": "org/model"}, confined)
    assert found == {"model": str(served / "org" / "model")}


def test_the_page_runs_only_the_retrievers_and_presets_it_offers(served: Path):
    # A MODULE:FACTORY spec imports any module the server can see: never from the page.
    with pytest.raises(InputError, match="runs only the retrievers it offers"):
        run_choice.retriever_arguments("os:system", {}, 1)
    with pytest.raises(InputError, match="runs only the retrievers it offers"):
        run_choice.retriever_arguments("api", {}, 1)
    (api,) = [p for p in presets(1) if p.backend == "api"][:1]
    with pytest.raises(InputError, match="does not run api presets"):
        run_choice.retriever_arguments("bm25", {}, 1, preset=api.name)
    at = _page()
    for name in at.selectbox(key="run_retriever").options:
        at.selectbox(key="run_retriever").set_value(name).run()
        keys = {t.key for t in at.text_input} - {"source_folder", "runs_folder", "run_out", "run_k"}
        assert keys <= {"run_model", "run_pretrained", "run_checkpoint"}, name  # no spec field


def test_what_each_retriever_needs_names_real_extras_and_modules() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = pyproject["project"]["optional-dependencies"]
    for name, needs in run_choice.NEEDS.items():
        assert name in registry.available_retrievers()
        for extra, module in needs:
            assert extra in extras, (name, extra)
            # Installed here (every extra is): the name is one the import system finds.
            assert importlib.util.find_spec(module) is not None, (name, module)
    assert all(run_choice.missing_extras(name) == () for name in run_choice.NEEDS)
