"""Dashboard responsiveness as a researcher meets it: ``streamlit run app.py`` in chromium.

Starts the real server (headless, loopback, a free port) and drives Debian's chromium through
playwright on (a) the demo and (b) the full-benchmark workspace of ``bench_app.py`` (all 29
domains at their real query counts, eight Task 2 runs of 1,000 scored documents per query,
added through the runs panel as a folder of parquet run files). Each action is timed from
the moment it is taken until the page stops changing: the run it started has finished (the
condition the browser tests wait for: the app's run marker names a new run, Streamlit's script
is not running, no element waits for its code) and the DOM has not changed for a quiet window
(300 ms by default). The time
reported ends at the last DOM change, so the quiet window is not counted. Changes inside a
``<canvas>`` (its fallback content, which a browser that draws canvases never paints) are not
changes of the page: the data grid rewrites its accessibility table there about 300 ms after
it has drawn the table.

Every action is checked to have happened (a new heading, a new query id, a new count of
queries shown, a message naming the new run), so no timing is of a no-op. Each timing is also
split at the last message the server sent over the websocket: "server" is action -> last
message (script run plus transfer), "render" is last message -> last DOM change.

The floor is Streamlit's own cost: a three-line app with one button, served the same way,
timed on its first page in a new browser, on a reload, and from a click until its page stops
changing. The "×floor" column divides the first page, the reload and every other action by
the matching one.

Targets: the first page < 3 s, every other action < 0.5 s.

Usage::

    python benchmarks/bench_browser.py [--workspace demo|full|both] [--repeat N]
        [--out results.json] [--runs 8] [--depth 1000] [--quiet-ms 300] [--busy N]

``--busy N`` keeps N cores busy for the whole measurement (N plain ``while True`` loops in
their own processes, each ending by itself after ``--busy-limit`` seconds and killed when the
benchmark ends), so one run gives the quiet column and another the column under load.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "tests" / "support")]

import bench_app  # noqa: E402  (the full-size workspace builder)
from serving import (  # noqa: E402
    CHROMIUM,
    LAUNCH_ARGS,
    RUN_FINISHED,
    RUN_NUMBER,
    open_runs_panel,
    selected,
    streamlit_server,
)

from mmbright_core.analysis.slices import SLICES  # noqa: E402
from mmbright_core.io.runs import write_parquet_run, write_trec_run  # noqa: E402
from mmbright_core.present.figure_parts import plain  # noqa: E402
from mmbright_core.ranking import top_k  # noqa: E402
from mmbright_core.ui.common import workspace  # noqa: E402

FIRST_PAGE_TARGET = 3.0
ACTION_TARGET = 0.5
TASK = 2
TASK_LABEL = "Task 2: text+image → text"
OTHER_TASK_LABEL = "Task 1: text → text"  # the task switched to and back from
TITLES = {  # sidebar link -> the page's heading
    "Home": "MM-BRIGHT failure analysis",
    "Per query": "Per-query scores",
    "Compare": "Compare two runs",
    "Inspector": "Query inspector",
    "Run a retriever": "Run a retriever",
}
CYCLE = ("Per query", "Compare", "Inspector", "Run a retriever", "Home")
FLOOR_APP = """import streamlit as st
clicks = st.session_state["clicks"] = st.session_state.get("clicks", 0) + st.button("Click")
st.write(f"clicks: {clicks}")
run = st.session_state["run"] = st.session_state.get("run", 0) + 1
st.html(f'<style data-mmb-run="{run}" data-mmb-state="done"></style>')  # as the dashboard
"""
# Installed in every document before Streamlit's own scripts: the time of the last DOM change
# and of the last websocket message, on the page's clock (performance.now()).
PROBE_SCRIPT = """(() => {
  const b = window.__bench = {dom: 0, msg: 0, msgs: 0, bytes: 0};
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        b.msg = performance.now();
        b.msgs += 1;
        b.bytes += event.data.byteLength || event.data.size || event.data.length || 0;
      });
    }
  };
  // A canvas's children are fallback content, never painted where canvas works: the data
  // grid rewrites its accessibility table there about 300 ms after it has drawn.
  const painted = (m) => {
    const node = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    if (node === null) return true;
    if (m.type === "attributes" && node.tagName === "CANVAS") return true;
    return node.closest("canvas") === null;
  };
  new MutationObserver((mutations) => {
    if (mutations.some(painted)) b.dom = performance.now();
  }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
})();"""
READ_PROBE = f"""() => ({{now: performance.now(), ...window.__bench, run: ({RUN_NUMBER})(),
  busy: document.querySelector('[data-testid="stStatusWidget"]') !== null}})"""


@dataclass
class Sample:
    """One timed action, in seconds: the whole, up to the last message, and after it."""

    total: float
    server: float
    render: float
    kbytes: float


@dataclass
class Results:
    """Every sample of every action of one workspace, in the order they were taken."""

    samples: dict[str, list[Sample]] = field(default_factory=dict)
    notes: dict[str, Any] = field(default_factory=dict)

    def add(self, action: str, sample: Sample) -> None:
        self.samples.setdefault(action, []).append(sample)


class Timer:
    """Times actions on one page: from the action until the page has stopped changing."""

    def __init__(self, page: Any, quiet_ms: float, timeout_s: float) -> None:
        self.page = page
        self.quiet_ms = quiet_ms
        self.timeout_s = timeout_s

    def probe(self) -> dict[str, Any]:
        return dict(self.page.evaluate(READ_PROBE))

    def settle(self, start: dict[str, Any], *, new_run: bool = True) -> Sample:
        """Wait until a run after ``start`` (or the last one) has finished and the DOM has
        been still for the quiet window."""
        deadline = time.monotonic() + self.timeout_s
        after = start["run"] if new_run else start["run"] - 1
        while True:
            now = self.probe()
            still = now["now"] - max(now["dom"], start["now"]) >= self.quiet_ms
            if still and not now["busy"] and self.page.evaluate(RUN_FINISHED, after):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"the page kept changing for {self.timeout_s:.0f} s")
            self.page.wait_for_timeout(25)
        last_msg = now["msg"] if now["msgs"] > start["msgs"] else start["now"]
        end = max(now["dom"], last_msg, start["now"])
        return Sample(
            total=(end - start["now"]) / 1000,
            server=(last_msg - start["now"]) / 1000,
            render=(end - last_msg) / 1000,
            kbytes=(now["bytes"] - start["bytes"]) / 1024,
        )

    def time(self, action: Callable[[], None], check: Callable[[], None]) -> Sample:
        """Take ``action``, wait for ``check`` (it proves the action happened), then settle."""
        start = self.probe()
        action()
        check()
        sample = self.settle(start)
        if self.probe()["msgs"] == start["msgs"]:
            raise RuntimeError("the server sent nothing: the action did not rerun the app")
        no_exception(self.page)
        return sample

    def loaded(self, check: Callable[[], None]) -> Sample:
        """Time a fresh document (first page, reload) from its navigation start."""
        check()
        return self.settle({"now": 0.0, "msgs": 0, "bytes": 0, "run": 0})

    def step(self, action: Callable[[], None]) -> None:
        """Take a preparatory ``action`` that reruns the app; wait (untimed) for that run."""
        start = self.probe()
        action()
        self.settle(start)

    def quiet(self) -> None:
        """Wait (untimed) until the page has settled after a preparatory step (a rerun or not)."""
        self.settle(self.probe(), new_run=False)


def no_exception(page: Any) -> None:
    boxes = page.locator('[data-testid="stException"]')
    if boxes.count():
        raise RuntimeError(f"the page shows an exception: {boxes.first.inner_text()[:500]}")


def heading(page: Any, title: str) -> Any:
    return page.locator('[data-testid="stMain"] h1').filter(has_text=title).first


def nav(page: Any, title: str) -> None:
    page.locator('[data-testid="stSidebarNav"]').get_by_role("link", name=title).click()


def pick(page: Any, key: str, option: str, *, typed: bool = False) -> None:
    """Choose ``option`` in the select box (or multiselect) whose widget key is ``key``."""
    box = page.locator(f".st-key-{key} input[role=combobox]")
    box.click()
    if typed:  # long lists are virtualised: narrow them first
        box.fill(option)
    page.get_by_role("option", name=option, exact=True).click()


def shown_caption(page: Any) -> str:
    return str(page.get_by_text("queries shown").first.inner_text())


def inspected(page: Any) -> str:
    return str(page.locator('[data-testid="stMain"] h3').first.inner_text()).strip()


def wait_until(predicate: Callable[[], bool], what: str, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"never happened: {what}")
        time.sleep(0.02)


# --- workspaces ---------------------------------------------------------------------------


@dataclass
class Workspace:
    """What the server is started with and what the browser adds to it."""

    name: str
    env: dict[str, str]
    runs_folder: Path | None  # added through the runs panel (None: the demo's own runs)
    upload: Path  # a TREC run file for the upload action
    run_names: list[str]
    domain_filter: list[str]


def demo_workspace(folder: Path) -> Workspace:
    entry = workspace.demo_entries(TASK)[0]
    upload = folder / f"uploaded-{entry.name}.trec"
    write_trec_run(upload, {q: s for run in entry.runs.values() for q, s in run.items()})
    names = [e.name for e in workspace.demo_entries(TASK)]
    domains = sorted(entry.runs)
    return Workspace("demo", {}, None, upload, names, domains)


def full_workspace(folder: Path, n_runs: int, depth: int, upload_depth: int) -> Workspace:
    start = time.perf_counter()
    data, runs = folder / "data", folder / "runs"
    data.mkdir()
    runs.mkdir()
    bench_app.build_dataset(data)
    entries = [e for e in bench_app.build_runs(str(data), n_runs, depth).values()]
    entries = [e for e in entries if e.task == TASK]
    for entry in entries:
        flat = {q: s for run in entry.runs.values() for q, s in run.items()}
        write_parquet_run(runs / f"{entry.name}.parquet", flat)
        if entry is entries[0]:  # the top ``upload_depth`` of each query, as a TREC file
            upload = folder / f"uploaded-{entry.name}.trec"
            write_trec_run(upload, {q: top_k(s, upload_depth) for q, s in flat.items()})
    print(f"full workspace written in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    names = [e.name for e in entries]
    domains = sorted(entries[0].runs)
    return Workspace("full", {"MMBRIGHT_SOURCE": str(data)}, runs, upload, names, domains)


# --- the measured session -----------------------------------------------------------------


@contextmanager
def new_page(browser: Any, url: str, quiet_ms: float, timeout_s: float) -> Iterator[Timer]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(PROBE_SCRIPT)
    page = context.new_page()
    page.set_default_timeout(timeout_s * 1000)
    try:
        yield Timer(page, quiet_ms, timeout_s)
    finally:
        context.close()


def first_pages(browser: Any, url: str, ws: Workspace, args: argparse.Namespace, out: Results):
    """The first page in a new browser, then a reload, each ``repeat`` times."""
    for _ in range(args.repeat):
        with new_page(browser, url, args.quiet_ms, args.timeout) as timer:
            page = timer.page
            page.goto(url, wait_until="commit")
            drawn = functools.partial(home_drawn, page, ws)
            out.add("first page (new browser)", timer.loaded(drawn))
            page.reload(wait_until="commit")
            out.add("reload", timer.loaded(drawn))


def home_drawn(page: Any, ws: Workspace) -> None:
    heading(page, TITLES["Home"]).wait_for()
    if ws.runs_folder is None:  # the demo's runs are loaded and scored on the first page
        page.locator('[data-testid="stDataFrame"]').first.wait_for()  # the headline table


def add_runs(timer: Timer, ws: Workspace, out: Results) -> None:
    """Choose Task 2 and add the workspace's runs through the runs panel's Folder tab."""
    page = timer.page
    if ws.runs_folder is None:
        return
    if selected(page, "task") != TASK_LABEL:
        timer.step(lambda: pick(page, "task", TASK_LABEL))
    open_runs_panel(page)
    page.get_by_role("tab", name="Folder").click()
    field_ = page.get_by_label("Folder: official outputs")
    field_.fill(str(ws.runs_folder))
    timer.step(lambda: field_.press("Enter"))
    sample = timer.time(
        lambda: page.locator(".st-key-add_folder button").click(),
        lambda: page.get_by_text(f"Added run '{ws.run_names[-1]}'").wait_for(),
    )
    out.notes["add runs from folder (setup, s)"] = round(sample.total, 2)
    page.get_by_text("Headline numbers").wait_for()
    timer.quiet()


def page_cycle(timer: Timer, out: Results, first: bool) -> None:
    """Home -> Per query -> Compare -> Inspector -> Run a retriever -> Home."""
    page = timer.page
    previous = "Home"
    for title in CYCLE:
        sample = timer.time(lambda t=title: nav(page, t), lambda t=title: heading_only(page, t))
        label = f"page: {previous} -> {title}"
        out.add(label, sample)
        if first and title == "Compare":
            out.add("compare first open", sample)
        if title == "Compare":
            compare_tabs(timer, out)
            compare_slices(timer, out)
            scatter_point(timer, out)
        previous = title


def compare_tabs(timer: Timer, out: Results) -> None:
    """Open Compare's scatter (one point per query), then its first tab again."""
    page = timer.page
    for label, tab, drawn in (
        ("compare: open the scatter tab", "Query by query", "cmp_scatter"),
        ("compare: back to the first tab", "By domain", "cmp_domains"),
    ):
        out.add(
            label,
            timer.time(
                lambda t=tab: page.get_by_role("tab", name=t).click(),
                lambda d=drawn: page.locator(f".st-key-{d}").wait_for(),
            ),
        )


