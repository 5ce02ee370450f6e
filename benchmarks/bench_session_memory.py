"""Server memory for uploads in one browser session, and after the tab closes.

Serves the dashboard with ``streamlit run`` (the repository's settings), opens it in
chromium, uploads ``--files`` TREC runs of ``--mb`` MB each on the demo's Task 1 (its
queries, doc ids outside the corpus, so each is confirmed with "Add it anyway"), closes the
tab and reads the server's resident memory (``/proc/<pid>/status``) every few seconds until it
is back within 10% of where it started, or ``--wait`` seconds pass. Prints the figures as JSON
(``upload_s``: each upload's seconds from choosing the file to the run added).

Run: ``python benchmarks/bench_session_memory.py [--files 3] [--mb 181] [--wait 180]``.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "tests" / "support")]

import serving  # noqa: E402
from common import sizes  # noqa: E402

from mmbright_core.cli.app import SERVER_ENV  # noqa: E402
from mmbright_core.data.sources import open_source  # noqa: E402


def rss_mb(pid: int) -> float:
    """The resident memory of a process, in MB (10^6 bytes)."""
    with open(f"/proc/{pid}/status") as status:
        kib = next(line.split()[1] for line in status if line.startswith("VmRSS"))
    return int(kib) * 1024 / 1e6


def run_file(path: Path, megabytes: int, tag: str) -> Path:
    """Write a TREC run of about ``megabytes`` MB over the demo's Task 1 queries."""
    queries = sorted(
        f"{domain}/{query.query_id}"
        for domain in open_source("demo").domains()
        for query in open_source("demo").task(1, domain).queries
    )
    line = len(f"{queries[0]} Q0 x/{0:08x}_1.txt 1 1.5 {tag}\n")
    per_query = megabytes * 10**6 // line // len(queries)
    with path.open("w") as out:
        for query in queries:
            domain = query.split("/")[0]
            out.writelines(
                f"{query} Q0 {domain}/{n:08x}_1.txt {n + 1} {per_query - n}.5 {tag}\n"
                for n in range(per_query)
            )
    return path


def main() -> int:
    """Measure and print the figures."""
    args = sizes(__doc__.splitlines()[0], files=3, mb=181, wait=180.0)
    from playwright.sync_api import sync_playwright

    figures: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = [run_file(root / f"upload{n}.trec", args.mb, f"t{n}") for n in range(args.files)]
        figures["file_mb"] = [round(f.stat().st_size / 1e6, 1) for f in files]
        # The server's environment as `mmbright app` sets it (the C allocator for objects).
        budget = {**SERVER_ENV, "MMBRIGHT_SESSION_MAX_BYTES": str(2 * args.files * args.mb * 10**6)}
        with serving.streamlit_server(root, env=budget) as (url, server), sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(serving.CHROMIUM), args=serving.LAUNCH_ARGS
            )
            # A first session uploads a small run and closes, so the start is a warm server
            # (pages drawn, modules imported, a session released) and not its first import.
            page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
            serving.open_app(page, url)
            serving.open_runs_panel(page)
            serving.upload_run(page, run_file(root / "warm-up.trec", 1, "w"))
            page.context.close()
            page = serving.new_page(browser, viewport={"width": 1400, "height": 1000})
            serving.open_app(page, url)
            figures["start_mb"] = start = round(rss_mb(server.pid), 1)
            serving.open_runs_panel(page)
            after, seconds = [], []
            for path in files:
                began = time.monotonic()
                serving.upload_run(page, path)
                seconds.append(round(time.monotonic() - began, 1))
                after.append(round(rss_mb(server.pid), 1))
            figures["after_upload_mb"], figures["upload_s"] = after, seconds
            page.context.close()
            closed = time.monotonic()
            trace = []
            while time.monotonic() - closed < args.wait:
                time.sleep(5)  # sampling a process's memory over time, not waiting for a page
                now = rss_mb(server.pid)
                trace.append((round(time.monotonic() - closed), round(now, 1)))
                if now <= 1.1 * start:
                    break
            figures["after_close"] = trace
            figures["back_within_10_percent_s"] = (
                trace[-1][0] if trace and trace[-1][1] <= 1.1 * start else None
            )
            browser.close()
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
