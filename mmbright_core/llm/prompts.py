"""The prompts ``mmbright rewrite`` asks an LLM with: ``reason``, ``caption`` or a file.

``reason`` is BRIGHT's reasoning recipe (xlang-ai/BRIGHT ``reason.py``: identify the
essential problem, reason step by step about what relevant documents contain, draft an
answer), here told to look at the query's images too; its answer *replaces* the query, as
BRIGHT's reasoning queries do. ``caption`` asks for a description of each query image, and
its answer is *appended* to the query (the paper's caption-augmented baseline). A template
file gives any other prompt: plain text with ``{query}`` and optionally ``{domain}``
(``{{``/``}}`` for literal braces); its answer is appended unless ``--combine replace``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

from mmbright_core.errors import InputError
from mmbright_core.io._open import decode, load

REASON = """Here is a question posted on the {domain} StackExchange site. Any images attached \
to it are given with it.

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

BUILT_IN = {"reason": (REASON, "replace"), "caption": (CAPTION, "append")}
COMBINES = ("append", "replace")
FIELDS = frozenset({"query", "domain"})


@dataclass(frozen=True)
class Prompt:
    """A rewriting prompt.

    Attributes:
        name: ``reason``, ``caption``, or the template file's name.
        template: The text, with ``{query}`` and ``{domain}`` to fill.
        combine: ``replace`` (the answer is the new query) or ``append`` (the answer goes
            after the original text).
    """

    name: str
    template: str
    combine: str

    def render(self, query: str, domain: str) -> str:
        """The prompt's text for one query."""
        return self.template.format(query=query, domain=domain)

    def combined(self, original: str, answer: str) -> str:
        """The text retrievers get: the answer, or the original followed by it."""
        return answer if self.combine == "replace" else f"{original}\n{answer}"


def get_prompt(spec: str, combine: str | None = None) -> Prompt:
    """Return the built-in prompt ``spec`` or the template in file ``spec``.

    Args:
        spec: ``reason``, ``caption`` or a path to a text file.
        combine: ``append`` or ``replace``; None: the prompt's own (``replace`` for
            ``reason``, ``append`` otherwise).

    Raises:
        InputError: An unknown combine, a missing file, or a template whose fields are not
            ``{query}`` and ``{domain}`` (or that lacks ``{query}``).
    """
    if combine is not None and combine not in COMBINES:
        raise InputError("unknown --combine", expected=" or ".join(COMBINES), found=repr(combine))
    if spec in BUILT_IN:
        template, own = BUILT_IN[spec]
        return Prompt(spec, template, combine or own)
    path = Path(spec)
    if not path.is_file():
        raise InputError(
            "unknown prompt",
            expected="reason, caption, or a template file",
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
