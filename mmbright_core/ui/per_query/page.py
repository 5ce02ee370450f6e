"""Per query: a run's nDCG@10 per query (and B − A against a second run), filterable."""

from __future__ import annotations

from typing import cast

import streamlit as st

from mmbright_core.analysis.compare import JUDGED
from mmbright_core.analysis.slices import tagged, with_tags
from mmbright_core.present import figures
from mmbright_core.ui.common import (
    failure_tags,
    loaders,
    navigation,
    opening,
    queries,
    render,
    state,
    views,
    widgets,
)
from mmbright_core.ui.common.literal import literal
from mmbright_core.ui.common.sidebar import selected_runs

MEASURE = loaders.MEASURE
Range = tuple[float, float]
CHOICES_KEY = "pq_choices"

# "Open in inspector" leaves the page: go before the table is scored and sent again.
opening.open_clicked("pq_open", "pq_query", CHOICES_KEY)
st.title("Per-query scores")
names = selected_runs()
if not names:
    st.info("Choose runs in the sidebar (or add some on the Home page).")
    st.stop()
# One pair of runs for every page (widgets.run_pair): B is the second run unless "(none)".
first_a, first_b = widgets.run_pair(names, b_optional=True)
pick_a, pick_b = st.columns(2)
run = widgets.pick_run(pick_a, "Run (A)", names, "pq_run", state.RUN_A_KEY, first_a)
run_b = widgets.pick_run(
    pick_b,
    "Compared with (B)",
    [state.NO_RUN, *(n for n in names if n != run)],
    "pq_run_b",
    state.RUN_B_KEY,
    first_b,
    help="Adds B's score and B − A per query",
)
paired = run_b != state.NO_RUN
entries = state.task_runs()
view = render.attempt(loaders.current_view)
# Only the runs shown are scored (each run's scores are cached on their own).
table = render.attempt(loaders.table_for, view, {run: entries[run]}) if view else None
if view is None or table is None:
    st.stop()
rows = views.run_rows(table, run, MEASURE)
if paired:
    deltas = render.attempt(loaders.deltas_for, view, entries, run, run_b)
    if deltas is None:
        st.stop()
    rows = views.with_pair(rows, deltas, MEASURE)
texts = render.attempt(queries.query_texts, view, rows["domain"].unique())
rows = views.with_text(rows, texts or {}, limit=None)  # whole in the CSV, cut in the table
tags = render.attempt(failure_tags.query_tags, view) or {}
rows = with_tags(rows, tags)

# The filters keep their values from page to page (widgets.sticky).
domain_col, image_col, score_col = st.columns(3)
options = sorted(rows["domain"].unique())
domains = domain_col.multiselect(
    "Domains",
    options,
    **widgets.sticky_within("pq_domains", options),
)
most_images = max(int(rows["n_images"].max()) if len(rows) else 0, 1)
# A range slider: seeded with a (low, high) pair, it returns one (typed as a single value).
images = image_col.slider(
    "Query images",
    0,
    most_images,
    **widgets.sticky_range("pq_images", 0, most_images),
)
scores = score_col.slider(
    f"{MEASURE} of A",
    0.0,
    1.0,
    step=0.05,
    **widgets.sticky_range("pq_scores", 0.0, 1.0),
)
tag_col, loses_col = st.columns([2, 1], vertical_alignment="bottom")
chosen = failure_tags.tag_choice(
    tag_col, widgets.sticky_within("pq_tags", failure_tags.tag_names())
)
loses = loses_col.toggle(
    "B loses only",
    **widgets.sticky("pq_loses", False),
    disabled=not paired,
    help="Keep the queries where B − A < 0",
)
shown = views.filter_rows(
    rows, MEASURE, domains=domains, images=cast(tuple[int, int], images), scores=cast(Range, scores)
)
shown = shown.loc[tagged(shown, tags, chosen)].reset_index(drop=True)
if paired:
    shown = shown.loc[shown["delta"].notna()].reset_index(drop=True)
    if loses:
        shown = shown.loc[shown["delta"] < 0].reset_index(drop=True)

