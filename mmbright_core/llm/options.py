"""The ``--option NAME=VALUE`` settings of an LLM job: sampling, limits, the rest.

``mmbright rewrite`` and the ``llm:`` reranker take the same options: sampling parameters
(sent with every request, over the recipe's own where it has them: BRIGHT's ``reason``
prompt and ``bright`` reranking; they key the answer cache), the client's limits
(concurrency, timeout, retries, backoff, the request and token budgets) and ``api_key_env``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mmbright_core.endpoints.client import DEFAULT_KEY_ENV, Limits, whole_option
from mmbright_core.errors import InputError, cut
from mmbright_core.llm.cache import ChatCache
from mmbright_core.llm.chat import DEFAULT_PARAMETERS, SAMPLING, ChatClient
from mmbright_core.retrieval.cache.store import default_cache_dir

#: ``--option`` names that set the client's limits, with their types.
LIMIT_OPTIONS = {
    "concurrency": int,
    "timeout": float,
    "retries": int,
    "backoff": float,
    "max_requests": int,
    "token_budget": int,
}


def split_options(
    options: dict[str, Any], defaults: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split ``--option`` values into sampling parameters, client limits and the rest.

    Args:
        options: The ``--option`` values.
        defaults: The sampling parameters the options override (None: the client's default,
            temperature 0).

    Raises:
        InputError: An option no part takes.
    """
    parameters = dict(DEFAULT_PARAMETERS if defaults is None else defaults)
    limits: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for name, value in options.items():
        if name in SAMPLING:
            parameters[name] = sampling_option(name, value)
        elif name in LIMIT_OPTIONS:
            limits[name] = option_number(name, value, LIMIT_OPTIONS[name])
        elif name == "image_side":  # the side images are scaled to; 0 would be no image
            rest[name] = whole_option(name, value, 1)
        elif name == "api_key_env":
            rest[name] = value
        else:
            known = [*SAMPLING, *LIMIT_OPTIONS, "api_key_env", "image_side"]
            raise InputError(
                f"unknown option {name!r}", expected=f"one of {', '.join(known)}", found=name
            )
    return parameters, limits, rest


def sampling_option(name: str, value: Any) -> Any:
    """Return sampling parameter ``name``'s ``value`` if the chat API takes it.

    ``temperature`` is a finite number of at least 0, ``top_p`` one from 0 to 1,
    ``max_tokens`` a whole number of at least 1, ``seed`` a whole number, ``stop`` a text or
    a list of texts: anything else (``top_p=nan``, a text for a number) would be sent to the
    server, or key the answer cache, as given.

    Raises:
        InputError: Any other value.
    """
    if name in ("max_tokens", "seed"):
        return whole_option(name, value, 1 if name == "max_tokens" else -(2**63))
    if name == "stop":
        texts = isinstance(value, list) and all(isinstance(v, str) for v in value)
        if isinstance(value, str) or (texts and value):
            return value
        expected = "a text, or a list of texts"
    else:
        most = 1.0 if name == "top_p" else math.inf
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if number and math.isfinite(value) and 0 <= value <= most:
            return value
        expected = f"a number from 0 to {most:g}" if name == "top_p" else "a number of at least 0"
    raise InputError(f"option {name} is not valid", expected=expected, found=cut(repr(value), 60))


def chat_client(
    model: str,
    endpoint: str | None,
    options: dict[str, Any],
    cache_dir: str | None,
    defaults: Mapping[str, Any] | None = None,
) -> ChatClient:
    """The chat client the options describe, caching under ``cache_dir``.

    ``defaults``: the sampling parameters of the recipe (a prompt's, a reranking mode's)
    that the options override; None: the client's default.
    """
    parameters, limits, rest = split_options(options, defaults)
    return ChatClient(
        model,
        endpoint,
        api_key_env=str(rest.get("api_key_env", DEFAULT_KEY_ENV)),
        parameters=parameters,
        limits=Limits(**limits),
        cache=ChatCache(default_cache_dir(cache_dir)),
    )


def option_number(name: str, value: Any, kind: type) -> Any:
    """Return option ``name``'s ``value`` as a ``kind`` (``int``, ``float``).

    Raises:
        InputError: ``value`` is not a number of that kind.
    """
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise InputError(
            f"option {name} is not a number", expected=kind.__name__, found=repr(value)
        ) from None
