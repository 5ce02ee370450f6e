"""The comparison report offered for download: the core's HTML report plus query details.

The details (query text, image bytes, rank diff of the two runs) are gathered here for the
most-hurt queries, then :func:`mmbright_core.present.report.comparison_report` renders
everything, escaped and self-contained. No Streamlit call happens here, so the page can
hand the function to a download button that runs it only when clicked.
"""

from __future__ import annotations

from collections.abc import Mapping

from mmbright_core.analysis.compare import Comparison, most_hurt
from mmbright_core.analysis.rankdiff import rank_diff
from mmbright_core.benchmark import apply_protocol
from mmbright_core.data.view import QueryRef, TaskView
from mmbright_core.notes import ScopeKey, scope_tags
from mmbright_core.present.report import QueryDetail, comparison_report
from mmbright_core.ui.common.state import RunEntry
from mmbright_core.ui.compare.two_stage_view import find_rewrite_stage, find_two_stage

REPORT_QUERIES = 10
"""How many of the most-hurt queries the report details."""


def query_detail(ref: QueryRef, runs: tuple[RunEntry, RunEntry]) -> QueryDetail:
    """Gather one query's text, image bytes and the rank diff of two runs (after exclusions).

    Each run is cut under its own policy for ``negative_ids`` (:attr:`RunEntry.negatives`).
    """
    domain, query_id = ref.domain, ref.query_id
    query = ref.view.queries(domain).get(query_id)
    if query is None:
        return QueryDetail()
    source = ref.view.source
    images = [(image.path, source.query_image_bytes(domain, image.path)) for image in query.images]
    a, b = (
        apply_protocol(
            {query_id: e.runs.get(domain, {}).get(query_id, {})},
            {query_id: ref.excluded(e.negatives)},
        )[query_id]
        for e in runs
    )
    diff = rank_diff(ref.qrels, a, b, k=10)
    return QueryDetail(text=query.text, images=images, rank_diff=diff)


def comparison_html(
    view: TaskView,
    entries: Mapping[str, RunEntry],
    comparison: Comparison,
) -> str:
    """Render the comparison of two runs as one self-contained HTML document.

    The most-hurt queries carry their failure tags when a notes file holds some; a
    reranked run comes with its first stage and the oracle of its depth per domain, a run
    on rewritten queries with its plain run.
    """
    pair = (entries[comparison.run_a], entries[comparison.run_b])
    details = {
        (row.domain, row.query_id): query_detail(view.query(row.domain, row.query_id), pair)
        for row in most_hurt(comparison, REPORT_QUERIES).itertuples(index=False)
    }
    tags = scope_tags(ScopeKey(view.source.name, view.task, view.protocol))[1]
    names = comparison.run_a, comparison.run_b
    stages = find_two_stage(view, entries, *names)
    rewrite = find_rewrite_stage(view, entries, names, stages)
    return comparison_report(
        comparison,
        details=details,
        top=REPORT_QUERIES,
        tags=tags,
        two_stage=stages,
        rewrite=rewrite,
    )
