"""Where the suite's files are: the repository, the support folder and the sample inputs.

Test files sit one or two folders deep (``tests/<package>/test_<module>.py``), so a path
written relative to a test file's own folder would depend on its depth; they all read these.
"""

from __future__ import annotations

from pathlib import Path

SUPPORT = Path(__file__).resolve().parent
ROOT = SUPPORT.parents[1]
#: Sample inputs of every reader, one small file per format (runs and judgments).
IO_SAMPLES = SUPPORT / "samples" / "io"