def heading_only(page: Any, title: str) -> None:
    heading(page, TITLES[title]).wait_for()
    others = [t for name, t in TITLES.items() if name != title and t != TITLES[title]]
    for other in others:
        heading(page, other).wait_for(state="detached")


def per_query_actions(timer: Timer, ws: Workspace, out: Results, round_: int) -> None:
    """Switch the run, filter by a domain, open a query, step to the next most-hurt one."""
    page = timer.page
    nav(page, "Per query")
    heading_only(page, "Per query")
    timer.quiet()

    current = selected(page, "pq_run")
    others = [n for n in ws.run_names if n != current]
    target = others[round_ % len(others)]
    out.add(
        "switch run (per query)",
        timer.time(
            lambda: pick(page, "pq_run", target),
            lambda: wait_until(lambda: selected(page, "pq_run") == target, "run switched"),
        ),
    )

    before = shown_caption(page)
    domain = ws.domain_filter[round_ % len(ws.domain_filter)]
    out.add(
        "apply a filter (per query)",
        timer.time(
            lambda: pick(page, "pq_domains", domain),
            lambda: wait_until(lambda: shown_caption(page) != before, "filter applied"),
        ),
    )
    page.keyboard.press("Escape")  # close the multiselect's list
    timer.quiet()

    labels = page.locator(".st-key-pq_query")
    labels.wait_for()
    label = f"{domain} / {domain}_{round_ % 3}" if ws.runs_folder else None
    if label is not None and selected(page, "pq_query") != label:
        timer.step(lambda: pick(page, "pq_query", label, typed=True))
    query = selected(page, "pq_query")
    out.add(
        "open a query in the inspector",
        timer.time(
            lambda: page.locator(".st-key-pq_open button").click(),
            lambda: wait_until(lambda: inspected_now(page) == query, f"inspector on {query}"),
        ),
    )

    out.add(
        "next most-hurt query (inspector)",
        timer.time(
            lambda: page.locator(".st-key-insp_next button").click(),
            lambda: wait_until(lambda: inspected_now(page) not in ("", query), "next query"),
        ),
    )


