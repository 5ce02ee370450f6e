"""``mmbright app``: serve the dashboard packaged in ``mmbright_core/ui/app.py``.

It hands over to ``streamlit run`` with the dashboard's server settings as flags, so an
installed ``mmbright[app]`` serves the app as ``streamlit run app.py`` does in a checkout
(which reads them from ``.streamlit/config.toml``): loopback only, XSRF protection on, no
usage statistics, no "magic" rendering, no file watcher, no forced garbage collection after
each rerun. Arguments after ``--`` go to
streamlit unchanged and win over these (``mmbright app -- --server.address 0.0.0.0``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mmbright_core.cli.options import Command, add_command, add_source

APP = Path(__file__).resolve().parent.parent / "ui" / "app.py"
"""The dashboard's entry script inside the installed package."""

# The settings of the repository's .streamlit/config.toml, section -> option -> value;
# test_cli_app.py fails when the two differ.
SETTINGS: Mapping[str, Mapping[str, object]] = {
    "server": {
        "address": "127.0.0.1",
        "headless": True,
        "maxUploadSize": 200,
        "enableXsrfProtection": True,
        "enableCORS": True,
        "fileWatcherType": "none",
        "runOnSave": False,
        "disconnectedSessionTTL": 60,
    },
    "browser": {"gatherUsageStats": False},
    "runner": {"magicEnabled": False, "postScriptGC": False},
    "client": {"showErrorDetails": "full", "toolbarMode": "minimal"},
}

SERVER_ENV: Mapping[str, str] = {"PYTHONMALLOC": "malloc"}
"""The server's environment, unless already set: Python's objects on the C allocator, whose
freed pages ``malloc_trim`` hands back, so a closed session's memory returns to the system
(Python's own allocator keeps a 1 MiB arena while any object in it lives; docs/safety.md,
"Bounded memory")."""


APP_COMMAND = Command(
    "app",
    "serve the dashboard (needs the app extra)",
    """Serve the failure-analysis dashboard with streamlit on 127.0.0.1. Arguments after -- go
    to 'streamlit run' (e.g. -- --server.address 0.0.0.0).""",
)


def register(subparsers: Any) -> None:
    """Add the ``app`` subcommand to the ``mmbright`` parser."""
    parser = add_command(subparsers, APP_COMMAND)
    parser.add_argument("--port", type=int, help="the port to serve on (default: 8501)")
    add_source(parser, required=False, lead="the data a new session opens on (default: demo)")
    parser.add_argument(
        "streamlit_args", nargs=argparse.REMAINDER, help="-- then options for 'streamlit run'"
    )
    parser.set_defaults(handler=run_app)


def setting_flags(settings: Mapping[str, Mapping[str, object]] = SETTINGS) -> list[str]:
    """The settings as ``streamlit run`` flags: ``["--server.address", "127.0.0.1", ...]``."""
    flags: list[str] = []
    for section, options in settings.items():
        for option, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags += [f"--{section}.{option}", text]
    return flags


def streamlit_command(args: argparse.Namespace) -> list[str]:
    """The ``python -m streamlit run`` command line that serves the packaged app."""
    command = [sys.executable, "-m", "streamlit", "run", str(APP), *setting_flags()]
    if args.port is not None:
        command += ["--server.port", str(args.port)]
    extra = list(args.streamlit_args)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    return command + extra


def run_app(args: argparse.Namespace) -> int:
    """Replace this process with the streamlit server (its signals and exit status)."""
    from mmbright_core.errors import require

    require("streamlit", "the dashboard", "app")
    require("plotly", "the dashboard", "app")
    from mmbright_core.ui.common.state import SOURCE_ENV  # imports streamlit: only once it is there

    if args.source is not None:
        os.environ[SOURCE_ENV] = args.source
    for name, value in SERVER_ENV.items():
        if not os.environ.get(name):
            os.environ[name] = value
    command = streamlit_command(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(command[0], command)  # a stop signal to `mmbright app` reaches streamlit itself
    return 0  # pragma: no cover (execv does not return)
