"""Options several subcommands share, declared once so that they read and behave alike.

The task options (``--source``, ``--task``, ``--domain``, ``--protocol``, ``--negatives``)
mean the same in every subcommand, and their choices come from
:mod:`mmbright_core.data.choices`. Nothing here imports more than argparse and those
constants: ``mmbright --help`` builds every subcommand's parser, and must stay fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mmbright_core.data.choices import NEGATIVES, PROTOCOLS, TASKS

SOURCE_FORMS = (
    "'demo', 'hf' (the pinned hub revision), 'hf@REVISION' or a folder with the published layout"
)

NEGATIVES_HELP = (
    "tasks 1-2: 'exclude' each query's negative_ids from its ranking before the top-1000 cut "
    "(default; the official numbers) or 'keep' them. What the ids are is not documented: by "
    "their naming, hard negatives. Task 4's negative-image pairs are excluded either way"
)

Declaration = Callable[[argparse.ArgumentParser], None]


@dataclass(frozen=True)
class Command:
    """A subcommand as ``mmbright --help`` lists it.

    Attributes:
        name: What the user types (``mmbright <name>``).
        help: The line ``mmbright --help`` shows beside the name.
        description: The paragraph that opens ``mmbright <name> --help``, written as a
            block of text: its line breaks and indentation fold into single spaces, as
            argparse folds them when it prints the paragraph.
    """

    name: str
    help: str
    description: str


def add_command(subparsers: Any, command: Command) -> SubcommandParser:
    """Add ``command``'s parser to the ``mmbright`` parser's subcommands and return it."""
    description = " ".join(command.description.split())
    parser: SubcommandParser = subparsers.add_parser(
        command.name, help=command.help, description=description
    )
    return parser


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser that can leave some declarations until it is used.

    A declaration that needs a heavy import (the registered retrievers, the Ray engine's
    options, the statistics' defaults) is passed to :meth:`later`: it runs when this parser
    parses its arguments or prints its help, so ``mmbright --help`` never imports it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._later: list[Declaration] = []

    def later(self, declare: Declaration) -> None:
        """Run ``declare(self)`` before this parser is first used."""
        self._later.append(declare)

    def _declare(self) -> None:
        while self._later:
            self._later.pop(0)(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """Declare what was left for later, then parse."""
        self._declare()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        """Declare what was left for later, then format the usage line."""
        self._declare()
        return super().format_usage()

    def format_help(self) -> str:
        """Declare what was left for later, then format the help."""
        self._declare()
        return super().format_help()


def declare_later(parser: argparse.ArgumentParser, declare: Declaration) -> None:
    """Run ``declare(parser)`` when ``parser`` is first used, or now for a plain parser."""
    if isinstance(parser, SubcommandParser):
        parser.later(declare)
    else:
        declare(parser)


def add_source(
    parser: argparse.ArgumentParser | Any, *, required: bool = True, lead: str = "the dataset"
) -> None:
    """Add ``--source``: where the dataset is read from."""
    parser.add_argument("--source", required=required, help=f"{lead}: {SOURCE_FORMS}")


def add_task(
    parser: argparse.ArgumentParser | Any,
    *,
    required: bool = True,
    several: bool = False,
    help: str | None = None,
) -> None:
    """Add ``--task N`` (or ``--task N [N ...]`` with ``several``), one of the four tasks."""
    parser.add_argument(
        "--task",
        type=int,
        choices=TASKS,
        nargs="+" if several else None,
        required=required,
        help=help,
    )


def add_domains(
    parser: argparse.ArgumentParser | Any,
    *,
    required: bool = False,
    default: str = "every domain",
    help: str | None = None,
) -> None:
    """Add ``--domain`` into ``args.domains``: a list, or None when the option is not given.

    ``--domain a b``, ``--domain a --domain b`` and ``--domain a b --domain c`` all name a
    list of domains, in every subcommand. Before positional arguments, end the list with
    ``--`` (``--domain a -- RUN_A RUN_B``): argparse gives ``nargs="+"`` every word it can.
    """
    parser.add_argument(
        "--domain",
        dest="domains",
        nargs="+",
        action="extend",
        required=required,
        metavar="D",
        help=help or f"domains: --domain a b or --domain a --domain b (default: {default})",
    )


def add_protocol(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--protocol``: Task 4's judgment protocol."""
    parser.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        default="paper",
        help="Task 4 judgment protocol: paper (default), legacy (the released passage key), "
        "release (scored as the released code scores it)",
    )


def add_negatives(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--negatives exclude|keep`` to a parser or an argument group."""
    parser.add_argument("--negatives", choices=NEGATIVES, default="exclude", help=NEGATIVES_HELP)


def add_task_options(
    parser: argparse.ArgumentParser | Any,
    *,
    required: bool = True,
    task_help: str | None = None,
    domains: str = "every domain",
) -> None:
    """Add the options that choose one task of a dataset and how it is judged.

    Args:
        parser: A parser or an argument group.
        required: Whether ``--source`` and ``--task`` must be given.
        task_help: The help of ``--task``.
        domains: What no ``--domain`` means, for its help.
    """
    add_source(parser, required=required)
    add_task(parser, required=required, help=task_help)
    add_domains(parser, default=domains)
    add_protocol(parser)
    add_negatives(parser)


WAIT_ADVICE = "Wait for it to end, pass --wait, or choose another --out"
"""What a command refused by another job's claim on its output says to do."""


def add_wait(parser: argparse.ArgumentParser | Any) -> None:
    """Add ``--wait [SECONDS]``: wait for another job writing the same output, not refuse."""
    parser.add_argument(
        "--wait",
        nargs="?",
        type=_seconds,
        const=None,
        default=0.0,
        metavar="SECONDS",
        help="when another job is writing the same output, wait for it to end (at most "
        "SECONDS, when given) and then go on, instead of stopping at once",
    )


def claimant(args: argparse.Namespace) -> Any:
    """The :class:`~mmbright_core.io.claims.Claimant` of ``--wait``, for a command's output."""
    from mmbright_core.io.claims import Claimant

    return Claimant(wait=args.wait, advice=WAIT_ADVICE)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}")
    return value