def inspected_now(page: Any) -> str:
    if heading(page, TITLES["Inspector"]).count() == 0:
        return ""
    h3 = page.locator('[data-testid="stMain"] h3')
    return inspected(page) if h3.count() else ""


def open_compare_tab(timer: Timer, tab: str, drawn: str) -> None:
    """Open one of Compare's tabs (untimed), unless it is open already."""
    page = timer.page
    if page.locator(f".st-key-{drawn}").count():
        return
    page.get_by_role("tab", name=tab).click()
    page.locator(f".st-key-{drawn}").wait_for()
    timer.quiet()


def compare_slices(timer: Timer, out: Results) -> None:
    """Open Compare's slice tab, choose every slice in turn (the open one last), go back."""
    page = timer.page
    out.add(
        "compare: open the slice tab",
        timer.time(
            lambda: page.get_by_role("tab", name="Image effect by slice").click(),
            lambda: page.locator(".st-key-cmp_images").wait_for(),
        ),
    )
    current = selected(page, "cmp_slice")
    start = SLICES.index(current) + 1 if current in SLICES else 0
    for by in [*SLICES[start:], *SLICES[:start]]:
        # The chart's x-axis is titled with the slice: it proves the page shows the new one.
        title = page.locator(".st-key-cmp_images .xtitle").filter(has_text=plain(by))
        out.add(
            f"compare: slice by {by}",
            timer.time(lambda b=by: pick(page, "cmp_slice", b), lambda t=title: t.wait_for()),
        )
    open_compare_tab(timer, "By domain", "cmp_domains")


