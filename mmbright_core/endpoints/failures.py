"""What a failed request to an OpenAI-compatible endpoint says: one line, with what to do.

:func:`failure` turns the ``openai`` library's last exception (a refused key, an unknown
model, an HTTP status, a timeout or a dropped connection) into one
:class:`~mmbright_core.errors.EndpointError` that names the endpoint and the model;
:func:`read_key` says where a missing key goes; :func:`retry_after` reads a server's wish;
:func:`public_endpoint` is the endpoint as it may be shown and recorded.
"""

from __future__ import annotations

import os
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from mmbright_core.errors import EndpointError


class _Patience(Protocol):
    @property
    def timeout(self) -> float: ...


class FailedClient(Protocol):
    """What :func:`failure` reads of the client whose request failed (an ``EndpointClient``)."""

    @property
    def openai(self) -> Any:
        """The ``openai`` module, whose exception classes tell the failures apart."""

    @property
    def endpoint(self) -> str:
        """The endpoint as it may be shown."""

    @property
    def model(self) -> str:
        """The model asked for."""

    @property
    def api_key_env(self) -> str:
        """The environment variable the key was read from."""

    @property
    def limits(self) -> _Patience:
        """How long one request may take."""


def read_key(env: str) -> str:
    """Return the API key held by environment variable ``env``.

    Raises:
        EndpointError: The variable is unset or empty.
    """
    key = os.environ.get(env, "")
    if not key:
        raise EndpointError(
            f"no API key: the environment variable {env} is not set",
            hint=f"export {env}=<your key> (a server without keys, such as a local vLLM, "
            "takes any value), or name another variable with --option api_key_env=NAME.",
        )
    return key


def public_endpoint(url: str) -> str:
    """Return ``url`` without user info, query or fragment: what may be recorded and shown."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def failure(client: FailedClient, err: Exception, attempts: int) -> EndpointError:
    """Return the one-line error of ``client``'s request that failed ``attempts`` times."""
    errors = client.openai
    where = f"{client.endpoint} (model {client.model!r})"
    if isinstance(err, errors.AuthenticationError | errors.PermissionDeniedError):
        return EndpointError(
            f"{where} refused the key in {client.api_key_env} ({err.status_code})",
            hint=f"Check the key in {client.api_key_env}, or name another variable with "
            "--option api_key_env=NAME.",
        )
    if isinstance(err, errors.NotFoundError) or _names_model(err):
        return EndpointError(
            f"{where}: the server does not know this model",
            found=_detail(err),
            hint="Give --model a name the server lists at GET /models, and --endpoint "
            "the API's base URL (ending in /v1 for most servers).",
        )
    if isinstance(err, errors.APIStatusError):
        tried = f" after {attempts} attempts" if attempts > 1 else ""
        return EndpointError(
            f"{where} answered HTTP {err.status_code}{tried}",
            found=_detail(err),
            hint="Retries are set by --option retries=N and timeout=SECONDS.",
        )
    what = "timed out" if isinstance(err, errors.APITimeoutError) else "cannot be reached"
    return EndpointError(
        f"{where} {what} ({attempts} attempts, {client.limits.timeout:g} s each)",
        found=_detail(err),
        hint="Check --endpoint and that the server runs; a slow server needs a larger "
        "--option timeout=SECONDS.",
    )


def retry_after(err: Exception) -> float | None:
    """Return the seconds a server's ``Retry-After`` asks for, or None."""
    response = getattr(err, "response", None)
    value = None if response is None else response.headers.get("retry-after")
    try:
        return None if value is None else float(value)
    except ValueError:  # an HTTP date: fall back to the exponential wait
        return None


def _detail(err: Exception) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else None
        if message:
            return str(message)
    cause = err.__cause__ or err.__context__
    return str(err) if cause is None else f"{err} ({cause})"


def _names_model(err: Exception) -> bool:
    # vLLM, TEI and LiteLLM answer an unknown model with 400 rather than OpenAI's 404.
    status = getattr(err, "status_code", None)
    return status == 400 and "model" in _detail(err).lower()
