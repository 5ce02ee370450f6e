"""A client for OpenAI-compatible endpoints: bounded retries, a request budget, one-line errors.

One client serves every server that speaks OpenAI's HTTP API (OpenAI, Azure OpenAI, vLLM,
text-embeddings-inference, LiteLLM proxies, Ollama...): the real ``openai`` library sends
the requests; this module decides when to try again and when to stop, and turns every
failure into one line that says what to do (:class:`EndpointError`, worded in
:mod:`~mmbright_core.endpoints.failures`). :class:`EndpointClient` holds what every endpoint
client shares (the key, the retries, the budget, the messages); the api retriever's
:class:`~mmbright_core.retrieval.backends.api_client.EmbeddingClient` adds the embeddings
API, and :mod:`mmbright_core.llm.chat` the chat API.

The library's own retries are switched off (``max_retries=0``) so that every HTTP attempt
is counted here: the request budget bounds attempts, not batches, because attempts are what
a provider bills and rate-limits. Every answer is bounded in size and time
(:mod:`~mmbright_core.endpoints.bounded_http`), and every limit and the endpoint are
checked before anything is sent.
"""

from __future__ import annotations

import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

from mmbright_core.endpoints.bounded_http import DEFAULT_MAX_ANSWER_BYTES, bounded_client
from mmbright_core.endpoints.failures import failure, public_endpoint, read_key, retry_after
from mmbright_core.errors import (
    EndpointError,
    InputError,
    MMBrightError,
    RequestBudgetError,
    cut,
    require,
    show,
)

#: The environment variable the key is read from unless ``api_key_env`` names another.
DEFAULT_KEY_ENV = "OPENAI_API_KEY"

#: Status codes worth another attempt: rate limits and server faults.
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})

T = TypeVar("T")


@dataclass(frozen=True)
class Limits:
    """How requests are made: their size, patience and number.

    Attributes:
        batch_inputs: The most inputs in one request.
        batch_chars: The most characters in one request (a token estimate: providers bound
            tokens per request; one input longer than this goes alone).
        timeout: Seconds one request may take, from connecting to the answer's last byte,
            before it counts as failed.
        retries: How many times a failed request is tried again (429, 5xx, timeouts,
            dropped connections); 0 means one attempt.
        backoff: Seconds before the first retry; each further retry waits twice as long,
            up to ``backoff_cap``. A server's ``Retry-After`` is honoured up to the cap.
        backoff_cap: The longest wait between two attempts.
        max_requests: The most HTTP attempts this client sends (None: no limit).
        concurrency: The most requests in flight at once (the chat client; the embeddings
            client sends one batch at a time).
        token_budget: The most tokens (prompt and completion, as the server counts them) the
            chat client spends before it stops (None: no limit).
        max_answer_bytes: The most bytes read of one answer; a longer one fails, unread.

    Raises:
        InputError: A limit out of its range (``retries=-1``, ``timeout=0``...), before any
            request is sent.
    """

    batch_inputs: int = 64
    batch_chars: int = 200_000
    timeout: float = 60.0
    retries: int = 5
    backoff: float = 0.5
    backoff_cap: float = 8.0
    max_requests: int | None = None
    concurrency: int = 8
    token_budget: int | None = None
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES

    def __post_init__(self) -> None:
        for name, least in _WHOLE.items():
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                whole_option(name, value, least)
        for name, above in _SECONDS.items():
            seconds_option(name, getattr(self, name), above)

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Return the wait before retry number ``attempt`` (0-based)."""
        wait = self.backoff * 2**attempt if retry_after is None else retry_after
        return max(0.0, min(self.backoff_cap, wait))


#: Limits that are whole numbers, with their least value; None (no limit) for the optional.
_WHOLE = {
    "batch_inputs": 1,
    "batch_chars": 1,
    "retries": 0,
    "max_requests": 1,
    "concurrency": 1,
    "token_budget": 1,
    "max_answer_bytes": 1,
}

_OPTIONAL = frozenset({"max_requests", "token_budget"})

#: Limits in seconds: True where the value must be above 0, False where 0 is allowed.
_SECONDS = {"timeout": True, "backoff": False, "backoff_cap": False}


def whole_option(name: str, value: object, least: int) -> int:
    """Return option ``name``'s ``value`` if it is a whole number of at least ``least``.

    Raises:
        InputError: Anything else (a text, a fraction, a boolean, a smaller number).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(
            f"option {name} is not valid",
            expected=f"a whole number of at least {least}",
            found=quoted(value),
        )
    return value