def scatter_point(timer: Timer, out: Results) -> None:
    """Click a point of Compare's scatter: the inspector opens on its query; come back."""
    page = timer.page
    if "scatter point not timed" in out.notes:
        return
    open_compare_tab(timer, "Query by query", "cmp_scatter")
    point = page.locator(".st-key-cmp_scatter .scatterlayer path.point").first
    try:
        point.wait_for()
        out.add(
            "compare: scatter point -> inspector",
            timer.time(
                lambda: point.click(force=True),
                lambda: wait_until(lambda: inspected_now(page) != "", "inspector from a point"),
            ),
        )
    except Exception as err:  # a point the click misses: say so, keep the other figures
        out.notes["scatter point not timed"] = str(err).splitlines()[0]
    nav(page, "Compare")
    heading_only(page, "Compare")
    timer.quiet()
    open_compare_tab(timer, "By domain", "cmp_domains")


def task_switch(timer: Timer, out: Results) -> None:
    """On Home, switch the sidebar's task to another and back (Home's caption names it)."""
    page = timer.page
    main_ = page.locator('[data-testid="stMain"]')
    for label, task in (
        ("switch task (Home): away", OTHER_TASK_LABEL),
        ("switch task (Home): back", TASK_LABEL),
    ):
        out.add(
            label,
            timer.time(
                lambda t=task: pick(page, "task", t),
                lambda t=task: main_.get_by_text(f"· {t} ·").wait_for(),
            ),
        )


