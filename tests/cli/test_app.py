"""``mmbright app``: the packaged dashboard, its server settings, and an install from the wheel."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from serving import (
    CHROMIUM,
    LOOPBACK,
    ROOT,
    Traffic,
    choose,
    free_port,
    go_to,
    launch,
    new_page,
    no_exception,
    open_app,
    wait_healthy,
)
from streamlit.testing.v1 import AppTest

from mmbright_core.cli import app as cli_app
from mmbright_core.cli import main
from mmbright_core.data.layout import PINNED_REVISION
from mmbright_core.ui.common import navigation
from mmbright_core.ui.common.sidebar import SOURCE_KINDS, initial_source
from mmbright_core.ui.common.state import SOURCE_ENV


def _command(monkeypatch: pytest.MonkeyPatch, *argv: str) -> list[str]:
    """What ``mmbright app ARGV`` would exec, without replacing the test process."""
    seen: list[list[str]] = []
    monkeypatch.setattr(cli_app.os, "execv", lambda path, command: seen.append(command))
    assert main(["app", *argv]) == 0
    return seen[0]


def test_settings_are_the_repositorys_streamlit_config() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config == cli_app.SETTINGS


def test_app_serves_the_packaged_script_with_the_settings(monkeypatch: pytest.MonkeyPatch):
    command = _command(monkeypatch, "--port", "8600", "--", "--server.address", "0.0.0.0")
    assert command[:5] == [sys.executable, "-m", "streamlit", "run", str(cli_app.APP)]
    assert cli_app.APP.is_file() and cli_app.APP.parent == navigation.UI_DIR
    flags = command[5:]
    for pair in (
        ["--server.address", "127.0.0.1"],
        ["--server.enableXsrfProtection", "true"],
        ["--browser.gatherUsageStats", "false"],
        ["--runner.magicEnabled", "false"],
        ["--server.port", "8600"],
    ):
        assert any(flags[i : i + 2] == pair for i in range(len(flags))), pair
    assert flags[-2:] == ["--server.address", "0.0.0.0"]  # after ours: it wins


def test_source_reaches_the_app_through_the_environment(monkeypatch: pytest.MonkeyPatch):
    # setenv, not delenv: it restores the variable's absence after the test, which the
    # command's own write would otherwise leak into every later server the tests start.
    monkeypatch.setenv(SOURCE_ENV, "demo")
    _command(monkeypatch, "--source", "/data/mm-bright")
    assert os.environ[SOURCE_ENV] == "/data/mm-bright"


def test_the_server_puts_python_objects_on_the_c_allocator(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("PYTHONMALLOC", "")  # restored after the test; empty is unset
    _command(monkeypatch)
    assert os.environ["PYTHONMALLOC"] == cli_app.SERVER_ENV["PYTHONMALLOC"] == "malloc"
    monkeypatch.setenv("PYTHONMALLOC", "pymalloc_debug")  # the user's own choice stays
    _command(monkeypatch)
    assert os.environ["PYTHONMALLOC"] == "pymalloc_debug"


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("", (SOURCE_KINDS[0], "")),
        ("demo", (SOURCE_KINDS[0], "")),
        ("hf", (SOURCE_KINDS[2], PINNED_REVISION)),
        ("hf@", (SOURCE_KINDS[2], PINNED_REVISION)),
        ("hf@abc123", (SOURCE_KINDS[2], "abc123")),
        ("/data/mm-bright", (SOURCE_KINDS[1], "/data/mm-bright")),
        ("./hf@x", (SOURCE_KINDS[1], "./hf@x")),
    ],
)
def test_initial_source(monkeypatch: pytest.MonkeyPatch, spec: str, expected: tuple[str, str]):
    monkeypatch.setenv(SOURCE_ENV, spec)
    kind, folder, revision = initial_source()
    assert (kind, folder or (revision if kind == SOURCE_KINDS[2] else "")) == expected


def test_the_app_opens_on_the_given_folder(fixture_dir: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(SOURCE_ENV, str(fixture_dir))
    at = AppTest.from_file(str(cli_app.APP), default_timeout=60).run()
    assert not at.exception
    assert at.radio(key="source_kind").value == SOURCE_KINDS[1]
    assert at.text_input(key="source_folder").value == str(fixture_dir)
    assert at.session_state["runs"] == {}  # the demo's runs are not loaded for another source


def test_without_streamlit_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
):
    monkeypatch.setitem(sys.modules, "streamlit", None)  # import streamlit now fails
    monkeypatch.setattr(cli_app.os, "execv", lambda *_: pytest.fail("must not start"))
    assert main(["app"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mmbright app: error:") and "\n" not in err
    assert "pip install 'mmbright[app]'" in err


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
@pytest.mark.timeout(900)
def test_installed_wheel_serves_the_dashboard(tmp_path: Path):
    """Build the wheel, install ``mmbright[app]`` in a bare environment, serve the demo.

    In chromium: Home, then the inspector on Task 2's most-hurt query, where every hit of
    both shipped runs is explained from the runs alone (the OCR run's recorded words; no OCR
    engine is installed), nothing says an extra is missing, and no request leaves loopback.
    The install uses the package index pip is configured with; it takes a minute or two.
    """
    sync_api = pytest.importorskip("playwright.sync_api")
    wheels = tmp_path / "wheels"
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(ROOT)]
    subprocess.run(build, check=True, cwd=tmp_path, timeout=300)
    (wheel,) = wheels.glob("mmbright-*.whl")

    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True, system_site_packages=False)
    python = env_dir / "bin" / "python"
    # Without the caller's PYTHONPATH: a checkout on it would be taken for the installed
    # package, by pip (its egg-info) and by the import below.
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install = [str(python), "-m", "pip", "install", "-q", f"{wheel}[app]"]
    subprocess.run(install, check=True, cwd=tmp_path, env=clean_env, timeout=600)
    where = [str(python), "-c", "import mmbright_core; print(mmbright_core.__file__)"]
    installed = subprocess.run(
        where, check=True, cwd=tmp_path, env=clean_env, capture_output=True, text=True
    )
    assert Path(installed.stdout.strip()).is_relative_to(env_dir)  # not the checkout

    port = free_port()
    away = tmp_path / "elsewhere"  # no checkout, no .streamlit/ folder here
    away.mkdir()
    with (tmp_path / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [str(env_dir / "bin" / "mmbright"), "app", "--port", str(port)],
            cwd=away,
            env={**clean_env, "HF_HUB_OFFLINE": "1", "PATH": f"{env_dir / 'bin'}:/usr/bin:/bin"},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process, timeout=120)
        with sync_api.sync_playwright() as p:
            browser = launch(p)
            page = new_page(browser, viewport={"width": 1400, "height": 1000})
            traffic = Traffic(page)
            open_app(page, url)
            page.get_by_text("Published: Task").first.wait_for()
            no_exception(page)
            choose(page, "task", "Task 2: text+image → text")
            go_to(page, "Inspector")
            page.get_by_text("Most-hurt queries").first.wait_for()
            page.get_by_text("What pushed relevant items down").first.wait_for()
            no_exception(page)
            text = page.locator('[data-testid="stMain"]').inner_text()
            browser.close()
        assert "not installed" not in text and "No attribution" not in text
        assert "Read by ocr-bm25" in text  # the words the OCR run recorded
        assert "rapidocr" not in installed_names(python, clean_env)  # no OCR engine to fall back on
        assert traffic.hosts() <= LOOPBACK, sorted(traffic.urls)
    finally:
        process.terminate()
        process.wait(timeout=20)


def installed_names(python: Path, env: dict[str, str]) -> str:
    """The distributions installed in the environment of ``python``, lower case, one a line."""
    listed = [str(python), "-m", "pip", "list", "--format", "freeze"]
    found = subprocess.run(listed, check=True, env=env, capture_output=True, text=True)
    return found.stdout.lower()


@pytest.mark.parametrize(("given", "port"), [((), "8501"), (("PORT=8613",), "8613")])
def test_make_app_serves_on_the_given_port(given: tuple[str, ...], port: str) -> None:
    """``make app PORT=...`` hands the port to ``mmbright app``; without it, 8501."""
    dry = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "app", *given], capture_output=True, text=True, check=True
    )
    served = [line for line in dry.stdout.splitlines() if "mmbright app" in line]
    assert served and served[-1].endswith(f"mmbright app --port {port}"), dry.stdout
