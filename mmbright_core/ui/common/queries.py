"""A task's queries as the pages count and show them, read from the cached judgments.

Coverage and partial averages are measured against the task (every domain of the source,
every judged query), not against what a run happens to hold (docs/protocol.md, Scoring).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mmbright_core.data.view import TaskView

TaskCounts = Mapping[str, tuple[int, int]]
"""domain -> (queries, judged queries) of a task: what a run is measured against."""


def task_counts(view: TaskView) -> TaskCounts:
    """Each domain's (queries, judged queries) in a task, over every domain of the source."""
    counts: dict[str, tuple[int, int]] = {}
    for domain in view.domains():
        ids, judged = view.queries(domain), view.qrels(domain)
        counts[domain] = (len(ids), sum(1 for q in ids if judged.get(q)))
    return counts


def query_texts(view: TaskView, domains: Iterable[str]) -> dict[tuple[str, str], str]:
    """The text of every query of the domains a table shows, by (domain, query_id)."""
    return {
        (domain, query_id): query.text
        for domain in dict.fromkeys(domains)
        for query_id, query in view.queries(domain).items()
    }
