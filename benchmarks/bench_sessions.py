"""A room opening the demo at once: the real server in chromium, 1, then 8 and 16 sessions.

Starts ``streamlit run app.py`` (headless, loopback, a free port, the demo data, no file
watcher, ``HF_HUB_OFFLINE=1``, its data root and notes in a temporary folder, the server
environment ``mmbright app`` sets) and drives Debian's chromium through playwright. Each
session is a new browser context that times three steps:

- first page: from the navigation until the home page's main content is drawn (its title and
  the headline numbers' table);
- page change: from the click on "Per query" in the sidebar until that page's run has
  finished (the app's run marker, docs/dashboard.md, "A marker for each run");
- inspector open: from the click on "Inspector" until the inspected query's caption is
  drawn and its run has finished.

The first session after the server starts is the server's first page (imports, demo runs
read and scored); then ``--repeat`` single sessions, one after another, give the one-session
figures; then each count of ``--sessions`` opens that many sessions at once. Each wave
prints p50 and p95 of every step, the server's resident memory growth and CPU time divided
by the sessions (all still open), and the ratio of its slowest first page to the one-session median
(target: within 3x for 8 sessions; the trivial app's ratio, printed beside it, is what the
machine and the browsers alone allow). A fresh session's first page "busy" is the median first
page of the first wave (it loads beside the others).

The floor is a trivial Streamlit app (one ``st.write``) served and measured the same way in
the same run: its server's first page, a fresh session's (quiet) and the same wave's (busy).
The load average (``os.getloadavg``) is printed with each wave.

Usage::

    python benchmarks/bench_sessions.py [--sessions 8 16] [--repeat 3] [--out results.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "support")]

from bench_browser import TITLES  # noqa: E402
from bench_session_memory import rss_mb  # noqa: E402
from serving import CHROMIUM, RUN_FINISHED, RUN_NUMBER, launch, streamlit_server  # noqa: E402

from mmbright_core.cli.app import SERVER_ENV  # noqa: E402
from mmbright_core.ui.common.confine import ROOT_ENV  # noqa: E402

RATIO_TARGET = 3.0
TRIVIAL_APP = 'import streamlit as st\nst.write("hello from a trivial app")\n'
TRIVIAL_TEXT = "hello from a trivial app"
QUERY_CAPTION = re.compile(r"\d+ image\(s\) · \d+ relevant")  # the inspector shows a query
SERVER_OPTIONS = ("--server.fileWatcherType", "none", "--server.runOnSave", "false")
STEPS = ("first page", "page change", "inspector open")


async def dashboard_session(page: Any, url: str) -> dict[str, float]:
    """One user: the home page, then Per query, then the Inspector; seconds of each step."""
    main = page.locator('[data-testid="stMain"]')
    times: dict[str, float] = {}
    start = time.perf_counter()
    await page.goto(url, wait_until="commit")
    await main.locator("h1").filter(has_text=TITLES["Home"]).wait_for()
    await main.locator('[data-testid="stDataFrame"]').first.wait_for()
    times["first page"] = time.perf_counter() - start
    await page.wait_for_function(RUN_FINISHED, arg=0)  # the page whole, untimed
    for step, title, drawn in (
        ("page change", "Per query", main.locator("h1").filter(has_text=TITLES["Per query"])),
        ("inspector open", "Inspector", main.get_by_text(QUERY_CAPTION)),
    ):
        before = int(await page.evaluate(RUN_NUMBER))
        start = time.perf_counter()
        await page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()
        await drawn.first.wait_for()
        await page.wait_for_function(RUN_FINISHED, arg=before)
        times[step] = time.perf_counter() - start
    boxes = page.locator('[data-testid="stException"]')
    if await boxes.count():
        raise RuntimeError(f"the page shows an exception: {await boxes.first.inner_text()}")
    return times


async def trivial_session(page: Any, url: str) -> dict[str, float]:
    """One user of the trivial app: its first page only."""
    start = time.perf_counter()
    await page.goto(url, wait_until="commit")
    await page.get_by_text(TRIVIAL_TEXT).wait_for()
    return {"first page": time.perf_counter() - start}


def cpu_s(pid: int) -> float:
    """The CPU time (user and system) a process has used, in seconds, from /proc."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f} (5 min {five:.1f})"


