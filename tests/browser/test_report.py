"""The comparison report in chromium at 1000 px: it reads like the page.

The report is made from the demo and its shipped runs by ``mmbright compare --report``, once
as the command makes it and once with Streamlit's Plotly theme as the process's default (as
in the dashboard's Export tab, which builds the same report). Opened as a ``file://`` page
with every network request refused, at 1000 px wide: no table wider than the page, no tick
label or axis title clipped by its figure or overlapping another, ranks and counts written
as integers. Screenshots are kept as ``test-artifacts/screenshots/report-*.png``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from serving import BROWSER_MARKS, ROOT, launch

SHOTS = ROOT / "test-artifacts" / "screenshots"
RUNS = ROOT / "mmbright_core" / "data" / "demo" / "runs"
WIDTH = 1000
FIGURES = 5  # per-domain deltas, delta distribution, three image-effect breakdowns
# Builds the report the way the dashboard does: Streamlit's theme is Plotly's default there.
IN_DASHBOARD = (
    "import runpy, sys; import streamlit.elements.plotly_chart; sys.argv[0] = 'mmbright'; "
    "runpy.run_module('mmbright_core', run_name='__main__')"
)
WHOLE = {"queries", "wins", "ties", "losses", "images", "decoded images", "query chars"}
WHOLE |= {"judged", "relevant", "first relevant rank A", "first relevant rank B"}
WHOLE |= {"relevance", "rank A", "rank B"}

pytestmark = BROWSER_MARKS

# Tick labels, axis titles and legend entries of each figure: each inside its figure's
# SVG and clear of every other (1 px of antialiasing allowed).
LAYOUT_PROBLEMS = """async () => {
  await document.fonts.ready;
  await new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)));
  const box = e => e.getBoundingClientRect();
  const meet = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
    && a.top < b.bottom - 1 && b.top < a.bottom - 1;
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1
    && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  const problems = [];
  for (const figure of document.querySelectorAll('div[id^="figure-"]')) {
    const frame = box(figure.querySelector('svg.main-svg'));
    const texts = [...figure.querySelectorAll(
      '.xtick text, .ytick text, .xtitle, .ytitle, .legendtext, .gtitle')]
      .filter(t => t.textContent.trim() && box(t).width > 0);
    texts.forEach((t, i) => {
      if (!inside(box(t), frame)) problems.push(`${figure.id}: "${t.textContent}" clipped`);
      for (const u of texts.slice(i + 1)) {
        if (meet(box(t), box(u))) {
          problems.push(`${figure.id}: "${t.textContent}" overlaps "${u.textContent}"`);
        }
      }
    });
  }
  return problems;
}"""
WIDE_TABLES = """() => [...document.querySelectorAll('table')]
  .filter(t => t.scrollWidth > document.documentElement.clientWidth
    || t.getBoundingClientRect().right > document.documentElement.clientWidth
    || t.scrollWidth > t.parentElement.clientWidth)
  .map(t => `${t.querySelector('th').textContent}...: ${t.scrollWidth} px`)"""
LINKS = """() => [...document.querySelectorAll('[src], [href], link')]
  .map(e => e.getAttribute('src') || e.getAttribute('href') || e.outerHTML)
  .filter(u => !u.startsWith('data:'))"""
COLUMNS = """() => [...document.querySelectorAll('table.data')].map(t => {
  const heads = [...t.querySelectorAll('thead th')].map(h => h.textContent);
  return heads.map((h, i) => [h, [...t.querySelectorAll('tbody tr')]
    .map(r => r.children[i].textContent)]);
})"""


def _report(out: Path, prelude: list[str], task: int = 2, runs: str = "run_it2t") -> Path:
    path = out / "report.html"
    command = [sys.executable, *prelude, "compare", "--source", "demo", "--task", str(task)]
    command += [str(RUNS / f"{runs}_bm25"), str(RUNS / f"{runs}_ocr-bm25"), "--report", str(path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MMBRIGHT_NOTES": str(out / "notes.sqlite3")}
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    return path


@pytest.fixture(scope="module", params=["command", "dashboard"])
def report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    prelude = ["-m", "mmbright_core"] if request.param == "command" else ["-c", IN_DASHBOARD]
    return _report(tmp_path_factory.mktemp(f"report-{request.param}"), prelude)


def test_report_reads_like_the_page(report: Path, request: pytest.FixtureRequest) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    SHOTS.mkdir(parents=True, exist_ok=True)
    fetched: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        page.route("http*://**", lambda route: (fetched.append(route.request.url), route.abort()))
        page.goto(report.as_uri())
        page.wait_for_function(
            f"document.querySelectorAll('div[id^=\"figure-\"] svg.main-svg').length >= {FIGURES}"
        )
        problems = page.evaluate(LAYOUT_PROBLEMS)
        shot = SHOTS / f"report-{request.node.callspec.id}-{WIDTH}.png"
        page.screenshot(path=str(shot), full_page=True)
        page_width = page.evaluate("document.documentElement.scrollWidth")
        linked = page.evaluate(LINKS)
        wide = page.evaluate(WIDE_TABLES)
        tables = page.evaluate(COLUMNS)
        browser.close()
    assert not fetched, f"the report fetched {fetched}: it must open offline"
    assert not linked, f"the report links to {linked}: it must be self-contained"
    assert not problems, problems
    assert not wide, f"tables wider than the {WIDTH} px page: {wide}"
    assert page_width <= WIDTH
    whole = [(h, v) for t in tables for h, values in t if h in WHOLE for v in values]
    assert {h for h, _ in whole} == WHOLE  # every kind of whole number was seen
    assert [(h, v) for h, v in whole if not (v.isdigit() or v == "–")] == []


def test_a_task4_report_names_pairs_readably_and_fits_1000_px(tmp_path: Path) -> None:
    """Task 4's rank diffs name each pair as the pages do, without the raw ``|||`` id."""
    sync_api = pytest.importorskip("playwright.sync_api")
    report = _report(tmp_path, ["-m", "mmbright_core"], task=4, runs="it2it")
    assert "|||" not in report.read_text(encoding="utf-8")
    with sync_api.sync_playwright() as p:
        browser = launch(p)
        page = browser.new_page(viewport={"width": WIDTH, "height": 1000})
        page.goto(report.as_uri())
        wide = page.evaluate(WIDE_TABLES)
        page_width = page.evaluate("document.documentElement.scrollWidth")
        page.screenshot(path=str(SHOTS / f"report-task4-{WIDTH}.png"), full_page=True)
        browser.close()
    assert not wide, f"tables wider than the {WIDTH} px page: {wide}"
    assert page_width <= WIDTH
