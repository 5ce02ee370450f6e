"""The shared-server recipe in chromium: symlinks deep inside the root refused, a quiet log.

The server runs as docs/safety.md's "A shared demo server" says (``MMBRIGHT_DATA_ROOT`` set,
``--client.showErrorDetails type``, no file watcher). A runs folder whose domain folder and
an output folder whose run subfolder are symlinks leading out of the root are refused on the
page, nothing is written outside the root, and the server's log holds no file-watcher
warning. Screenshots go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import serving

from mmbright_core.io.official import write_domain_outputs, write_summary
from mmbright_core.ui.common.confine import ROOT_ENV

pytestmark = serving.BROWSER_MARKS
SHOTS = serving.ROOT / "test-artifacts" / "screenshots"
RECIPE = (
    "--client.showErrorDetails",
    "type",
    "--server.fileWatcherType",
    "none",
    "--server.runOnSave",
    "false",
)
A1 = "academia/a1b2c3d4_101.txt"


def _layout(fixture_dir: Path, base: Path) -> tuple[Path, Path]:
    root, private = base / "served", base / "private"
    shutil.copytree(fixture_dir, root / "data")
    private.mkdir()
    theirs = private / "theirs"
    write_domain_outputs(theirs, "academia", {"a1": {A1: 1.0}}, {"NDCG@10": 1.0})
    mine = root / "runs" / "run_mine"
    write_domain_outputs(mine, "biology", {"b1": {A1: 1.0}}, {"NDCG@10": 1.0})
    write_summary(mine, "mine", "text", {"biology": {"NDCG@10": 1.0}})
    (mine / "academia").symlink_to(theirs / "academia")  # a domain folder leading out
    (root / "outputs").mkdir()
    (root / "outputs" / "run_it2t_random").symlink_to(private / "written")  # an output subfolder
    return root, private


def _listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.timeout(600)
def test_shared_server_refuses_deep_symlinks_and_keeps_a_quiet_log(
    fixture_dir: Path, tmp_path: Path
):
    sync_api = pytest.importorskip("playwright.sync_api")
    root, private = _layout(fixture_dir, tmp_path)
    before = _listing(private)
    SHOTS.mkdir(parents=True, exist_ok=True)
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    with (
        serving.streamlit_server(log_dir, *RECIPE, env={ROOT_ENV: str(root)}) as (url, _),
        sync_api.sync_playwright() as p,
    ):
        browser = serving.launch(p)
        page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
        serving.open_app(page, url)
        serving.local_folder(page, "data")

        serving.add_runs_from_folder(page, "runs")
        page.get_by_text("runs folder entry is outside").wait_for()
        serving.no_exception(page)
        page.screenshot(path=str(SHOTS / "shared-runs-symlink-refused.png"), full_page=True)

        serving.go_to(page, "Run a retriever")
        page.get_by_role("heading", name="Run a retriever").wait_for()
        serving.choose(page, "run_retriever", "random")
        out = page.get_by_role("textbox", name="Output folder")
        assert out.input_value() == str(root / "outputs")  # the default is inside the root
        with serving.rerun(page):
            page.get_by_role("button", name="Run", exact=True).click()
        page.get_by_text("output folder entry is outside").wait_for()
        serving.no_exception(page)
        page.screenshot(path=str(SHOTS / "shared-output-symlink-refused.png"), full_page=True)
        browser.close()
    assert _listing(private) == before  # nothing written outside the root
    log = (log_dir / "server.log").read_text(encoding="utf-8", errors="replace")
    assert "Inotify" not in log and "watchdog" not in log.lower(), log[-2000:]
    assert "Traceback" not in log, log[-2000:]
