"""Settings for a shared demo server: folder confinement, no unpickling, safe server config."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from apptest import error_messages, fresh, goto
from locations import ROOT
from streamlit.testing.v1 import AppTest

from mmbright_core.errors import InputError
from mmbright_core.io.runs import write_trec_run
from mmbright_core.ui.common.confine import ROOT_ENV, confine, data_root

A1 = "academia/a1b2c3d4_101.txt"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    served = tmp_path / "served"
    (served / "runs").mkdir(parents=True)
    (tmp_path / "private").mkdir()
    (served / "escape").symlink_to(tmp_path / "private")  # a symlink leading out of the root
    monkeypatch.setenv(ROOT_ENV, str(served))
    return served.resolve()


def test_without_a_root_folders_are_as_typed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ROOT_ENV, raising=False)
    assert data_root() is None
    assert confine("/etc") == Path("/etc")
    assert confine("~/x") == Path.home() / "x"


def test_inside_the_root(root: Path) -> None:
    assert data_root() == root
    assert confine(root) == root
    assert confine(root / "runs") == root / "runs"
    assert confine("runs") == root / "runs"  # relative: inside the root
    assert confine("runs/../runs/new") == root / "runs" / "new"  # need not exist yet


@pytest.mark.parametrize("typed", ["/etc", "..", "runs/../../private", "escape", "escape/x"])
def test_outside_the_root_is_refused(root: Path, typed: str) -> None:
    with pytest.raises(InputError, match="outside the folder this server may read") as caught:
        confine(typed, "runs folder")
    assert f"a path inside {root}" in str(caught.value)
    assert ROOT_ENV in (caught.value.hint or "")


def test_a_root_that_is_no_folder_refuses_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path / "absent"))
    with pytest.raises(InputError, match=f"{ROOT_ENV} does not name a folder"):
        confine(tmp_path)


def _app_on(dataset: str) -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(dataset).run()
    at.selectbox(key="task").set_value(1).run()
    return at


def test_app_refuses_a_dataset_folder_outside_the_root(fixture_dir: Path, root: Path):
    at = _app_on(str(fixture_dir))
    assert any("dataset folder is outside" in e.value for e in at.sidebar.error)
    goto(at, "inspector")
    assert any("dataset folder is outside" in e for e in error_messages(at))
    assert not at.exception


def test_app_confines_runs_and_output_folders(fixture_dir: Path, root: Path, tmp_path: Path):
    shutil.copytree(fixture_dir, root / "data")  # the server's copy of the dataset
    write_trec_run(root / "runs" / "mine.trec", {"academia/a1": {A1: 1.0}})
    write_trec_run(tmp_path / "private" / "theirs.trec", {"academia/a1": {A1: 1.0}})
    at = _app_on("data")
    assert not at.sidebar.error and not at.exception

    for folder in (str(tmp_path / "private"), "escape", "../private"):
        at.text_input(key="runs_folder").input(folder).run()
        at.button(key="add_folder").click().run()
        assert any("runs folder is outside" in e for e in error_messages(at)), folder
    at.text_input(key="runs_folder").input("runs").run()
    at.button(key="add_folder").click().run()
    assert not error_messages(at)
    assert at.multiselect(key="selected_runs_1").value == ["mine"]

    goto(at, "run")
    at.selectbox(key="run_retriever").set_value("random").run()
    at.text_input(key="run_out").input(str(tmp_path / "private" / "out")).run()
    at.button(key="run_start").click().run()
    assert any("output folder is outside" in e for e in error_messages(at))
    assert not (tmp_path / "private" / "out").exists()
    at.text_input(key="run_out").input("outputs").run()
    at.button(key="run_start").click().run()
    assert not error_messages(at) and not at.exception
    assert (root / "outputs" / "run_t2t_random" / "summary.json").is_file()


def test_server_config_binds_loopback_with_xsrf_protection() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    settings = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert settings["server"]["address"] == "127.0.0.1"
    assert settings["server"]["enableXsrfProtection"] is True
    assert settings["browser"]["gatherUsageStats"] is False
    assert settings["runner"]["magicEnabled"] is False


# Loading that can run code from a file: none may touch anything a user supplies.
_UNPICKLING = re.compile(
    r"\bpickle\b|\bjoblib\b|\bdill\b|\bcloudpickle\b|allow_pickle\s*=\s*True"
    r"|weights_only\s*=\s*False|torch\.load\(|read_pickle|(?<![.\w])(eval|exec)\("
)


def test_nothing_is_ever_unpickled() -> None:
    for bad in ("pickle.loads(data)", "np.load(f, allow_pickle=True)", "torch.load(p)", "exec(s)"):
        assert _UNPICKLING.search(bad), bad
    # The package holds the app and its pages (mmbright_core/ui/app.py, ui/<page>/page.py).
    files = [*sorted((ROOT / "mmbright_core").rglob("*.py")), ROOT / "app.py"]
    assert ROOT / "mmbright_core" / "ui" / "home" / "page.py" in files
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _UNPICKLING.search(line)
    ]
    assert found == []
    assert len(files) > 40  # the scan covered the package, the app and its pages
