"""Random and mutated bytes: the readers raise InputError and nothing else, never hang."""

import contextlib
from collections.abc import Callable
from typing import Any

import pytest
from fuzzing import mutations
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from locations import IO_SAMPLES

from mmbright_core.errors import InputError
from mmbright_core.io.qrels import read_qrels
from mmbright_core.io.runs import read_run

DATA = IO_SAMPLES
SEEDS = [
    (DATA / name).read_bytes()
    for name in ("run.trec", "run.json", "run.trec.gz", "run.parquet", "qrels.trec", "qrels.json")
]

READERS: dict[str, Callable[[bytes], Any]] = {
    "run-auto": lambda b: read_run(b),
    "run-trec": lambda b: read_run(b, format="trec"),
    "run-json": lambda b: read_run(b, format="json"),
    "run-parquet": lambda b: read_run(b, format="parquet"),
    "qrels-auto": lambda b: read_qrels(b),
    "qrels-json": lambda b: read_qrels(b, format="json"),
}

FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def _only_input_errors(reader: Callable[[bytes], Any], data: bytes) -> None:
    try:
        reader(data)
    except InputError as err:
        assert str(err)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("reader", list(READERS))
@FUZZ
@given(data=st.binary(max_size=300) | mutations(SEEDS))
def test_bytes_give_a_result_or_an_input_error(reader: str, data: bytes) -> None:
    _only_input_errors(READERS[reader], data)


@pytest.mark.timeout(120)
@FUZZ
@given(
    text=st.text(
        alphabet=st.sampled_from(list(' \t\n\r{}[]":,.-+eE0123456789QqNaIfn\x00\u00a0\u2028é')),
        max_size=200,
    )
)
def test_text_gives_a_result_or_an_input_error(text: str) -> None:
    for reader in (read_run, read_qrels):
        with contextlib.suppress(InputError):
            reader(text)


@pytest.mark.timeout(60)
@FUZZ
@given(
    lines=st.lists(
        st.lists(st.text(alphabet="q0Q1d.5e-", min_size=1, max_size=4), min_size=1, max_size=7),
        min_size=1,
        max_size=8,
    )
)
def test_parsed_runs_hold_finite_floats(lines: list[list[str]]) -> None:
    text = "\n".join(" ".join(line) for line in lines) + "\n"
    try:
        run = read_run(text, format="trec")
    except InputError:
        return
    rows = sum(1 for line in lines if line)
    assert sum(len(docs) for docs in run.values()) == rows  # nothing dropped or merged
    assert all(isinstance(s, float) and s == s for docs in run.values() for s in docs.values())
