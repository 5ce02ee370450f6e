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

_SUBCOMMANDS = ("eval", "data", "run", "models", "compare", "app", "notes")


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
        # By now the unwinding has freed what was allocated, so one line can be printed.
        print(f"mmbright {args.command}: error: {_out_of_memory(args.command)}", file=sys.stderr)
        return 2


def _out_of_memory(command: str) -> str:
    """Say what ran out of memory: a run's encoding, or input read under the size limit."""
    if command == "run":
        # Images are decoded one at a time; what grows is the batch and the model.
        return (
            "out of memory while the retriever ran (its model and a batch of inputs); "
            "lower the batch size (--option batch_size=8) or use a machine with more memory"
        )
    from mmbright_core.io._open import MAX_INPUT_ENV

    return (
        f"out of memory reading the input; set {MAX_INPUT_ENV}=<bytes> below the memory "
        "available to refuse such input early"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