async def measure(session: Any, url: str, pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """The server's first page, ``repeat`` single sessions, then each wave of ``sessions``."""
    from playwright.async_api import async_playwright

    figures: dict[str, Any] = {"start_mb": round(rss_mb(pid), 1)}
    async with async_playwright() as p:
        browser = await launch(p)

        async def wave(count: int) -> tuple[list[dict[str, float]], float]:
            """``count`` sessions at once; their times and the memory they hold, all open."""
            contexts = [
                await browser.new_context(viewport={"width": 1400, "height": 1000})
                for _ in range(count)
            ]
            pages = [await context.new_page() for context in contexts]
            for page in pages:
                page.set_default_timeout(args.timeout * 1000)
            try:
                samples = await asyncio.gather(*(session(page, url) for page in pages))
                return list(samples), rss_mb(pid)
            finally:
                for context in contexts:
                    await context.close()

        cpu = cpu_s(pid)
        first, _ = await wave(1)
        figures["server first page"] = {"load": load(), "cpu_s": cpu_s(pid) - cpu, **first[0]}
        cpu = cpu_s(pid)
        singles = [(await wave(1))[0][0] for _ in range(args.repeat)]
        figures["1 session"] = {
            "load": load(),
            "samples": singles,
            "cpu_s_per_session": (cpu_s(pid) - cpu) / args.repeat,
        }
        for count in args.sessions:
            await asyncio.sleep(2)  # the closed sessions' memory handed back
            before, load_before, cpu = rss_mb(pid), load(), cpu_s(pid)
            started = time.perf_counter()
            samples, after = await wave(count)
            figures[f"{count} sessions"] = {
                "load": f"{load_before} -> {load()}",
                "wall_s": round(time.perf_counter() - started, 1),
                "samples": samples,
                "mb_per_session": round((after - before) / count, 1),
                "cpu_s_per_session": (cpu_s(pid) - cpu) / count,
            }
        await browser.close()
    return figures


def serve(script: str | Path, folder: Path, session: Any, args: argparse.Namespace) -> dict:
    log_dir = folder / f"{Path(script).stem}-log"
    log_dir.mkdir()
    env = {
        **SERVER_ENV,
        ROOT_ENV: str(folder / "root"),
        "MMBRIGHT_NOTES": str(folder / f"{Path(script).stem}-notes.sqlite3"),
    }
    with streamlit_server(log_dir, *SERVER_OPTIONS, env=env, script=script) as (url, process):
        return asyncio.run(measure(session, url, process.pid, args))


def rows(figures: dict[str, Any], steps: tuple[str, ...]) -> list[str]:
    lines = []
    head = f"{'':24s} {'step':15s} {'n':>3s} {'p50':>7s} {'p95':>7s} {'max':>7s}"
    lines.append(head)
    lines.append("-" * len(head))
    first = figures["server first page"]
    lines.append(
        f"{'server first page':24s} {'first page':15s} {1:3d} {first['first page']:7.2f}"
        f"  (server CPU {first['cpu_s']:.2f} s; {first['load']})"
    )
    for name, wave in figures.items():
        if not isinstance(wave, dict) or "samples" not in wave:
            continue
        for step in steps:
            values = [s[step] for s in wave["samples"]]
            lines.append(
                f"{name:24s} {step:15s} {len(values):3d} {percentile(values, 50):7.2f} "
                f"{percentile(values, 95):7.2f} {max(values):7.2f}"
            )
        extra = f"  {wave['load']}; server CPU {wave['cpu_s_per_session']:.2f} s per session"
        if "mb_per_session" in wave:
            extra += f"; wall {wave['wall_s']} s; {wave['mb_per_session']} MB per session"
        lines.append(extra)
    return lines


def ratios(figures: dict[str, Any], counts: list[int]) -> dict[str, float]:
    one = statistics.median(s["first page"] for s in figures["1 session"]["samples"])
    return {
        f"slowest of {n} / one session": max(
            s["first page"] for s in figures[f"{n} sessions"]["samples"]
        )
        / one
        for n in counts
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--repeat", type=int, default=3, help="single sessions, in turn")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one step may take")
    parser.add_argument("--out", type=Path, help="write every sample as JSON")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"needs Debian's chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "root").mkdir()
        trivial = folder / "trivial_app.py"
        trivial.write_text(TRIVIAL_APP, encoding="utf-8")
        print(f"trivial app ({load()})", file=sys.stderr)
        report["trivial"] = serve(trivial, folder, trivial_session, args)
        print(f"dashboard ({load()})", file=sys.stderr)
        report["dashboard"] = serve("app.py", folder, dashboard_session, args)
    print("trivial app (one st.write)")
    print("\n".join(rows(report["trivial"], ("first page",))))
    print()
    print("dashboard (the demo)")
    print("\n".join(rows(report["dashboard"], STEPS)))
    print()
    busy = f"{args.sessions[0]} sessions"
    for app in ("dashboard", "trivial"):
        figures = report[app]
        quiet = statistics.median(s["first page"] for s in figures["1 session"]["samples"])
        loaded = statistics.median(s["first page"] for s in figures[busy]["samples"])
        print(
            f"{app}: server first page {figures['server first page']['first page']:.2f} s; "
            f"a fresh session's first page {quiet:.2f} s quiet, {loaded:.2f} s busy "
            f"(median of {busy} at once)"
        )
    report["ratios"] = {app: ratios(report[app], args.sessions) for app in ("dashboard", "trivial")}
    for app, found in report["ratios"].items():
        for name, ratio in found.items():
            verdict = "met" if ratio <= RATIO_TARGET else "MISSED"
            target = (
                f" (target within {RATIO_TARGET:.0f}x: {verdict})" if app == "dashboard" else ""
            )
            print(f"{app}: {name}: {ratio:.1f}x{target}")
    if args.out:
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
