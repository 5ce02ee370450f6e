"""Coverage-guided fuzzing of the run and qrels readers and image decoding with atheris.

Optional (atheris is in the ``dev`` extra on Linux only). Any exception other than
``InputError`` is a finding: libFuzzer stops and writes the input as ``crash-*``.

    mkdir -p corpus && cp tests/support/samples/io/* corpus/   # libFuzzer adds its finds to it
    python benchmarks/fuzz_readers.py corpus -runs=100000
    python benchmarks/fuzz_readers.py corpus -max_total_time=600 -artifact_prefix=out/

The first byte picks the reader; the rest is the file content.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from typing import Any

import atheris

with atheris.instrument_imports(include=["mmbright_core"]):
    from mmbright_core.data.images import decode_image
    from mmbright_core.errors import InputError
    from mmbright_core.io.qrels import read_qrels
    from mmbright_core.io.runs import read_run

READERS: tuple[Callable[[bytes], Any], ...] = (
    read_run,
    lambda data: read_run(data, format="trec"),
    lambda data: read_run(data, format="json"),
    lambda data: read_run(data, format="parquet"),
    read_qrels,
    lambda data: decode_image(data, "fuzz/fuzz_00000000_0000/image_1.png"),
)


def one_input(data: bytes) -> None:
    if not data:
        return
    reader = READERS[data[0] % len(READERS)]
    with contextlib.suppress(InputError):
        reader(data[1:])


if __name__ == "__main__":
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()
