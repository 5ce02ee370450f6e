"""The prompts ``mmbright rewrite`` asks an LLM with: built-in ones or a template file.

``reason`` is BRIGHT's reasoning recipe as xlang-ai/BRIGHT ``reason.py`` sends it on its
OpenAI path (``OpenAIModel.generate`` and the ``__main__`` loop): the system message
``You are a helpful assistant``, then the post with each newline made a space, followed by
its three numbered instructions, sampled at temperature 0.8 and top_p 0.8 with at most 2048
new tokens; its answer *replaces* the query. On tasks 2-4 the query's images follow the text
in the same user message (BRIGHT's queries have none). ``reason-images`` is the package's
own wording of three such steps (it comes from no upstream code), told to look at the
query's images, without a system message and at the client's default sampling; its answer
replaces the query too. ``caption`` asks for a description of each query image, and its
answer is *appended* to the query (the paper's caption-augmented baseline). A template file
gives any other prompt: plain text with ``{query}`` and optionally ``{domain}`` (``{{``/``}}``
for literal braces); its answer is appended unless ``--combine replace``.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mmbright_core.errors import InputError
from mmbright_core.io.reading import decode, load

# xlang-ai/BRIGHT reason.py, ``__main__``: ``prompt = (f'{cur_post}\n\n' f'Instructions:\n' ...)``.
REASON = (
    "{query}\n\n"
    "Instructions:\n"
    "1. Identify the essential problem.\n"
    "2. Think step by step to reason and describe what information could be relevant and "
    "helpful to address the questions in detail.\n"
    "3. Draft an answer with as many thoughts as you have.\n"
)
#: The system message of BRIGHT's OpenAI path, ``reason.py`` ``OpenAIModel.generate``'s and
#: ``rerank.py`` ``OpenAIModel.rerank``'s alike (no full stop, unlike the default of their
#: ``format_chat``).
BRIGHT_SYSTEM = "You are a helpful assistant"
#: The sampling of both files' ``OpenAIModel``: ``temperature=0.8``, ``top_p=0.8``,
#: ``max_tokens = 2048``.
BRIGHT_PARAMETERS: Mapping[str, Any] = {"temperature": 0.8, "top_p": 0.8, "max_tokens": 2048}

REASON_IMAGES = """Here is a question posted on the {domain} StackExchange site. Any images \
attached to it are given with it.

{query}

Instructions:
1. Identify the essential problem in the post (look at its images too).
2. Think step by step to reason about what should be included in the relevant documents.
3. Draft an answer."""

CAPTION = """Here is a question posted on the {domain} StackExchange site, with its images.

{query}

Describe each image in detail, one paragraph per image, in order: what it shows, any text, \
numbers, labels, symbols or code visible in it, and how its parts relate. Do not answer the \
question."""

COMBINES = ("append", "replace")
FIELDS = frozenset({"query", "domain"})


@dataclass(frozen=True)
class Prompt:
    """A rewriting prompt.

    Attributes:
        name: ``reason``, ``reason-images``, ``caption``, or the template file's name.
        template: The text, with ``{query}`` and ``{domain}`` to fill.
        combine: ``replace`` (the answer is the new query) or ``append`` (the answer goes
            after the original text).
        system: The system message sent before the prompt, or None for none.
        query_newlines: What each newline of the query text becomes in the prompt (None:
            kept).
        parameters: The sampling parameters the prompt is sent with unless ``--option``
            says otherwise (None: the client's default).
    """

    name: str
    template: str
    combine: str
    system: str | None = None
    query_newlines: str | None = None
    parameters: Mapping[str, Any] | None = None

    def render(self, query: str, domain: str) -> str:
        """The prompt's text for one query."""
        if self.query_newlines is not None:
            query = query.replace("\n", self.query_newlines)
        return self.template.format(query=query, domain=domain)

    def combined(self, original: str, answer: str) -> str:
        """The text retrievers get: the answer, or the original followed by it."""
        return answer if self.combine == "replace" else f"{original}\n{answer}"


BUILT_IN = {
    "reason": Prompt("reason", REASON, "replace", BRIGHT_SYSTEM, " ", BRIGHT_PARAMETERS),
    "reason-images": Prompt("reason-images", REASON_IMAGES, "replace"),
    "caption": Prompt("caption", CAPTION, "append"),
}


def get_prompt(spec: str, combine: str | None = None) -> Prompt:
    """Return the built-in prompt ``spec`` or the template in file ``spec``.

    Args:
        spec: ``reason``, ``reason-images``, ``caption`` or a path to a text file.
        combine: ``append`` or ``replace``; None: the prompt's own (``replace`` for
            ``reason`` and ``reason-images``, ``append`` otherwise).

    Raises:
        InputError: An unknown combine, a missing file, or a template whose fields are not
            ``{query}`` and ``{domain}`` (or that lacks ``{query}``).
    """
    if combine is not None and combine not in COMBINES:
        raise InputError("unknown --combine", expected=" or ".join(COMBINES), found=repr(combine))
    if spec in BUILT_IN:
        built_in = BUILT_IN[spec]
        return replace(built_in, combine=combine or built_in.combine)
    path = Path(spec)
    if not path.is_file():
        raise InputError(
            "unknown prompt",
            expected=f"{', '.join(BUILT_IN)}, or a template file",
            found=repr(spec),
            hint="Give a path to a text file holding {query} (and optionally {domain})",
        )
    template = decode(load(path))
    check_template(template, str(path))
    return Prompt(path.name, template, combine or "append")


def check_template(template: str, name: str) -> None:
    """Refuse a template with fields other than ``{query}``/``{domain}`` or no ``{query}``."""
    try:
        fields = {
            field for _, field, _, _ in string.Formatter().parse(template) if field is not None
        }
    except ValueError as err:
        raise InputError(
            "a template that does not parse",
            source=name,
            found=str(err),
            hint="Write literal braces as {{ and }}",
        ) from None
    unknown = sorted(fields - FIELDS)
    if unknown or "query" not in fields:
        raise InputError(
            "a template with the wrong fields",
            source=name,
            expected="{query} and optionally {domain}",
            found=", ".join(f"{{{f}}}" for f in sorted(fields)) or "no field",
            hint="Write literal braces as {{ and }}",
        )