def seconds_option(name: str, value: object, above_zero: bool) -> float:
    """Return option ``name``'s ``value`` as seconds if it is a finite number in range.

    Raises:
        InputError: Not a number, not finite, negative (or 0 where ``above_zero``).
    """
    number = isinstance(value, int | float) and not isinstance(value, bool)
    seconds = float(value) if number else math.nan  # type: ignore[arg-type]
    if not math.isfinite(seconds) or seconds < 0 or (above_zero and seconds == 0):
        raise InputError(
            f"option {name} is not valid",
            expected=f"a number of seconds {'above' if above_zero else 'of at least'} 0",
            found=quoted(value),
        )
    return seconds


def check_endpoint(url: str) -> str:
    """Return ``url`` if it is an http(s) base URL with nothing but a host, port and path.

    A user name or password would be sent as HTTP Basic credentials in place of the key, and
    a query or fragment breaks every path the API appends; neither is ever shown back. A
    control character or a blank (a CR/LF) and a port that is no number from 1 to 65535
    would fail inside the HTTP library.

    Raises:
        EndpointError: Another scheme, no host, credentials, a query, a fragment, a control
            character or a blank, or a malformed port or host.
    """
    problems = []
    if any(char.isspace() or not char.isprintable() for char in url):
        problems.append("a control character or a blank")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # a port out of range or not a number, a broken [IPv6] host
        problems.append("a port that is no number from 1 to 65535, or a malformed host")
        parts, port = urlsplit("http://host"), None
    problems += [
        what
        for what, found in (
            ("a user name or password", parts.username is not None or parts.password is not None),
            ("a query", bool(parts.query) or url.rstrip("#").endswith("?")),
            ("a fragment", bool(parts.fragment)),
            ("the port 0", port == 0),
        )
        if found
    ]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        problems.insert(0, "no http or https scheme and host")
    if problems:
        raise EndpointError(
            f"the endpoint {_shown_endpoint(url)} holds {' and '.join(problems)}",
            expected="an http(s) base URL with a host and a path only, such as "
            "https://api.openai.com/v1",
            hint="The key goes in the environment variable named by --option api_key_env; "
            "Azure OpenAI serves such a URL at https://RESOURCE.openai.azure.com/openai/v1.",
        )
    return url


def _shown_endpoint(url: str) -> str:
    # What may be shown of an endpoint refused: never its user info, query or fragment.
    try:
        return public_endpoint(url) if url.isprintable() else show(_SECRETS.sub("", url))
    except ValueError:  # unparsed: the text before any user info, query or fragment
        return show(_SECRETS.sub("", url))


