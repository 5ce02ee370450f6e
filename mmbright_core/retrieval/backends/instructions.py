"""Instruction sets: which instruction text a model's queries and documents get, by name.

A run names its set with ``--instructions`` and records it in ``config.json``:

- ``official``: what the released MM-BRIGHT harness passes. Its runner reads
  ``configs/<model>/default.json`` and falls back to empty instructions; the repository ships
  no such file, so every instruction-tuned model ran with empty instructions. Prefixes the
  harness writes into a retriever's code (Nomic's ``search_query: ``, DiVeR's
  ``Represent this text:``, RaDeR's ``query: ``) are part of this set.
- ``bright``: BRIGHT's per-domain StackExchange instructions (xlang-ai/BRIGHT
  ``configs/<model>/<domain>.json``), for the models BRIGHT has configurations for.
- ``mteb``: MTEB's own prompts, resolved by MTEB from the task metadata: only the ``mteb``
  backend applies them, so a preset asked for this set runs through that backend.
- ``none``: no instruction at all.

Instruction texts may hold ``{domain}``, filled with the domain's name when a domain is
encoded (BRIGHT's templates say ``{task}``, which its runner fills with the domain).
"""

from __future__ import annotations

from mmbright_core.errors import InputError

INSTRUCTION_SETS = ("official", "bright", "mteb", "none")
"""Every instruction set, the default first."""

DEFAULT_INSTRUCTIONS = "official"

DOMAIN_FIELD = "{domain}"


def fill_domain(template: str, domain: str | None) -> str:
    """Return ``template`` with every ``{domain}`` replaced by ``domain``.

    Only that one field is replaced, so any other braces an instruction holds stay as written.

    Raises:
        InputError: The template names ``{domain}`` but no domain is given.
    """
    if DOMAIN_FIELD not in template:
        return template
    if domain is None:
        raise InputError(
            "an instruction names {domain} but no domain is bound",
            found=repr(template),
            hint="Encode within a domain's run, or drop {domain} from the instruction.",
        )
    return template.replace(DOMAIN_FIELD, domain)
