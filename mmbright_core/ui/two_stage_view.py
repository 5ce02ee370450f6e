"""A reranked run beside its first stage: which run that is, and the headroom it took.

A reranked run's configuration records its first stage's fingerprint
(:mod:`mmbright_core.rerank.first_stage`); the loaded run with the same scores is that first
stage, whatever its name or where it was loaded from. :func:`find_two_stage` makes no
Streamlit call (the HTML report uses it too); :func:`show_two_stage` draws the block of
the Compare page.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import streamlit as st

from mmbright_core.analysis.two_stage import TwoStage, find_first_stage
from mmbright_core.data.sources import Source
from mmbright_core.rerank.first_stage import first_stage_record, runs_fingerprint
from mmbright_core.types import Task
from mmbright_core.ui import loaders, render
from mmbright_core.ui.state import RunEntry

_MEMO: OrderedDict[tuple[str, tuple[str, ...]], str] = OrderedDict()
_MEMO_SIZE = 64


def _fingerprint(entry: RunEntry, domains: tuple[str, ...]) -> str:
    # Digesting a full run takes seconds: each (run content, domains) is digested once.
    memo = (entry.fingerprint, domains)
    if entry.fingerprint and memo in _MEMO:
        return _MEMO[memo]
    found = runs_fingerprint({d: entry.runs[d] for d in domains if d in entry.runs})
    if entry.fingerprint:
        _MEMO[memo] = found
        while len(_MEMO) > _MEMO_SIZE:
            _MEMO.popitem(last=False)
    return found


def find_two_stage(
    source: Source,
    task: Task,
    protocol: str,
    entries: Mapping[str, RunEntry],
    run_a: str,
    run_b: str,
) -> TwoStage | None:
    """Return B (else A) as a reranked run with its first stage among ``entries``, or None."""
    return find_first_stage(
        (run_a, run_b),
        {name: entry.runs for name, entry in entries.items()},
        {name: entry.config for name, entry in entries.items()},
        lambda domain: source.judgments(task, domain, protocol).qrels,
        lambda name, domains: _fingerprint(entries[name], tuple(domains)),
    )


def show_two_stage(
    spec: str,
    task: Task,
    protocol: str,
    entries: Mapping[str, RunEntry],
    run_a: str,
    run_b: str,
) -> None:
    """Draw the first stage, the reranked run and the oracle at depth, per domain."""
    if all(first_stage_record(entries[n].config) is None for n in (run_a, run_b)):
        return
    source = render.attempt(loaders.get_source, spec)
    found = (
        None if source is None else find_two_stage(source, task, protocol, entries, run_a, run_b)
    )
    if found is None:
        return
    st.subheader("Two stages")
    st.caption(render.escape_md(found.caption()))
    if found.first is None or found.table is None:
        st.info(
            f"Its first stage, {render.escape_md(found.first_label)}, is not among the loaded "
            "runs: add it on the Home page to see what the reranker changed."
        )
        return
    every = found.table.iloc[-1]
    first, reranked, oracle, taken = st.columns(4)
    first.metric("First stage nDCG@10", f"{every['first_stage']:.3f}")
    reranked.metric("Reranked nDCG@10", f"{every['reranked']:.3f}", f"{every['gain']:+.3f}")
    oracle.metric(f"Oracle@{found.depth} nDCG@10", f"{every['oracle']:.3f}")
    taken.metric(
        "Headroom taken",
        "–" if every["taken"] != every["taken"] else f"{every['taken']:.0%}",
        help="(reranked − first stage) / (oracle − first stage): the share of what a perfect "
        f"reranker of the top {found.depth} would gain that this one gained",
    )
    st.dataframe(found.table, hide_index=True, key="cmp_two_stage")
