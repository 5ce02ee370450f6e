"""The ``mmbright`` command line: one module per subcommand, registered here.

Each subcommand module exposes ``register(subparsers)``, which adds its parser from its
:class:`.options.Command` record (name, help line, description) and sets ``handler`` to a
function ``(args) -> int``. Registering imports nothing heavy (handlers import
their backends when they run; see :class:`.options.SubcommandParser`), so ``mmbright --help``
answers without loading numpy or pandas. Errors this package raises on purpose are
printed to stderr as one message with exit status 2; nothing prints a traceback for them.
What an error or a warning quotes (a server's answer, a file's text, a plugin's message) is
printed with its control and bidi characters escaped (:func:`~mmbright_core.errors.printable`):
a terminal never runs an escape sequence it was sent; so is the traceback of an exception a
plugin raises (exit status 1, as Python's own).
A warning about an input read as given (text after a TREC run's tag) is one line,
``mmbright <command>: warning: ...``, printed once.
Ctrl-C prints one line, ``mmbright <command>: interrupted`` followed by what was kept where
the subcommand says (its ``interrupted`` default), and exits with status 130.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

from mmbright_core.cli.options import SubcommandParser
from mmbright_core.errors import InputWarning, MMBrightError, escaped_traceback, printable

#: The exit status after Ctrl-C (128 + SIGINT, as a shell reports a command it interrupted).
INTERRUPTED = 130
_SUBCOMMANDS = (
    "eval",
    "dataset",
    "run",
    "rewrite",
    "rerank",
    "fuse",
    "pipeline",
    "models",
    "compare",
    "explain",
    "app",
    "notes",
)


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
    try:
        args = build_parser().parse_args(argv)  # imports a backend's options: may take a while
    except KeyboardInterrupt:
        return _interrupted("mmbright", None)
    try:
        with warnings.catch_warnings():
            _print_input_warnings(f"mmbright {args.command}")
            return int(args.handler(args))
    except KeyboardInterrupt:
        return _interrupted(f"mmbright {args.command}", getattr(args, "interrupted", None))
    except MMBrightError as err:
        print(f"mmbright {args.command}: error: {printable(str(err))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as err:  # a path that cannot be read or written: one line, no traceback
        print(f"mmbright {args.command}: error: {printable(str(err))}", file=sys.stderr)
        return 2
    except MemoryError:
        # By now the unwinding has freed what was allocated, so one line can be printed.
        print(f"mmbright {args.command}: error: {_out_of_memory(args.command)}", file=sys.stderr)
        return 2
    except Exception as err:  # a plugin's own failure: its traceback, as Python's, escaped
        print(escaped_traceback(err), end="", file=sys.stderr)
        return 1


def _print_input_warnings(prefix: str) -> None:
    """Print each :class:`InputWarning` as one ``<prefix>: warning: ...`` line on stderr.

    Called inside ``warnings.catch_warnings()``, which restores the display afterwards.
    """
    # "default": a warning is shown once per message, so an input read twice warns once.
    warnings.simplefilter("default", InputWarning)
    python_display = warnings.showwarning

    def display(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: TextIO | None = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, InputWarning):
            print(f"{prefix}: warning: {printable(str(message))}", file=sys.stderr)
        else:
            python_display(message, category, filename, lineno, file, line)

    warnings.showwarning = display


def _interrupted(prefix: str, kept: str | None) -> int:
    # Ctrl-C is how a long run is stopped, not a fault: one line and the shell's status for
    # SIGINT (128 + 2). Every output is written atomically, so what was finished is whole.
    print(f"{prefix}: interrupted" + (f"; {kept}" if kept else ""), file=sys.stderr)
    return INTERRUPTED


def _out_of_memory(command: str) -> str:
    """Say what ran out of memory: a run's encoding, or input read under the size limit."""
    if command == "run":
        # Images are decoded one at a time; what grows is the batch and the model.
        return (
            "out of memory while the retriever ran (its model and a batch of inputs); "
            "lower the batch size (--option batch_size=8) or use a machine with more memory"
        )
    from mmbright_core.io.reading import MAX_INPUT_ENV

    return (
        f"out of memory reading the input; set {MAX_INPUT_ENV}=<bytes> below the memory "
        "available to refuse such input early"
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