def upload_run(timer: Timer, ws: Workspace, out: Results) -> None:
    """Choose a TREC file in the runs panel, add it, then remove it again (untimed)."""
    page = timer.page
    nav(page, "Home")
    heading_only(page, "Home")
    timer.quiet()
    open_runs_panel(page)
    page.get_by_role("tab", name="Upload files").click()
    chooser = page.locator('.st-key-upload_files input[type="file"]')
    out.add(
        "upload: choose the file",
        timer.time(
            lambda: chooser.set_input_files(str(ws.upload)),
            # The chip shortens a long name ("upload...2-run0.trec"); its title holds it whole.
            lambda: page.locator(
                f'[data-testid="stFileChipName"][title="{ws.upload.name}"]'
            ).wait_for(),
        ),
    )
    name = ws.upload.stem
    out.add(
        "upload: add the run",
        timer.time(
            lambda: page.locator(".st-key-add_uploads button").click(),
            lambda: page.get_by_text(f"Added run '{name}'").wait_for(),
        ),
    )
    row = page.locator('[data-testid="stHorizontalBlock"]').filter(
        has_text=f"upload: {ws.upload.name}"
    )
    row.get_by_role("button", name="Remove").click()
    row.wait_for(state="detached")
    timer.quiet()
    page.locator('[data-testid="stFileChipDeleteBtn"] button').first.click()
    page.locator('[data-testid="stFileChip"]').wait_for(state="detached")
    timer.quiet()


