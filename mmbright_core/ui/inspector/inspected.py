"""State handling of the inspector: which query is shown and the walk over most-hurt queries.

The inspected query lives in session state (:func:`state.inspect_target`) so other pages can
set it before switching here; the inspector's own selectors are synced to it before they
are drawn, and write it back from their callbacks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import streamlit as st

from mmbright_core.analysis.attribution import Attribution, FusionAttribution, Unavailable
from mmbright_core.analysis.compare import most_hurt
from mmbright_core.data.ids import display_id
from mmbright_core.data.view import QueryRef, TaskView
from mmbright_core.errors import MMBrightError
from mmbright_core.types import Task
from mmbright_core.ui.common import explain_cache, loaders, render, state, views, widgets
from mmbright_core.ui.common.state import RunEntry
from mmbright_core.ui.inspector import attribution_html

DOMAIN_KEY = "insp_domain"
QUERY_KEY = "insp_query"


def readable(view: TaskView) -> bool:
    """Whether the source's queries can be read, the reason shown on the page where not.

    A dataset the hub cache lacks, with HF_HUB_OFFLINE=1, is one line here rather than a
    traceback from wherever the page first reads it.
    """
    domains = view.domains()
    return not domains or render.attempt(view.queries, domains[0]) is not None


def sync_target(view: TaskView, order: Sequence[tuple[str, str]] = ()) -> QueryRef | None:
    """Return a valid query to inspect and put it into the selectors before they are drawn.

    An unknown or missing target falls back to the first of ``order`` (the most-hurt
    queries), else to the first query of the first domain.
    """
    target = state.inspect_target()
    ref = None if target is None else view.query(target.domain, target.query_id)
    if ref is None or not ref.exists():
        ref = view.query(*order[0]) if order else _first_query(view)
        if ref is None:
            return None
        state.set_inspect_target(ref.domain, ref.query_id)
    st.session_state[DOMAIN_KEY] = ref.domain
    st.session_state[QUERY_KEY] = ref.query_id
    return ref


def _first_query(view: TaskView) -> QueryRef | None:
    for domain in view.domains():
        ids = list(view.queries(domain))
        if ids:
            return view.query(domain, ids[0])
    return None


def on_pick() -> None:
    """Selector callback: inspect the chosen domain and query (first query on a new domain)."""
    domain = str(st.session_state[DOMAIN_KEY])
    ids = list(loaders.current_view().queries(domain))
    query_id = st.session_state.get(QUERY_KEY)
    if query_id not in ids:
        query_id = ids[0] if ids else ""
    state.set_inspect_target(domain, str(query_id))


def compared_pair(runs: Mapping[str, RunEntry]) -> tuple[str, str] | None:
    """Runs A and B as chosen on Per query or Compare (:func:`widgets.run_pair`), if two exist."""
    if len(runs) < 2:
        return None
    return widgets.run_pair(list(runs))


def aligned_pair(ranking: Sequence[str], runs: Mapping[str, RunEntry]) -> tuple[str, str] | None:
    """The runs A and B that the aligned tab and its CSV set side by side.

    The pair Compare (or Per query) names, in its order, when both rank the query; else the
    first two of ``ranking`` (the shown runs that rank it); None with fewer than two.
    """
    pair = compared_pair(runs)
    if pair is not None and all(name in ranking for name in pair):
        return pair
    return (ranking[0], ranking[1]) if len(ranking) >= 2 else None


def default_runs(runs: Mapping[str, RunEntry]) -> list[str]:
    """The runs shown side by side at first: the compared pair, or the only run."""
    pair = compared_pair(runs)
    return list(pair) if pair else list(runs)[:1]


def hurt_order(view: TaskView) -> list[tuple[str, str]]:
    """(domain, query_id) of the queries B lost most on against A, worst first."""
    runs = state.task_runs()
    pair = compared_pair(runs)
    if pair is None:
        return []
    try:
        deltas = loaders.deltas_for(view, runs, *pair)
    except MMBrightError:
        return []  # the compare page shows the reason; the inspector still works
    hurt = most_hurt(deltas, top=len(deltas))
    return list(zip(hurt["domain"].astype(str), hurt["query_id"].astype(str), strict=True))


def step(order: Sequence[tuple[str, str]], by: int) -> None:
    """Button callback: move ``by`` places along the most-hurt queries."""
    target = state.inspect_target()
    current = (target.domain, target.query_id) if target else None
    found = views.walk(order, current, by)
    if found is not None:
        state.set_inspect_target(*found)


def order_caption(order: Sequence[tuple[str, str]], target: QueryRef) -> str:
    """Say where the shown query sits among the most-hurt queries."""
    pair = compared_pair(state.task_runs())
    names = f"{pair[1]} vs {pair[0]}" if pair else ""
    key = (target.domain, target.query_id)
    where = (
        f"{order.index(key) + 1} of {len(order)}" if key in order else f"not among the {len(order)}"
    )
    return f"Most-hurt queries ({names}): {where}. Previous/next walk them, worst first."


def image_words(ref: QueryRef, entries: Mapping[str, RunEntry]) -> dict[str, dict[str, str]]:
    """Run name -> query image path -> the words the run read from it, for the OCR runs."""
    found = {}
    for name, entry in entries.items():
        words = explain_cache.image_words(ref, entry)
        if words is not None:
            found[name] = words
    return found


def fusions(found: Mapping[str, Mapping[str, Attribution]]) -> dict[str, FusionAttribution]:
    """Run name -> one of its fusion attributions (they share the query side: images, policy)."""
    return {
        name: first
        for name, attributions in found.items()
        if (
            first := next(
                (f for f in attributions.values() if isinstance(f, FusionAttribution)), None
            )
        )
    }


def origins(task: Task, entries: Mapping[str, RunEntry]) -> tuple[str, ...]:
    """The origins of words the shown runs can have (:func:`attribution_html.origins`)."""
    return attribution_html.origins(task, any(entry.rewrites for entry in entries.values()))


def attribution_table(
    tops: Mapping[str, tuple[pd.DataFrame, pd.DataFrame]],
    found: Mapping[str, Mapping[str, Attribution]],
    shown: Sequence[str] = tuple(attribution_html.ORIGIN_WORDS),
) -> pd.DataFrame:
    """The top 10 of every shown run, one row per hit, with its score taken apart.

    The ``from text``, ``from image``, ``from both`` and ``from LLM`` columns add up to
    ``score`` where the run's retriever could be rebuilt; only those of the origins in
    ``shown`` are kept (:func:`origins`: no image column on Task 1, no LLM column without
    rewritten queries). ``explained`` says what else is known, or why not.
    """
    rows = []
    for name, (top, _) in tops.items():
        for hit in top.itertuples(index=False):
            doc = str(hit.doc_id)
            part = attribution_html.summary_row(found.get(name, {}).get(doc, _NO_ATTRIBUTION))
            rows.append(
                {
                    "run": name,
                    "rank": int(hit.rank),
                    "document": display_id(doc),
                    "judgment": _judgment(hit.relevance),
                    "score": float(hit.score),
                    **part,
                }
            )
    parts = [column for origin, column in _PART_COLUMNS.items() if origin in shown]
    columns = ["run", "rank", "document", "judgment", "score", *parts, "explained"]
    return pd.DataFrame(rows).reindex(columns=columns)


_PART_COLUMNS = {
    "text": "from text",
    "image": "from image",
    "both": "from both",
    "llm": "from LLM",
}
_NO_ATTRIBUTION = Unavailable("not explained")


def _judgment(relevance: float) -> str:
    if pd.isna(relevance):
        return "unjudged"
    return f"relevant {int(relevance)}" if relevance > 0 else "not relevant"


def aligned(docs: pd.DataFrame) -> pd.DataFrame:
    """The rank-diff table as shown: one row per document, its rank in each run, its move.

    One column says the move ("moved down 12", "not in A"): with the judgment and both
    ranks beside it, whether a document entered or left the top 10 is read from the row.
    """
    out = docs.assign(
        document=[display_id(str(d)) for d in docs["doc_id"]],
        judgment=[_judgment(r) for r in docs["relevance"]],
    )
    return out[["document", "judgment", "rank_a", "rank_b", "move"]].rename(
        columns={"rank_a": "rank in A", "rank_b": "rank in B"}
    )
