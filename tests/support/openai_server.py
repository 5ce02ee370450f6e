"""A small OpenAI-compatible HTTP server on 127.0.0.1 for tests: embeddings, chat, faults, a log.

``POST /v1/embeddings`` answers OpenAI's schema (``encoding_format`` ``float`` or ``base64``)
with deterministic vectors made from a SHA-256 of each input (:func:`vector_of`), so a test
recomputes every score from the formula. Faults are scripted per request, in order
(:attr:`OpenAIServer.faults`): ``429`` (with ``Retry-After: 0``), ``500``, ``401``,
``slow`` (answers after ``slow_seconds``), ``drop`` (closes the connection unanswered),
``short`` (one vector fewer than inputs). ``dimensions`` in a request is honoured unless
``fixed_size`` is set. Answers that break the schema: ``same_index`` (every ``index`` 0),
``null_index``, ``text_in_vector`` (a string among the numbers), ``zeros`` (all-zero
vectors), ``no_vector`` (empty ones), ``resized`` (vectors 4 longer than the others);
numbers no float32 vector can score: ``tiny_values`` (every number 1e-50, 0 in float32),
``huge_values`` (every number 1e38: the length overflows) and ``long_number`` (a number of
401 digits first);
``reversed`` answers the items last first, each with its right ``index``.
Bodies that break HTTP or JSON, on any route: ``invalid_json``, ``nested_json`` (200,000
opened lists), ``hostile_error`` (a 500 whose message holds ANSI escapes and U+202E),
``trickle`` (the answer one byte every ``trickle_seconds``) and ``huge`` (a 200 that sends
``huge_bytes`` without a length, as fast as the client reads). :attr:`OpenAIServer.sent`
counts the body bytes written.
``hold_after=N`` keeps every request after the N-th waiting until :meth:`release`, so a
test can kill a client at a known point.

``POST /v1/chat/completions`` answers OpenAI's chat schema with the text :attr:`reply`
makes of the request body (by default :func:`reply_of`: words drawn from a SHA-256 of the
messages, so a test recomputes every answer), with ``usage`` counting words (or what
:attr:`usage` makes of the body: any JSON, as a faulty server sends). Chat faults,
besides the ones above: ``malformed`` (a 200 answer with no ``choices``) and ``empty`` (a
choice whose content is null). The server only listens on loopback and shuts itself down
after ``lifetime`` seconds if a test forgets to.
"""

from __future__ import annotations

import base64
import hashlib
import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

KEY = "sk-test-key"
MODEL = "tiny-embed"
CHAT_MODEL = "tiny-chat"
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel")


def vector_of(text: str, dim: int = 8) -> np.ndarray:
    """Return the server's raw vector of ``text``: SHA-256 bytes mapped to [-1, 1]."""
    digest = b""
    counter = 0
    while len(digest) < dim:
        digest += hashlib.sha256(f"{counter}:{text}".encode()).digest()
        counter += 1
    raw = np.frombuffer(digest[:dim], dtype=np.uint8).astype(np.float32)
    return (raw - 127.5) / 127.5


def message_text(body: dict[str, Any]) -> str:
    """Every text part of a chat request's messages, joined by newlines (images left out)."""
    texts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [part["text"] for part in content if part.get("type") == "text"]
    return "\n".join(texts)