labels = [f"{d} / {q}" for d, q in zip(shown["domain"], shown["query_id"], strict=True)]
opening.remember_choices(CHOICES_KEY, labels, shown)
st.caption(
    f"{len(shown)} of {len(rows)} queries shown (queries without a score are left out"
    + (", and those B does not score)." if paired else ").")
    + " Pick a row to open it in the inspector."
)
# One tab shown at a time: the browser draws the chart only when its tab is opened.
table_tab, chart_tab = st.tabs(["Table", "Distribution"])
with chart_tab:
    if paired:
        figure = figures.delta_distribution(shown["delta"], MEASURE, labels)
    else:
        figure = figures.score_histogram(shown[MEASURE], run, MEASURE, labels)
    st.plotly_chart(figure, key="pq_hist")
with table_tab:
    a_name, b_name = literal(run), literal(run_b)
    # Headers name A and B, their tooltips the runs; the columns fit a 1000 px window, about
    # 530 px beside the sidebar (the CSV has every column, each named after its run).
    has_tags = "tags" in shown.columns and shown["tags"].astype(bool).any()
    # A tags column takes 75 px of the text and J@10 columns: every column still fits.
    width = dict(domain=60, query_id=75, query=45, judged=45) if has_tags else {}
    width = {**dict(domain=75, query_id=90, query=75, judged=50), **width}
    order = ["domain", "query_id", "query", MEASURE, f"{MEASURE} (B)", "delta", JUDGED]
    order += [f"{JUDGED} (B)", *(["tags"] if has_tags else [])]
    picked = st.dataframe(
        shown.assign(query=[views.cut_query(t) for t in shown["query"]]),
        hide_index=True,
        key="pq_table",
        on_select="rerun",
        selection_mode="single-row",
        column_order=[c for c in order if c in shown.columns],
        column_config={
            "domain": st.column_config.TextColumn("domain", width=width["domain"]),
            "query_id": st.column_config.TextColumn("query id", width=width["query_id"]),
            "query": st.column_config.TextColumn("query", width=width["query"]),
            MEASURE: st.column_config.NumberColumn(
                "A", help=f"{MEASURE} of {a_name} (A)", format="%.3f", width=45
            ),
            f"{MEASURE} (B)": st.column_config.NumberColumn(
                "B", help=f"{MEASURE} of {b_name} (B)", format="%.3f", width=45
            ),
            "delta": st.column_config.NumberColumn(
                "B − A",
                format="%+.3f",
                width=55,
                help=f"{MEASURE} of {b_name} (B) minus that of {a_name} (A)",
            ),
            JUDGED: st.column_config.NumberColumn(
                "J@10 A",
                help=f"{JUDGED} of {a_name} (A): judged share of its top 10",
                format="%.1f",
                width=width["judged"],
            ),
            f"{JUDGED} (B)": st.column_config.NumberColumn(
                "J@10 B",
                help=f"{JUDGED} of {b_name} (B): judged share of its top 10",
                format="%.1f",
                width=width["judged"],
            ),
            "tags": st.column_config.TextColumn("tags", width=75),
        },
    )
    render.csv_download(
        views.named_columns(shown, run, run_b if paired else None, MEASURE),
        f"per_query_{run}_vs_{run_b}.csv" if paired else f"per_query_{run}.csv",
        key="pq_csv",
    )
# A picked row opens its query in the inspector, as on Compare.
opening.open_query(shown, picked.selection.rows if picked is not None else [])

left, right = st.columns([2, 1], vertical_alignment="bottom")
choice = left.selectbox("Query to inspect", labels, key="pq_query") if labels else None
if right.button("Open in inspector", key="pq_open", disabled=choice is None) and choice:
    domain, query_id = shown.iloc[labels.index(choice)][["domain", "query_id"]]
    state.set_inspect_target(str(domain), str(query_id))
    st.switch_page(navigation.page_file("inspector"))