def bench_workspace(browser: Any, ws: Workspace, args: argparse.Namespace, logs: Path) -> Results:
    out = Results()
    log_dir = logs / f"{ws.name}-log"
    log_dir.mkdir()
    with streamlit_server(log_dir, env=ws.env) as (url, _):
        first_pages(browser, url, ws, args, out)
        with new_page(browser, url, args.quiet_ms, args.timeout) as timer:
            timer.page.goto(url, wait_until="commit")
            timer.loaded(lambda: heading(timer.page, TITLES["Home"]).wait_for())
            add_runs(timer, ws, out)
            for round_ in range(args.repeat):
                page_cycle(timer, out, first=round_ == 0)
                task_switch(timer, out)
                per_query_actions(timer, ws, out, round_)
                if "upload not timed" in out.notes:
                    continue
                try:
                    upload_run(timer, ws, out)
                except Exception as err:  # a missing selector: say so, keep the other figures
                    out.notes["upload not timed"] = str(err).splitlines()[0]
                    timer.page.goto(url, wait_until="commit")  # back to a page of the session
                    timer.loaded(lambda: heading(timer.page, TITLES["Home"]).wait_for())
                print(f"{ws.name}: round {round_ + 1} of {args.repeat} done", file=sys.stderr)
    return out


def bench_floor(browser: Any, args: argparse.Namespace, folder: Path) -> Results:
    out = Results()
    script = folder / "floor_app.py"
    script.write_text(FLOOR_APP, encoding="utf-8")
    log_dir = folder / "floor-log"
    log_dir.mkdir()
    with streamlit_server(log_dir, script=script) as (url, _):
        for _ in range(args.repeat):
            with new_page(browser, url, args.quiet_ms, args.timeout) as timer:
                page = timer.page
                page.goto(url, wait_until="commit")
                drawn = page.get_by_text("clicks: 0").wait_for
                out.add("floor: first page (new browser)", timer.loaded(drawn))
                page.reload(wait_until="commit")
                out.add("floor: reload", timer.loaded(drawn))
        with new_page(browser, url, args.quiet_ms, args.timeout) as timer:
            page = timer.page
            page.goto(url, wait_until="commit")
            timer.loaded(page.get_by_text("clicks: 0").wait_for)
            for n in range(1, args.repeat + 1):
                out.add(
                    "floor: button click",
                    timer.time(
                        lambda: page.get_by_role("button", name="Click").click(),
                        lambda n=n: page.get_by_text(f"clicks: {n}").wait_for(),
                    ),
                )
    return out


# --- load beside the measurement -----------------------------------------------------------

BUSY_LOOP = (
    "import time\nend = time.monotonic() + {limit}\nwhile time.monotonic() < end:\n    pass\n"
)


