"""``python -m mmbright_core`` runs the command line."""

import sys

from mmbright_core.cli import main

sys.exit(main())
