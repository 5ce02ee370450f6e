"""What of a run a task knows: its queries among the task's, its doc ids in the corpus."""

from __future__ import annotations

from pathlib import Path

import huggingface_hub
import pytest
from fixture_dataset import A1, A3, AI1, AI3, AI_SVG

from mmbright_core.data.matching import WEAK_MATCH, MatchCounts, match_counts
from mmbright_core.data.sources import Source, open_source
from mmbright_core.data.view import TaskView

MADE_UP = "academia/ffffffff_1.txt"


def test_text_task_counts_queries_and_passages(source: Source) -> None:
    # Task 1: academia has 4 queries and 7 passages, biology 2 queries.
    runs = {"academia": {"a1": {A1: 2.0, MADE_UP: 1.0}, "a2": {A3: 1.0}, "zz": {A1: 1.0}}}
    counts = match_counts(TaskView(source, 1), runs)
    assert counts == MatchCounts(3, 2, 6, 3, 2, 7)  # zz is no query; MADE_UP no passage
    assert not counts.weak and not counts.nothing


def test_queries_left_out_of_the_filing_count_against_the_run(source: Source) -> None:
    runs = {"academia": {"a1": {A1: 1.0}}}
    assert match_counts(TaskView(source, 1), runs, run_queries=3).weak  # 1 of 3 < WEAK_MATCH
    assert WEAK_MATCH == 0.5
    assert not match_counts(TaskView(source, 1), runs, run_queries=2).weak  # 1 of 2 is half


def test_a_run_of_made_up_doc_ids_matches_nothing(source: Source) -> None:
    counts = match_counts(TaskView(source, 2), {"academia": {"a1": {MADE_UP: 1.0}}})
    assert (counts.matched_queries, counts.run_docs, counts.matched_docs) == (1, 1, 0)
    assert counts.nothing and counts.weak
    assert counts.describe() == (
        "1 of its 1 queries are queries of the task (which has 5); 0 of the 1 doc ids it "
        "ranks are in the corpus (7 items in the domains it covers)"
    )


def test_image_and_pair_tasks_read_their_corpus_by_id(source: Source) -> None:
    # Task 3: academia's 8 corpus images (the SVG included) and one judged image missing
    # from them; task 4: 19 pairs (7 text-only, 12 passage x image of the same key).
    images = match_counts(
        TaskView(source, 3), {"academia": {"a1": {AI1: 2.0, AI_SVG: 1.0, A1: 0.5}}}
    )
    assert (images.run_docs, images.matched_docs, images.corpus_docs) == (3, 2, 9)
    pairs = {f"{A1}|||__NO_IMAGE__": 3.0, f"{A1}|||{AI1}": 2.0, f"{A1}|||{AI3}": 1.0}
    counts = match_counts(TaskView(source, 4), {"academia": {"a1": {**pairs, A1: 0.5}}})
    assert (counts.run_docs, counts.matched_docs, counts.corpus_docs) == (4, 2, 19)


def test_a_domain_the_source_lacks_matches_nothing(source: Source) -> None:
    counts = match_counts(TaskView(source, 1), {"physics": {"p1": {"physics/aa_1.txt": 1.0}}})
    assert counts == MatchCounts(1, 0, 6, 0, 0, 0) and counts.nothing


def test_the_hubs_corpus_is_not_downloaded_for_a_count(
    fixture_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fetched: list[str] = []

    def download(repo_id: str, filename: str, **_: object) -> str:
        fetched.append(filename)
        return str(fixture_dir / filename)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    hub = open_source("hf")
    monkeypatch.setattr(hub, "domains", lambda: ("academia", "biology"))  # the fixture's
    counts = match_counts(TaskView(hub, 1), {"academia": {"a1": {MADE_UP: 1.0}}})
    assert (counts.matched_queries, counts.run_docs, counts.matched_docs) == (1, 1, None)
    assert not counts.weak  # nothing says the doc ids are wrong
    assert "its 1 doc ids were not looked up in the corpus" in counts.describe()
    assert not any(name.startswith("documents/") for name in fetched)