class EndpointClient:
    """What every client of an OpenAI-compatible endpoint shares: key, retries, budget.

    :meth:`call` sends one request through the real ``openai`` client, tries again after a
    408/409/429/5xx answer, a timeout or a dropped connection (exponential backoff, a
    server's ``Retry-After`` honoured up to the cap), counts every HTTP attempt against the
    request budget, and turns a final failure into one :class:`EndpointError` line. The
    counters are kept under a lock: a client may be called from several threads at once.

    Args:
        model: The model name the server knows.
        endpoint: The API's base URL; None: the ``openai`` library's default
            (``$OPENAI_BASE_URL``, else OpenAI's own).
        api_key_env: The environment variable holding the key.
        limits: Timeout, retries and the request budget.
        sleep: How to wait between attempts (a parameter so a caller can observe waits).
        what: What needs the ``openai`` package, for the missing-dependency message.

    Attributes:
        requests: HTTP attempts sent so far.
        retried: Attempts that failed and were tried again.

    Raises:
        MissingDependencyError: ``openai`` is not installed.
        EndpointError: No key in ``api_key_env``.
    """

    def __init__(
        self,
        model: str,
        endpoint: str | None = None,
        *,
        api_key_env: str = DEFAULT_KEY_ENV,
        limits: Limits | None = None,
        sleep: Callable[[float], None] = time.sleep,
        what: str = "the api retriever",
    ) -> None:
        self.openai = require("openai", what, "api")
        self.model = model
        self.limits = limits or Limits()
        self.api_key_env = api_key_env
        if endpoint is not None:
            check_endpoint(endpoint)
        self._http = bounded_client(self.limits.timeout, self.limits.max_answer_bytes, what)
        self._client = self.openai.OpenAI(
            base_url=endpoint,
            api_key=read_key(api_key_env),
            timeout=self.limits.timeout,
            max_retries=0,
            http_client=self._http,
        )
        self.endpoint = public_endpoint(check_endpoint(str(self._client.base_url)))
        self.sleep = sleep
        self.requests = self.retried = 0
        self._lock = threading.Lock()
        self._failed: EndpointError | None = None

    def call(self, send: Callable[[], T]) -> T:
        """Return ``send()``, tried again as the limits allow.

        Once a request has failed for good, no other is sent: every later call (one a
        thread had queued meanwhile) raises the same error unsent, so ``retries=0`` and
        one request at a time send one request to an endpoint that fails.

        Raises:
            EndpointError: The server refused the key or the model, stayed unreachable or
                kept failing after the retries (or ``send`` found the answer malformed).
            RequestBudgetError: The request budget was spent before an answer came.
        """
        try:
            return self._attempts(send)
        except EndpointError as err:
            with self._lock:
                self._failed = self._failed or err
            raise

    def _attempts(self, send: Callable[[], T]) -> T:
        errors = self.openai
        for attempt in range(self.limits.retries + 1):
            self._spend()
            try:
                return send()
            except MMBrightError:
                raise
            except (ValueError, RecursionError) as err:  # the json module's, on a broken body
                raise EndpointError(
                    f"{self.endpoint} (model {self.model!r}) answered a body that is not JSON",
                    found=f"{type(err).__name__}: {err}",
                    hint="Check that --endpoint is the API's base URL (ending in /v1 for "
                    "most servers) and that the server speaks OpenAI's API.",
                ) from None
            except OverflowError as err:  # the openai library's, on a number of 401 digits
                raise EndpointError(
                    f"{self.endpoint} (model {self.model!r}) answered a number no float holds",
                    found=f"{type(err).__name__}: {err}",
                    hint="Check that the server speaks OpenAI's API; nothing of this answer "
                    "is kept.",
                ) from None
            except (errors.APIConnectionError, errors.APIStatusError) as err:
                if not self._retryable(err) or attempt == self.limits.retries:
                    raise failure(self, err, attempt + 1) from err
                with self._lock:
                    self.retried += 1
                self.sleep(self.limits.delay(attempt, retry_after(err)))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def done_text(self) -> str:
        """What was answered so far, for the budget's message."""
        return f"{self.requests:,} requests answered or tried"

    def _spend(self) -> None:
        budget = self.limits.max_requests
        with self._lock:
            if self._failed is not None:
                raise self._failed
            if budget is None or self.requests < budget:
                self.requests += 1
                return
        raise RequestBudgetError(
            f"request budget spent: {budget} requests sent to {self.endpoint}, {self.done_text()}",
            requests=self.requests,
            hint="What was answered is in the cache and is not asked again; "
            "rerun with a larger --option max_requests=N to go on.",
        )

    def _retryable(self, err: Exception) -> bool:
        if isinstance(err, self.openai.APIStatusError):
            return err.status_code in RETRY_STATUSES
        return True  # connection refused or dropped, timeouts


# The parts of a URL that may hold secrets: user info, a query, a fragment.
_SECRETS = re.compile(r"(?<=//)[^/?#]*@|[?#].*", re.DOTALL)


def quoted(value: object) -> str:
    """A value from the input or an answer, for a message: a text quoted and both cut."""
    return show(value) if isinstance(value, str) else cut(repr(value), 60)