def reply_of(body: dict[str, Any]) -> str:
    """The server's default chat answer: three words picked by a SHA-256 of the messages."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).digest()
    return " ".join(f"{WORDS[b % len(WORDS)]}{b}" for b in digest[:3])


class OpenAIServer:
    """The server's state: what it was asked, what it answers, and its scripted faults.

    Args:
        dim: Vector size (``dimensions`` in a request overrides it).
        models: Model names it knows.
        key: The one key it accepts (None: any).
        lifetime: Seconds after which it stops by itself.
    """

    def __init__(
        self,
        dim: int = 8,
        models: tuple[str, ...] = (MODEL, CHAT_MODEL),
        key: str | None = KEY,
        lifetime: float = 120.0,
    ) -> None:
        self.dim, self.models, self.key, self.lifetime = dim, models, key, lifetime
        self.faults: list[str] = []
        self.slow_seconds = 2.0
        self.trickle_seconds = 0.1
        self.huge_bytes = 256 << 20
        self.sent = 0  # body bytes written, every answer together
        self.fixed_size = False
        self.hold_after: int | None = None
        self.reply: Callable[[dict[str, Any]], str] = reply_of
        self.usage: Callable[[dict[str, Any]], Any] | None = None  # None: words counted
        self.held = threading.Event()  # set when a request is held
        self._release = threading.Event()
        self.requests: list[dict[str, Any]] = []  # every request body, in arrival order
        self.in_flight = self.most_in_flight = 0  # requests being answered, and the peak
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def release(self) -> None:
        """Let held requests go on."""
        self._release.set()

    def next_fault(self, body: dict[str, Any]) -> tuple[int, str | None]:
        """Log a request and return its number (1-based) and its scripted fault."""
        with self.lock:
            self.requests.append(body)
            number = len(self.requests)
            return number, (self.faults.pop(0) if self.faults else None)

    def embeddings(self, body: dict[str, Any], fault: str | None) -> tuple[int, dict[str, Any]]:
        """Answer one embeddings request body: ``(status, json)``."""
        if body.get("model") not in self.models:
            message = f"The model `{body.get('model')}` does not exist."
            return 404, _error(message, "model_not_found")
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else inputs
        if not isinstance(inputs, list) or any(not isinstance(t, str) or not t for t in inputs):
            return 400, _error("'$.input' is invalid: non-empty strings expected", None)
        dim = int((not self.fixed_size and body.get("dimensions")) or self.dim)
        data = [
            _item(i, vector_of(t, dim), body.get("encoding_format")) for i, t in enumerate(inputs)
        ]
        if fault == "short":
            data = data[:-1]
        data = _broken(data, fault)
        usage = {"prompt_tokens": sum(len(t) for t in inputs), "total_tokens": 0}
        return 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}

    def chat(self, body: dict[str, Any], fault: str | None) -> tuple[int, dict[str, Any]]:
        """Answer one chat request body: ``(status, json)``."""
        if body.get("model") not in self.models:
            message = f"The model `{body.get('model')}` does not exist."
            return 404, _error(message, "model_not_found")
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            return 400, _error("'$.messages' is invalid: a non-empty list expected", None)
        if fault == "malformed":
            return 200, {"object": "chat.completion", "model": body["model"]}
        text = None if fault == "empty" else self.reply(body)
        usage = {
            "prompt_tokens": len(message_text(body).split()),
            "completion_tokens": len((text or "").split()),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        sent = usage if self.usage is None else self.usage(body)
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        return 200, {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [choice],
            "usage": sent,
        }

    @contextmanager
    def running(self) -> Iterator[OpenAIServer]:
        """Serve in a thread for the ``with`` block (or at most ``lifetime`` seconds)."""
        thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        stopper = threading.Timer(self.lifetime, self.httpd.shutdown)
        stopper.daemon = True
        thread.start()
        stopper.start()
        try:
            yield self
        finally:
            self.release()
            stopper.cancel()
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join(timeout=10)


def _item(index: int, vector: np.ndarray, encoding: str | None) -> dict[str, Any]:
    embedding: Any = vector.tolist()
    if encoding == "base64":
        embedding = base64.b64encode(vector.astype("<f4").tobytes()).decode()
    return {"object": "embedding", "index": index, "embedding": embedding}


#: The faults whose vectors repeat one number: none has a direction once in float32.
FILLS = {"zeros": 0.0, "tiny_values": 1e-50, "huge_values": 1e38}


def _broken(data: list[dict[str, Any]], fault: str | None) -> list[dict[str, Any]]:
    # The schema faults of an embeddings answer (the module's docstring lists them).
    if fault == "reversed":
        return data[::-1]
    for number, item in enumerate(data):
        vector = item["embedding"]
        if fault == "same_index":
            item["index"] = 0
        elif fault == "null_index":
            item["index"] = None
        elif fault == "text_in_vector":
            item["embedding"] = [*vector[:-1], "0.5"]
        elif fault in FILLS:
            item["embedding"] = [FILLS[fault]] * len(vector)
        elif fault == "long_number":
            item["embedding"] = [10**400, *vector[1:]]
        elif fault == "no_vector":
            item["embedding"] = []
        elif fault == "resized" and number == 0:
            data = [{**other, "embedding": other["embedding"] + [0.5] * 4} for other in data]
    return data


#: The message of ``hostile_error``: a colour, a title-setting sequence and a bidi override.
HOSTILE = "model \x1b[31mred\x1b]0;owned\x07 \u202eevil"


def _error(message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _handler(server: OpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes: with Nagle on, each answer waits for the
        # client's delayed ACK (about 40 ms on Linux).
        disable_nagle_algorithm = True

        def log_message(self, *args: Any) -> None:  # keep test output quiet
            return

        def do_POST(self) -> None:
            with server.lock:
                server.in_flight += 1
                server.most_in_flight = max(server.most_in_flight, server.in_flight)
            try:
                self._answer()
            finally:
                with server.lock:
                    server.in_flight -= 1

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            number, fault = server.next_fault(body)
            if server.hold_after is not None and number > server.hold_after:
                server.held.set()
                server._release.wait(timeout=server.lifetime)
            if fault == "drop":
                self.close_connection = True
                self.connection.shutdown(2)
                return
            if fault == "slow":
                time.sleep(server.slow_seconds)
            if (
                server.key is not None
                and self.headers.get("Authorization") != f"Bearer {server.key}"
            ):
                fault = "401"
            if fault in {"401", "429", "500"}:
                status = int(fault)
                self._send(status, _error(f"scripted {status}", None), retry=status == 429)
                return
            if fault == "hostile_error":
                self._send(500, _error(HOSTILE, None))
                return
            if fault in {"invalid_json", "nested_json", "huge"}:
                self._raw(fault)
                return
            route = self.path.rstrip("/")
            trickle = fault == "trickle"
            if route.endswith("/embeddings"):
                self._send(*server.embeddings(body, fault), trickle=trickle)
            elif route.endswith("/chat/completions"):
                self._send(*server.chat(body, fault), trickle=trickle)
            else:
                self._send(404, _error(f"no route {self.path}", None))

        def _send(
            self, status: int, payload: dict[str, Any], retry: bool = False, trickle: bool = False
        ) -> None:
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if retry:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                step = 1 if trickle else max(1, len(data))
                for start in range(0, len(data), step):
                    if trickle:
                        time.sleep(server.trickle_seconds)
                    self.wfile.write(data[start : start + step])
                    server.sent += len(data[start : start + step])
            except OSError:  # the client went away (a timeout, a killed process)
                self.close_connection = True

        def _raw(self, fault: str) -> None:
            # A 200 whose body is not a JSON answer; "huge" has no length and never ends
            # before huge_bytes, as a broken or hostile server may send.
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if fault == "huge":
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self._huge()
                    return
                data = b'{"data": [' if fault == "invalid_json" else b"[" * 200_000 + b"]" * 200_000
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                server.sent += len(data)
            except OSError:
                return

        def _huge(self) -> None:
            block = b'{"pad": "' + b"x" * ((1 << 20) - 9)
            while server.sent < server.huge_bytes:
                self.wfile.write(block)
                server.sent += len(block)
                block = b"x" * (1 << 20)

    return Handler


@contextmanager
def serving(**options: Any) -> Iterator[OpenAIServer]:
    """Start an :class:`OpenAIServer` for the ``with`` block."""
    with OpenAIServer(**options).running() as server:
        yield server


def kill_when_held(server: OpenAIServer, command: list[str], env: dict[str, str]) -> None:
    """Start ``command`` and SIGKILL it once the server holds a request (``hold_after``)."""
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    try:
        assert server.held.wait(timeout=120), "the job never reached the held request"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        process.kill()
