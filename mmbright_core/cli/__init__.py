"""The ``mmbright`` command line: one module per subcommand, registered here.

Each subcommand module exposes ``register(subparsers)``, which adds its parser and sets
``handler`` to a function ``(args) -> int``. Registering imports nothing heavy (handlers import
their backends when they run; see :class:`.options.SubcommandParser`), so ``mmbright --help``
answers without loading numpy or pandas. Errors this package raises on purpose are
printed to stderr as one message with exit status 2; nothing prints a traceback for them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from mmbright_core.cli.options import SubcommandParser
from mmbright_core.errors import MMBrightError

_SUBCOMMANDS = ("eval", "data", "run", "rewrite", "rerank", "models", "compare", "app", "notes")


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every available subcommand."""
    parser = argparse.ArgumentParser(
        prog="mmbright",
        description="Evaluate and analyse retrieval runs on the MM-BRIGHT benchmark.",
    )
    subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=SubcommandParser
    )
    for name in _SUBCOMMANDS:
        importlib.import_module(f"mmbright_core.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except MMBrightError as err:
        print(f"mmbright {args.command}: error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as err:  # a path that cannot be read or written: one line, no traceback
        print(f"mmbright {args.command}: error: {err}", file=sys.stderr)
        return 2
    except MemoryError:
        # Input under the size limit that still does not fit (a memory cap below the limit):
        # by now the unwinding has freed what was read, so one line can be printed.
        from mmbright_core.io._open import MAX_INPUT_ENV

        print(
            f"mmbright {args.command}: error: out of memory; set {MAX_INPUT_ENV}=<bytes> "
            "below the memory available to refuse such input early",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
