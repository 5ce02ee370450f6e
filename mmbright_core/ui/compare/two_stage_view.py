"""What each stage changed: a reranked run beside its first stage, a rewritten one its plain.

A reranked run's configuration records its first stage's fingerprint
(:mod:`mmbright_core.rerank.first_stage`); the loaded run with the same scores is that first
stage, whatever its name or where it was loaded from. A run on rewritten queries has as
plain run the loaded run of its configuration less the query set's settings
(:mod:`mmbright_core.analysis.rewrite_stage`). :func:`find_two_stage` and
:func:`find_rewrite_stage` make no Streamlit call (the HTML report uses them too);
:func:`show_two_stage` draws the blocks of the Compare page.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import pandas as pd
import streamlit as st

from mmbright_core.analysis.rewrite_stage import RewriteStage, Scorer, find_rewrite
from mmbright_core.analysis.table import source_results_table
from mmbright_core.analysis.two_stage import MEASURE, TwoStage, find_first_stage
from mmbright_core.data.view import TaskView
from mmbright_core.present.report_tables import shown_table
from mmbright_core.rerank.first_stage import runs_fingerprint
from mmbright_core.ui.common import loaders
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.state import Compared, RunEntry

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
    view: TaskView,
    entries: Mapping[str, RunEntry],
    run_a: str,
    run_b: str,
) -> TwoStage | None:
    """Return B (else A) as a reranked run with its first stage among ``entries``, or None."""
    return find_first_stage(
        (run_a, run_b),
        {name: entry.runs for name, entry in entries.items()},
        {name: entry.lineage for name, entry in entries.items()},
        view.qrels,
        lambda name, domains: _fingerprint(entries[name], tuple(domains)),
    )


def find_rewrite_stage(
    view: TaskView,
    entries: Mapping[str, RunEntry],
    pair: tuple[str, str],
    two_stage: TwoStage | None = None,
    score: Scorer | None = None,
) -> RewriteStage | None:
    """Return B (else A) as a rewritten run with its plain run among ``entries``, or None.

    Args:
        view: The data source, the task and its protocol.
        entries: Every loaded run of the task.
        pair: Runs A and B.
        two_stage: The pair's reranked run with its first stage (a rewritten first stage
            is shown with its chain).
        score: How two runs' results table is had (default: scored here, each run under
            its own policy for ``negative_ids``).
    """

    def scored(plain: str, rewritten: str) -> pd.DataFrame:
        frames = [
            source_results_table(
                view,
                {name: entries[name].runs},
                measures=(MEASURE,),
                check_images=False,
                negatives=entries[name].negatives,
            )
            for name in (plain, rewritten)
        ]
        return pd.concat(frames, ignore_index=True)

    configs = {name: entry.config for name, entry in entries.items()}
    return find_rewrite(pair, configs, score or scored, two_stage)


def show_two_stage(compared: Compared) -> None:
    """Draw what each stage of A or B changed: the rerank block, then the rewrite block."""
    view, entries = compared.view, compared.entries
    pair = (compared.run_a, compared.run_b)
    reranked = any(entries[n].lineage.reranks is not None for n in pair)
    if not reranked and not any(entries[n].lineage.queries is not None for n in pair):
        return
    stages = find_two_stage(view, entries, *pair) if reranked else None
    if stages is not None:
        _show_rerank(stages)

    def cached(plain: str, rewritten: str) -> pd.DataFrame:
        return loaders.table_for(view, {n: entries[n] for n in (plain, rewritten)})

    rewrite = find_rewrite_stage(view, entries, pair, stages, cached)
    if rewrite is not None:
        _show_rewrite(rewrite)


def _show_rerank(found: TwoStage) -> None:
    """Draw the first stage, the reranked run and the oracle at depth, per domain."""
    st.subheader("Two stages")
    st.caption(literal(found.caption()))
    if found.first is None or found.table is None:
        _not_loaded(f"Its first stage, {found.first_label},", "reranker")
        return
    every = found.table.iloc[-1]
    taken = literal(
        "(reranked − first stage) / (oracle − first stage): the share of what a perfect "
        f"reranker of the top {found.depth} would gain that this one gained"
    )
    _metrics(
        {"label": "First stage nDCG@10", "value": f"{every['first_stage']:.3f}"},
        {
            "label": "Reranked nDCG@10",
            "value": f"{every['reranked']:.3f}",
            "delta": f"{every['gain']:+.3f}",
        },
        {"label": literal(f"Oracle@{found.depth} nDCG@10"), "value": f"{every['oracle']:.3f}"},
        {
            "label": "Headroom taken",
            "value": "–" if every["taken"] != every["taken"] else f"{every['taken']:.0%}",
            "help": taken,
        },
    )
    st.table(shown_table(found.table), hide_index=True)


def _show_rewrite(found: RewriteStage) -> None:
    """Draw the plain run's and the rewritten run's nDCG@10 per domain, and who won."""
    st.subheader("Rewritten queries")
    st.caption(literal(found.caption()))
    chain = found.chain()
    if chain is not None:
        st.caption(literal(f"Chain: {chain}"))
    if found.plain is None or found.table is None:
        plain = f"Its plain run ({found.plain_label} with its settings on the original queries)"
        _not_loaded(plain, "rewrite")
        return
    every = found.table.iloc[-1]
    _metrics(
        {"label": "Plain nDCG@10", "value": f"{every['plain']:.3f}"},
        {
            "label": "Rewritten nDCG@10",
            "value": f"{every['rewritten']:.3f}",
            "delta": f"{every['gain']:+.3f}",
        },
        {"label": "Queries helped", "value": int(every["helped"])},
        {"label": "Queries hurt", "value": int(every["hurt"])},
    )
    st.dataframe(found.table, hide_index=True, key="cmp_rewrite")


def _metrics(*cells: dict[str, Any]) -> None:
    """One row of ``st.metric`` cells, each given by its keyword arguments."""
    for column, cell in zip(st.columns(len(cells)), cells, strict=True):
        column.metric(**cell)


def _not_loaded(run: str, stage: str) -> None:
    """Say in one line that ``run`` is not loaded, and what it would show."""
    st.info(
        literal(
            f"{run} is not among the loaded runs: add it on the Home page to see what the "
            f"{stage} changed."
        )
    )
