"""A self-contained HTML report of a comparison: tables, interactive figures, query images.

The file opens in a browser with no server and no network: plotly.js is inlined once, in
front of the first figure, and query images are embedded as PNG thumbnails in ``data:``
URIs. Every piece of text from the data (run names, domains, query text, doc ids) is
HTML-escaped. Images that cannot be decoded (SVG, 1x1, corrupt, missing: docs/protocol.md, The data
as published) are shown as their reason, never dropped silently. The figures carry their own theme
and margins, so the file is the same whether the command or the dashboard makes it; the
tables' headings and number formats are in :mod:`mmbright_core.present.report_tables`.
"""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from mmbright_core.analysis.compare import Comparison, most_hurt
from mmbright_core.analysis.rankdiff import RankDiff, judgment_gap
from mmbright_core.analysis.rewrite_stage import RewriteStage
from mmbright_core.analysis.slices import Tags, image_effect, with_tags
from mmbright_core.analysis.two_stage import TwoStage
from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.errors import MissingDependencyError
from mmbright_core.present.report_tables import escape as _e
from mmbright_core.present.report_tables import (
    format_value,
    html_table,
    summary_tables,
    with_documents,
)

THUMBNAIL = (320, 320)
FIGURE_TEMPLATE = "plotly_white"
"""The report's own Plotly theme, whatever the process's default (see :func:`_laid_out`)."""
_FIGURE_MARGIN = {"l": 70, "r": 20, "t": 30, "b": 50, "pad": 4}
TEXT_EXCERPT = 600
# The page is read at 1,000 px and up: headings wrap at their spaces, a table too wide
# scrolls in its own box, and the body keeps a margin from the window's edge.
_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1em;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em;max-width:100%}
th,td{border:1px solid #ccc;padding:.2em .3em;text-align:right}
th{background:#f3f3f3;vertical-align:bottom}.text,.settings th,.settings td{text-align:left}
.table{max-width:100%;overflow-x:auto}
.query{border-top:2px solid #888;margin-top:2em}.excerpt{white-space:pre-wrap;color:#444}
.images img{max-height:240px;margin:.2em;border:1px solid #ddd}
.problem{display:inline-block;padding:.5em;margin:.2em;background:#fee;border:1px solid #c99}
"""


@dataclass(frozen=True)
class QueryDetail:
    """What the report shows for one of the most-hurt queries, beyond its numbers.

    Attributes:
        text: The query text (an excerpt is shown).
        images: ``(path, bytes or None)`` for each of the query's images, in order.
        rank_diff: The query's top-k in both runs, if computed.
    """

    text: str = ""
    images: Sequence[tuple[str, bytes | None]] = ()
    rank_diff: RankDiff | None = None


def comparison_report(
    comparison: Comparison,
    *,
    title: str | None = None,
    details: Mapping[tuple[str, str], QueryDetail] | None = None,
    top: int = 10,
    tags: Tags | None = None,
    two_stage: TwoStage | None = None,
    rewrite: RewriteStage | None = None,
) -> str:
    """Render a comparison as one self-contained HTML document.

    Args:
        comparison: The comparison to report.
        title: The page title; by default ``"<B> vs <A>: <measure>"``.
        details: (domain, query_id) -> text, images and rank diff of the most-hurt queries.
        top: How many of the most-hurt queries to show.
        tags: (domain, query_id) -> failure tags, shown in the most-hurt table.
        two_stage: A reranked run of the pair with its first stage: the first stage, the
            reranked run and the oracle of the same depth per domain are shown.
        rewrite: A run of the pair on rewritten queries (or the rewritten first stage of
            its reranked run) with its plain run: both per domain and who won are shown.

    Returns:
        The HTML text.
    """
    heading = title or f"{comparison.run_b} vs {comparison.run_a}: {comparison.measure}"
    figures = _Figures()
    parts = [
        f"<h1>{_e(heading)}</h1>",
        _settings(comparison),
        *_two_stage(two_stage),
        *_rewrite(rewrite),
        "<h2>By domain and pooled</h2>",
        *_summary_tables(comparison),
        figures.domain_deltas(comparison),
        "<h2>Per-query deltas</h2>",
        figures.histogram(comparison),
        "<h2>Image effect</h2>",
    ]
    for name, frame in image_effect(comparison).items():
        if name == "domain":
            continue
        parts += [
            f"<h3>By {_e(name)}</h3>",
            html_table(frame),
            figures.breakdown(comparison, name, frame),
        ]
    parts += [f"<h2>Most hurt queries (top {top})</h2>"]
    hurt = most_hurt(comparison, top)
    # The task is the same on every row: the settings table names it once.
    shown = _gaps(with_tags(hurt, tags or {}), details or {}).drop(columns="task", errors="ignore")
    parts.append(html_table(shown) if len(hurt) else "<p>No query lost against the baseline.</p>")
    for row in hurt.itertuples(index=False):
        detail = (details or {}).get((row.domain, row.query_id), QueryDetail())
        parts.append(_query_section(row, detail))
    return _page(heading, "\n".join(parts))


def _two_stage(found: TwoStage | None) -> list[str]:
    if found is None:
        return []
    parts = ["<h2>Two stages: first stage, reranked, oracle</h2>", f"<p>{_e(found.caption())}</p>"]
    if found.table is None:
        return [*parts, f"<p>Its first stage, {_e(found.first_label)}, is not loaded.</p>"]
    return [*parts, html_table(found.table)]


def _rewrite(found: RewriteStage | None) -> list[str]:
    if found is None:
        return []
    parts = ["<h2>Rewritten queries: plain, rewritten</h2>", f"<p>{_e(found.caption())}</p>"]
    chain = found.chain()
    if chain is not None:
        parts.append(f"<p>Chain: {_e(chain)}</p>")
    if found.table is None:
        return [*parts, f"<p>Its plain run ({_e(found.plain_label)}) is not loaded.</p>"]
    return [*parts, html_table(found.table)]


def _summary_tables(comparison: Comparison) -> list[str]:
    """The summary as two tables, the deltas then their tests, so each fits a 1,000 px page."""
    deltas, tests = summary_tables(comparison.summary)
    runs = (comparison.run_a, comparison.run_b)
    return [
        html_table(deltas, runs),
        "<h3>Tests: raw p, and Holm over the domains</h3>",
        html_table(tests, runs),
    ]


def _gaps(hurt: pd.DataFrame, details: Mapping[tuple[str, str], QueryDetail]) -> pd.DataFrame:
    """Add ``judgment gap`` (yes / no, blank without a rank diff) to the most-hurt rows."""
    flags = []
    for row in hurt.itertuples(index=False):
        diff = details.get((row.domain, row.query_id), QueryDetail()).rank_diff
        flags.append("" if diff is None else "yes" if _diff_gap(diff, row.delta) else "no")
    return hurt.assign(**{"judgment gap": flags})


def _diff_gap(diff: RankDiff, delta: float) -> bool:
    docs = diff.docs
    qrels = {
        d: int(r)
        for d, r in zip(docs["doc_id"], docs["relevance"], strict=True)
        if not math.isnan(r)
    }
    tops = [
        list(docs.loc[docs[rank] <= diff.k].sort_values(rank)["doc_id"])
        for rank in ("rank_a", "rank_b")
    ]
    return judgment_gap(
        qrels, tops[0], tops[1], delta, diff.k, non_relevant_judged=diff.judges_non_relevant
    )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_STYLE}</style></head>\n"
        f"<body>\n{body}\n</body></html>\n"
    )


def _settings(c: Comparison) -> str:
    items = {
        "baseline (A)": c.run_a,
        "compared (B)": c.run_b,
        "task": ", ".join(format_value("task", t) for t in sorted(set(c.per_query["task"]))),
        "measure": c.measure,
        "paired queries": len(c.per_query),
        "scored in one run only (left out)": c.unpaired,
        "seed": c.seed,
        "resamples": c.n_resamples,
        "delta": "B - A per query; Holm over the per-domain family; the pooled test is raw",
    }
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in items.items())
    return f'<table class="settings">{rows}</table>'


def _query_section(row: Any, detail: QueryDetail) -> str:
    a, b, delta = (format_value(c, getattr(row, c)) for c in ("a", "b", "delta"))
    head = f"{row.domain} / {row.query_id}: delta {delta} ({a} → {b})"
    parts = [f'<section class="query"><h3>{_e(head)}</h3>']
    if detail.text:
        excerpt = detail.text[:TEXT_EXCERPT] + ("…" if len(detail.text) > TEXT_EXCERPT else "")
        parts.append(f'<p class="excerpt">{_e(excerpt)}</p>')
    if detail.images:
        parts.append('<div class="images">' + "".join(_image(p, d) for p, d in detail.images))
        parts.append("</div>")
    if detail.rank_diff is not None:
        diff = detail.rank_diff
        parts.append(
            f"<p>Top {diff.k}: Kendall tau {_e(format_value('tau', diff.kendall_tau))}, "
            f"RBO {_e(format_value('rbo', diff.rbo))}</p>"
        )
        parts.append(html_table(_one_id_column(diff.docs)))
    parts.append("</section>")
    return "".join(parts)


def _one_id_column(docs: pd.DataFrame) -> pd.DataFrame:
    """The rank diff with one column naming each document: a Task 4 pair as people read it.

    A pair's raw id (``passage|||image path``) is a file format's, and too wide for a
    1000 px page; where every id reads as it is written, the raw ``doc id`` column stays.
    """
    shown = with_documents(docs)
    readable = (shown["document"] != shown["doc_id"].astype(str)).any()
    return shown.drop(columns="doc_id" if readable else "document")


def _image(path: str, data: bytes | None) -> str:
    try:
        image = decode_image(data, path)
    except ImageDecodeError as err:
        return f'<span class="problem">{_e(path)}: {_e(err.reason)}</span>'
    image.thumbnail(THUMBNAIL)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img src="data:image/png;base64,{encoded}" alt="{_e(path)}" title="{_e(path)}">'


class _Figures:
    """The dashboard's figures as HTML fragments; plotly.js goes in front of the first only."""

    def __init__(self) -> None:
        try:
            from mmbright_core.present import comparison_figures
        except ModuleNotFoundError as err:
            raise MissingDependencyError("the HTML report", "app", "plotly") from err
        self._figures = comparison_figures
        self._count = 0

    def _html(self, figure: Any) -> str:
        self._count += 1
        html_text: str = _laid_out(figure).to_html(
            full_html=False,
            include_plotlyjs=self._count == 1,
            div_id=f"figure-{self._count}",
            config={"displaylogo": False},
        )
        return html_text

    def domain_deltas(self, c: Comparison) -> str:
        return self._html(self._figures.domain_deltas(c))

    def histogram(self, c: Comparison) -> str:
        return self._html(self._figures.delta_histogram(c))

    def breakdown(self, c: Comparison, name: str, frame: pd.DataFrame) -> str:
        return self._html(self._figures.breakdown_bars(frame, c, name))


def _laid_out(figure: Any) -> Any:
    """Give a dashboard figure the report's theme, margins and labels fitted to the plot.

    A figure keeps the Plotly theme that was the default when it was built. In the
    dashboard (whose Export tab builds this report) that is Streamlit's theme, which
    fits no margin to the labels: the report showed "tu" for "askubuntu", ".8" for
    "0.8" and axis titles over the tick labels. The dashboard's own figures keep
    their look; only the copies drawn here are changed.
    """
    figure.update_layout(template=FIGURE_TEMPLATE, margin=_FIGURE_MARGIN)
    figure.update_xaxes(automargin=True, title_standoff=10)
    figure.update_yaxes(automargin=True, title_standoff=10)
    return figure
