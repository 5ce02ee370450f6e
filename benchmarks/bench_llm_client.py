"""Measure the chat client's overhead against the loopback server (calls/s at 1, 8, 32).

The server is the tests' OpenAI-compatible one (``tests/support/openai_server.py``: a Python
``ThreadingHTTPServer`` answering ``/v1/chat/completions`` from a SHA-256 of the messages),
so the figures measure the client side, not a model. For each concurrency:

- the floor: the server alone, driven by bare ``http.client`` keep-alive connections (one
  per thread) posting the same JSON bodies, nothing checked or kept;
- :class:`~mmbright_core.llm.chat.ChatClient` ``complete_all`` with no cache: the real
  ``openai`` client, the retry loop, the budget's lock, the answer checks;
- the same with the answer cache on disk, cold (each answer written atomically) and warm
  (a resumed job: no request at all).

Run: ``python benchmarks/bench_llm_client.py [--calls 400] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))  # the loopback server

from openai_server import CHAT_MODEL, KEY, serving  # noqa: E402

from mmbright_core.endpoints.client import Limits  # noqa: E402
from mmbright_core.llm.cache import ChatCache  # noqa: E402
from mmbright_core.llm.chat import ChatClient  # noqa: E402

CONCURRENCY = (1, 8, 32)


def requests_of(calls: int, salt: str) -> list[list[dict[str, str]]]:
    """``calls`` distinct one-message requests of about 60 words each."""
    words = " ".join(f"word{n}" for n in range(60))
    return [[{"role": "user", "content": f"{salt} {n}: {words}"}] for n in range(calls)]


def floor(url: str, requests: list[list[dict[str, str]]], workers: int) -> float:
    """Seconds the server takes to answer ``requests`` posted by bare keep-alive connections."""
    parts = urlsplit(url)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {KEY}"}
    chunks = [requests[i::workers] for i in range(workers)]

    def post_all(chunk: list[list[dict[str, str]]]) -> None:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port)
        for messages in chunk:
            body = json.dumps({"model": CHAT_MODEL, "messages": messages, "temperature": 0})
            connection.request("POST", f"{parts.path}/chat/completions", body, headers)
            connection.getresponse().read()
        connection.close()

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(post_all, chunks))
    return time.perf_counter() - start


def client_run(
    url: str, requests: list[list[dict[str, str]]], workers: int, cache: Path | None
) -> float:
    """Seconds :meth:`ChatClient.complete_all` takes for ``requests``."""
    client = ChatClient(
        CHAT_MODEL, url, limits=Limits(concurrency=workers, retries=0), cache=ChatCache(cache)
    )
    start = time.perf_counter()
    replies = client.complete_all(requests)
    elapsed = time.perf_counter() - start
    assert all(r.text for r in replies)
    return elapsed


def figures(url: str, calls: int, workers: int, repeat: int, cache: Path) -> list[float]:
    """Calls/s of the server alone, the client without cache, with it cold, with it warm."""
    seconds: list[list[float]] = [[], [], [], []]
    for n in range(repeat):
        seconds[0].append(floor(url, requests_of(calls, f"f{workers}.{n}"), workers))
        seconds[1].append(client_run(url, requests_of(calls, f"p{workers}.{n}"), workers, None))
        cached = requests_of(calls, f"c{workers}.{n}")
        seconds[2].append(client_run(url, cached, workers, cache))
        seconds[3].append(client_run(url, cached, workers, cache))
    return [calls / statistics.median(each) for each in seconds]


def main() -> int:
    """Run the benchmark and print one line per concurrency."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    os.environ["OPENAI_API_KEY"] = KEY
    print("concurrency\tserver alone\tclient, no cache\tclient, cold cache\tclient, warm cache")
    with serving(lifetime=3600) as server, tempfile.TemporaryDirectory() as tmp:
        # The standard library's backlog of 5 resets connections 32 clients open at once.
        server.httpd.socket.listen(128)
        for workers in CONCURRENCY:
            found = figures(server.url, args.calls, workers, args.repeat, Path(tmp) / str(workers))
            print(f"{workers}\t" + "\t".join(f"{f:,.0f} calls/s" for f in found), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
