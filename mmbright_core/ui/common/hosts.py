"""Answering only the host names a shared server is meant to be reached by.

A server listening on ``0.0.0.0`` answers whatever ``Host`` a request names, so a page on
another site whose name is made to resolve to the server (DNS rebinding) can load the
dashboard in a visitor's browser. With ``MMBRIGHT_ALLOWED_HOSTS`` set (comma-separated names,
``mmbright.example.org,127.0.0.1,localhost``), every page run checks the ``Host`` header of
the session's request and refuses the page for any other name. Unset, no check is made.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import streamlit as st

from mmbright_core.ui.common.literal import literal

HOSTS_ENV = "MMBRIGHT_ALLOWED_HOSTS"
"""The variable listing the host names the dashboard answers (comma-separated)."""


def allowed_hosts(value: str | None = None) -> frozenset[str] | None:
    """The allowed host names from ``value`` (default: ``$MMBRIGHT_ALLOWED_HOSTS``).

    Returns:
        The names, lower-cased and without ports; None when unset (no check).
    """
    text = os.environ.get(HOSTS_ENV, "") if value is None else value
    names = frozenset(host_name(part) for part in text.split(",") if part.strip())
    return names or None


def host_name(header: str) -> str:
    """The host of a ``Host`` header, lower-cased, port stripped (``[::1]:8501`` -> ``::1``)."""
    text = header.strip().lower()
    if text.startswith("["):  # an IPv6 literal: the port follows the bracket
        return text[1:].partition("]")[0]
    if text.count(":") == 1:
        text = text.partition(":")[0]
    return text.rstrip(".")  # "example.org." is the same name


def host_allowed(header: str | None, allowed: frozenset[str] | None) -> bool:
    """Whether a request with this ``Host`` header may be served.

    Args:
        header: The ``Host`` header, or None when the request carried none.
        allowed: The allowed names (:func:`allowed_hosts`); None allows every host.
    """
    if allowed is None:
        return True
    return header is not None and host_name(header) in allowed


def guard_host(headers: Mapping[str, str] | None = None) -> None:
    """Refuse the page (an error naming the host, then ``st.stop()``) for a host not allowed.

    Args:
        headers: The request's headers (default: ``st.context.headers``).
    """
    allowed = allowed_hosts()
    if allowed is None:
        return
    header = (st.context.headers if headers is None else headers).get("Host")
    if host_allowed(header, allowed):
        return
    found = "no Host header" if header is None else f"the host {host_name(header)!r}"
    st.error(
        literal(
            f"This server does not answer {found}; it answers {', '.join(sorted(allowed))}. "
            f"To allow another name, add it to {HOSTS_ENV} (comma-separated) and restart it."
        ),
        icon=":material/block:",
    )
    st.stop()