@contextmanager
def busy_cores(n: int, limit_s: float) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Keep ``n`` cores busy: one plain Python loop per core, each ending after ``limit_s``.

    The loops are killed when the block ends, however it ends; the time limit bounds them
    even if this process dies without reaching its ``finally``.
    """
    code = BUSY_LOOP.format(limit=float(limit_s))
    loops = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    try:
        yield loops
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait(timeout=10)


# --- the report ---------------------------------------------------------------------------


def summary(samples: list[Sample], floor: float | None, first_page: bool) -> dict[str, Any]:
    totals = [s.total for s in samples]
    median = statistics.median(totals)
    target = FIRST_PAGE_TARGET if first_page else ACTION_TARGET
    return {
        "n": len(totals),
        "first": totals[0],
        "median": median,
        "min": min(totals),
        "max": max(totals),
        "server": statistics.median(s.server for s in samples),
        "render": statistics.median(s.render for s in samples),
        "kbytes": statistics.median(s.kbytes for s in samples),
        "target": target,
        "met": median < target,
        "x_floor": median / floor if floor else None,
    }


def table(name: str, rows: dict[str, dict[str, Any]]) -> str:
    head = (
        f"{name:38s} {'n':>2s} {'first':>7s} {'median':>7s} {'min':>7s} {'max':>7s} "
        f"{'server':>7s} {'render':>7s} {'KiB':>7s} {'target':>6s} {'':6s} {'×floor':>7s}"
    )
    lines = [head, "-" * len(head)]
    for action, r in rows.items():
        ratio = f"{r['x_floor']:7.1f}" if r["x_floor"] is not None else f"{'':7s}"
        lines.append(
            f"{action:38s} {r['n']:2d} {r['first']:7.3f} {r['median']:7.3f} {r['min']:7.3f} "
            f"{r['max']:7.3f} {r['server']:7.3f} {r['render']:7.3f} {r['kbytes']:7.0f} "
            f"{r['target']:6.1f} {'met' if r['met'] else 'MISSED':6s} {ratio}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", choices=("demo", "full", "both"), default="both")
    parser.add_argument("--repeat", type=int, default=5, help="samples of each action")
    parser.add_argument("--out", type=Path, help="write every sample and summary as JSON")
    parser.add_argument("--runs", type=int, default=8, help="runs per task (full workspace)")
    parser.add_argument("--depth", type=int, default=1000, help="documents per query (full)")
    parser.add_argument(
        "--upload-depth", type=int, default=100, help="documents per query in the uploaded run"
    )
    parser.add_argument("--quiet-ms", type=float, default=300, help="stillness that ends a step")
    parser.add_argument("--timeout", type=float, default=600, help="seconds one step may take")
    parser.add_argument(
        "--busy", type=int, default=0, help="cores kept busy by a loop while measuring"
    )
    parser.add_argument(
        "--busy-limit", type=float, default=3600, help="seconds after which each loop ends"
    )
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"needs Debian's chromium at {CHROMIUM}", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    names = ("demo", "full") if args.workspace == "both" else (args.workspace,)
    report: dict[str, Any] = {"repeat": args.repeat, "quiet_ms": args.quiet_ms, "busy": args.busy}
    with (
        tempfile.TemporaryDirectory() as tmp,
        busy_cores(args.busy, args.busy_limit),
        sync_playwright() as p,
    ):
        if args.busy:
            print(f"{args.busy} busy loop(s) running beside the measurement", file=sys.stderr)
        folder = Path(tmp)
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        floor = bench_floor(browser, args, folder)
        floor_rows = {a: summary(s, None, "first page" in a) for a, s in floor.samples.items()}
        floors = {
            k: floor_rows[f"floor: {k}"]["median"]
            for k in ("first page (new browser)", "reload", "button click")
        }
        print(table("floor (trivial app)", floor_rows))
        report["floor"] = {"summary": floor_rows, "samples": _raw(floor)}
        for name in names:
            ws_dir = folder / name
            ws_dir.mkdir()
            if name == "demo":
                ws = demo_workspace(ws_dir)
            else:
                ws = full_workspace(ws_dir, args.runs, args.depth, args.upload_depth)
            results = bench_workspace(browser, ws, args, folder)
            rows = {
                a: summary(
                    s,
                    floors[
                        "first page (new browser)"
                        if a.startswith("first")
                        else "reload"
                        if a == "reload"
                        else "button click"
                    ],
                    a.startswith("first page"),
                )
                for a, s in results.samples.items()
            }
            print()
            print(table(f"{name} workspace", rows))
            for note, value in results.notes.items():
                print(f"  {note}: {value}")
            report[name] = {"summary": rows, "samples": _raw(results), "notes": results.notes}
        browser.close()
    if args.out:
        args.out.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


def _raw(results: Results) -> dict[str, list[dict[str, float]]]:
    return {a: [asdict(s) for s in samples] for a, samples in results.samples.items()}


if __name__ == "__main__":
    sys.exit(main())
