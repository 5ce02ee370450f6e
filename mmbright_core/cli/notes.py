"""``mmbright notes``: export, import and edit the failure tags and notes kept on queries.

The notes live in one SQLite file that the dashboard writes as researchers tag queries
(default: ``$MMBRIGHT_NOTES``, else ``notes.sqlite3`` in the user's data folder; ``--db``
names another). ``export`` writes them as CSV or JSON, ``import`` reads such a file back
(merging by default: the newer note wins, tags are united), ``tags`` lists or edits the
taxonomy.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any, Literal

from mmbright_core.cli.options import Command, add_command, add_domains, add_source, add_task
from mmbright_core.data.choices import PROTOCOLS

_DB_HELP = "the notes file (default: $MMBRIGHT_NOTES, else notes.sqlite3 in the data folder)"


NOTES_COMMAND = Command(
    "notes",
    "export, import and edit the failure tags and notes on queries",
    """The failure tags and free notes researchers keep on queries, in one SQLite file shared
    by every dashboard session.""",
)


def register(subparsers: Any) -> None:
    """Add the ``notes`` subcommand and its ``export``, ``import`` and ``tags`` actions."""
    parser = add_command(subparsers, NOTES_COMMAND)
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    export = actions.add_parser(
        "export",
        help="write the notes as CSV or JSON",
        description="Write the annotated queries (and, in JSON, the taxonomy) as CSV or JSON.",
    )
    export.add_argument(
        "--format", choices=("csv", "json"), help="default: by --out's suffix, else csv"
    )
    export.add_argument("--out", metavar="FILE", help="destination (default: standard output)")
    filters = export.add_argument_group("filters (default: every note)")
    add_source(filters, required=False, lead="only notes on this data source")
    add_task(filters, required=False, help="only this task")
    add_domains(filters, default="every domain")
    filters.add_argument("--protocol", choices=PROTOCOLS, help="only this judgment protocol")

    read = actions.add_parser(
        "import",
        help="read an exported CSV or JSON file into the notes",
        description="Read an export back in one transaction. merge (default) keeps the "
        "newer of two notes and unites the tags; replace sets each query in the file to the "
        "file's note and tags, but keeps (and counts as conflicts) those changed here after "
        "the file's version of them, unless --force. Either way the counts say what happened. "
        "A time later than now (past a few minutes for clocks) is refused.",
    )
    read.add_argument("file", metavar="FILE", help="a file written by mmbright notes export")
    read.add_argument("--mode", choices=("merge", "replace"), default="merge")
    read.add_argument("--format", choices=("csv", "json"), help="default: by FILE's suffix")
    read.add_argument(
        "--force",
        action="store_true",
        help="with --mode replace: also overwrite notes changed here after the file's version",
    )

    tags = actions.add_parser(
        "tags",
        help="list or edit the failure taxonomy",
        description="Without an option, list the taxonomy (tag, queries using it, "
        "description). Renaming a tag carries its labels; a tag in use is removed only "
        "with --force, which drops its labels too.",
    )
    edit = tags.add_mutually_exclusive_group()
    edit.add_argument("--add", metavar="NAME", help="append a tag")
    edit.add_argument("--rename", nargs=2, metavar=("OLD", "NEW"), help="rename a tag")
    edit.add_argument("--remove", metavar="NAME", help="remove a tag")
    tags.add_argument("--description", default="", help="with --add: what the tag means")
    tags.add_argument("--force", action="store_true", help="with --remove: drop its labels")
    for action, handler in ((export, run_export), (read, run_import), (tags, run_tags)):
        action.add_argument("--db", metavar="PATH", help=_DB_HELP)
        action.set_defaults(handler=handler)


def run_export(args: argparse.Namespace) -> int:
    """Write the notes chosen by the filters to ``--out`` or standard output."""
    from mmbright_core.errors import printable
    from mmbright_core.io.atomic import atomic_write_text
    from mmbright_core.notes import NotesStore

    fmt: Literal["csv", "json"] = args.format or (
        "json" if (args.out or "").lower().endswith(".json") else "csv"
    )
    filters = {
        "source": args.source,
        "task": args.task,
        "protocol": args.protocol,
        "domain": args.domains,
    }
    with NotesStore(args.db, read_only=True) as store:
        count = len(store.records(**filters))
        text = store.export(fmt, **filters)
    if args.out:
        atomic_write_text(args.out, text)
        print(f"wrote {count} annotated queries to {args.out}", file=sys.stderr)
    elif sys.stdout.isatty():
        # A note or tag may hold control or bidi characters: on a terminal they are shown
        # as escapes, never run; a pipe or a file gets the export exactly.
        sys.stdout.write(printable(text.replace("\r\n", "\n"), keep="\n"))
    else:
        sys.stdout.write(text)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Read an export into the notes and print what it did."""
    from mmbright_core.errors import InputError, InputWarning
    from mmbright_core.notes import NotesStore
    from mmbright_core.notes.records import read

    if args.force and args.mode != "replace":
        raise InputError("--force only goes with --mode replace", hint="Add --mode replace")
    # The file is read and checked before the notes file is opened: a bad import leaves
    # no trace, not even a new empty notes file.
    parsed = read(args.file, args.format)
    with NotesStore(args.db) as store:
        report = store.import_parsed(parsed, mode=args.mode, force=args.force)
        print(f"imported {args.file} into {store.path}: {report.summary()}")
    if report.conflicts:
        warnings.warn(
            f"{report.conflicts} queries were changed here after the file's version of them "
            "and were kept as they are; compare them (mmbright notes export), then import "
            "with --force to overwrite them",
            InputWarning,
            stacklevel=1,
        )
    return 0


def run_tags(args: argparse.Namespace) -> int:
    """Apply one taxonomy edit, if any, then list the taxonomy as TSV."""
    from mmbright_core.errors import InputError, printable
    from mmbright_core.notes import NotesStore

    if args.force and not args.remove:
        raise InputError("--force only goes with --remove", hint="Add --remove NAME")
    if args.description and not args.add:
        raise InputError("--description only goes with --add", hint="Add --add NAME")
    # Listing alone only reads: it works on a read-only file and creates none.
    editing = bool(args.add or args.rename or args.remove)
    with NotesStore(args.db, read_only=not editing) as store:
        if args.add:
            store.add_tag(args.add, args.description)
        elif args.rename:
            store.rename_tag(*args.rename)
        elif args.remove:
            dropped = store.remove_tag(args.remove, force=args.force)
            if dropped:
                print(f"removed {args.remove!r} and its {dropped} labels", file=sys.stderr)
        print("tag\tuses\tdescription")
        # A name or description stored by an older version may hold control characters:
        # written as escapes, they can neither drive the terminal nor split the columns.
        for tag in store.tags():
            print(f"{printable(tag.name)}\t{tag.uses}\t{printable(tag.description)}")
    return 0
