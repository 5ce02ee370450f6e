"""Each protocol rule of docs/protocol.md, Per-task protocol on the fixture, with the expected
judgments written out."""

from __future__ import annotations

from pathlib import Path

import pytest
from release_task4 import release_task4

from mmbright_core.data.ids import normalise_path
from mmbright_core.data.pairs import judge_pairs, pair_corpus
from mmbright_core.data.sources import FolderSource, Source
from mmbright_core.data.task_inputs import QueryRecord
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.types import ImageRef, Query

NO = "|||__NO_IMAGE__"
A1, A2, A3 = "academia/a1b2c3d4_101.txt", "academia/a1b2c3d4_102.txt", "academia/e5f6a7b8_201.txt"
A_HARD, A_EMPTY = "academia/0123456789abcdef_301.txt", "academia/c0ffee00_401.txt"
A_DUP, A_NEG = "academia/c0ffee00_402.txt", "academia/deadbeef_501.txt"
AI1 = "academia/academia_a1b2c3d4_0001/image_1.png"
AI2 = "academia/academia_a1b2c3d4_0001/image_2.jpg"
AI3 = "academia/academia_e5f6a7b8_0002/image_1.png"
AI_NEG = "academia/academia_deadbeef_0005/image_1.png"
AI_ORPHAN = "academia/academia_99aa99aa_0006/image_1.png"
AI_CORRUPT = "academia/academia_c0ffee00_0004/image_1.png"
AI_TINY = "academia/academia_c0ffee00_0003/image_2.png"  # 1x1: decodes, so kept
B1, B2 = "biology/fec40b40_1635_0.txt", "biology/fec40b40_1635_1.txt"
B3, B_HARD = "biology/abcdef12_77_0.txt", "biology/fedcba9876543210_5_0.txt"
BI1 = "biology/biology_fec40b40_0001/image_1.png"
BI2 = "biology/biology_abcdef12_0002/image_1.jpg"


def test_task1_text_queries_gold_ids_and_negative_exclusions(source: Source) -> None:
    data = source.task(1, "academia")
    assert [q.query_id for q in data.queries] == ["a1", "a2", "a3", "a4"]
    assert all(q.images == () for q in data.queries)  # Task 1 queries are text only
    assert [d.doc_id for d in data.corpus] == [A1, A2, A3, A_HARD, A_EMPTY, A_DUP, A_NEG]
    assert data.corpus[4].text == ""  # the empty passage is kept
    assert data.corpus[0].text == data.corpus[5].text  # so is the duplicate
    assert data.qrels == {"a1": {A1: 1}, "a2": {A3: 1, A_EMPTY: 1}, "a3": {A2: 1}, "a4": {A3: 1}}
    # "N/A" means no negatives; the 16-hex hard negative is excluded like any other.
    assert data.excluded == {
        "a1": {A_HARD, A_NEG},
        "a2": frozenset(),
        "a3": frozenset(),
        "a4": {A_HARD},
    }
    assert data.protocol == "paper"
    assert data.report.empty_qrels == ()


def test_task1_reads_numpy_written_lists_of_biology(source: Source) -> None:
    data = source.task(1, "biology")
    assert data.qrels == {"b1": {B1: 1}, "b2": {B3: 1}}
    assert data.excluded == {"b1": {B_HARD}, "b2": frozenset()}


def test_task2_multimodal_queries_keep_normalised_image_paths(source: Source) -> None:
    data = source.task(2, "academia")
    assert [q.query_id for q in data.queries] == ["a1", "a2", "a4"]
    assert data.queries[0].images == (
        ImageRef("academia/academia_a1b2c3d4_0000/image_1.png"),
        ImageRef("academia/academia_a1b2c3d4_0000/image_2.jpg"),
    )
    assert data.qrels == {"a1": {A1: 1}, "a2": {A3: 1, A_EMPTY: 1}, "a4": {A3: 1}}
    assert data.excluded["a1"] == {A_HARD, A_NEG}
    assert len(data.corpus) == 7


def test_task3_images_positives_and_empty_qrels(source: Source) -> None:
    data = source.task(3, "academia")
    # SVG and corrupt blobs leave the corpus, the 1x1 stays; doc ids are normalised paths.
    assert [d.doc_id for d in data.corpus] == [AI1, AI2, AI3, AI_NEG, AI_ORPHAN, AI_TINY]
    assert all(d.image == ImageRef(d.doc_id) for d in data.corpus)
    assert sorted(data.report.undecodable_images) == [
        "academia/academia_c0ffee00_0003/image_1.svg",
        AI_CORRUPT,
    ]
    reasons = list(data.report.undecodable_images.values())
    assert reasons[0].startswith("SVG") and reasons[1].startswith("corrupt")
    # Every positive is judged, retrievable or not; a4 has none and is reported.
    assert data.qrels == {
        "a1": {AI1: 1, AI2: 1},
        "a2": {
            AI3: 1,
            AI_ORPHAN: 1,
            "academia/academia_e5f6a7b8_0002/image_9.png": 1,
            AI_CORRUPT: 1,
        },
        "a4": {},
    }
    assert data.report.empty_qrels == ("a4",)
    assert all(not ids for ids in data.excluded.values())  # negative_ids are passage ids


def test_task4_pairs_grades_orphans_unavailable_and_exclusions(source: Source) -> None:
    data = source.task(4, "academia")
    assert [d.doc_id for d in data.corpus] == [
        A1 + NO, f"{A1}|||{AI1}", f"{A1}|||{AI2}",
        A2 + NO, f"{A2}|||{AI1}", f"{A2}|||{AI2}",
        A3 + NO, f"{A3}|||{AI3}",
        A_HARD + NO, A_EMPTY + NO, f"{A_EMPTY}|||{AI_TINY}", A_DUP + NO, f"{A_DUP}|||{AI_TINY}",
        A_NEG + NO, f"{A_NEG}|||{AI_NEG}",
    ]  # fmt: skip
    assert data.corpus[1].text == data.corpus[0].text and data.corpus[1].image == ImageRef(AI1)
    assert data.corpus[0].image is None
    assert data.qrels == {
        "a1": {A1 + NO: 1, f"{A1}|||{AI1}": 2, f"{A1}|||{AI2}": 2},
        "a2": {A3 + NO: 1, A_EMPTY + NO: 1, f"{A3}|||{AI3}": 2},
        "a4": {A3 + NO: 1},
    }
    # AI2 is positive and negative for a1: positive wins, so only AI_NEG's pair is excluded.
    assert data.excluded == {
        "a1": {f"{A_NEG}|||{AI_NEG}"},
        "a2": frozenset(),
        "a4": {f"{A1}|||{AI1}", f"{A2}|||{AI1}"},
    }
    # a2: AI_ORPHAN has no gold of its key; image_9 is absent; the corrupt one does not decode.
    assert data.report.orphan_positives == 1
    assert data.report.unavailable_positives == 2
    assert data.report.added_judged_pairs == 0
    assert data.protocol == "paper"


def test_task4_paper_protocol_pairs_biology_chunks(source: Source) -> None:
    data = source.task(4, "biology", "paper")
    assert [d.doc_id for d in data.corpus] == [
        B1 + NO, f"{B1}|||{BI1}", B2 + NO, f"{B2}|||{BI1}", B3 + NO, f"{B3}|||{BI2}", B_HARD + NO
    ]  # fmt: skip
    assert data.qrels == {
        "b1": {B1 + NO: 1, f"{B1}|||{BI1}": 2},
        "b2": {B3 + NO: 1, f"{B3}|||{BI2}": 2},
    }
    # b1's negative image BI2 is excluded with its passage; b2's judged pair of it is not.
    assert data.excluded == {"b1": {f"{B3}|||{BI2}"}, "b2": frozenset()}
    assert data.report.orphan_positives == 0


def test_task4_legacy_protocol_gives_biology_no_image_pairs(source: Source) -> None:
    data = source.task(4, "biology", "legacy")
    assert data.protocol == "legacy"
    assert [d.doc_id for d in data.corpus] == [B1 + NO, B2 + NO, B3 + NO, B_HARD + NO]
    assert data.qrels == {"b1": {B1 + NO: 1}, "b2": {B3 + NO: 1}}
    assert data.excluded == {"b1": frozenset(), "b2": frozenset()}
    assert data.report.orphan_positives == 2  # no gold passage has a legacy key
    # Academia's ids have one numeric segment: both protocols agree there.
    assert source.task(4, "academia", "legacy").qrels == source.task(4, "academia").qrels


@pytest.mark.parametrize("domain", ["academia", "biology"])
def test_task4_release_protocol_is_the_release_codes_pairs_and_judgments(
    source: Source, fixture_dir: Path, domain: str
) -> None:
    pair_ids, qrels, masked = release_task4(fixture_dir, domain)
    data = source.task(4, domain, "release")
    assert data.protocol == "release"
    # The release keeps image paths as stored; this package writes them with "/" (as everywhere).
    assert [d.doc_id for d in data.corpus] == [normalise_path(d) for d in pair_ids]
    assert data.qrels == {q: {normalise_path(d): r for d, r in j.items()} for q, j in qrels.items()}
    assert all(not ids for ids in masked.values())  # negative_ids never equal a pair id
    assert data.excluded == {q: frozenset() for q in qrels}
    assert data.report.added_judged_pairs == 0
    assert source.judgments(4, domain, "release").qrels == data.qrels


def test_task4_release_protocol_judges_every_pair_of_a_gold_passage_1(source: Source) -> None:
    data = source.task(4, "academia", "release")
    assert data.qrels == {
        "a1": {A1 + NO: 1, f"{A1}|||{AI1}": 1, f"{A1}|||{AI2}": 1},
        "a2": {A3 + NO: 1, f"{A3}|||{AI3}": 1, A_EMPTY + NO: 1, f"{A_EMPTY}|||{AI_TINY}": 1},
        "a4": {A3 + NO: 1, f"{A3}|||{AI3}": 1},
    }
    # Biology's chunked ids have no released key: text-only pairs alone, as under legacy.
    biology = source.task(4, "biology", "release")
    assert [d.doc_id for d in biology.corpus] == [B1 + NO, B2 + NO, B3 + NO, B_HARD + NO]
    assert biology.qrels == {"b1": {B1 + NO: 1}, "b2": {B3 + NO: 1}}


def test_judged_pairs_missing_from_the_corpus_are_added_once() -> None:
    query = Query("q", "gis", "text")
    record = QueryRecord(
        query,
        gold_ids=("gis/0a0a0a0a_1.txt", "gis/ffffffff_2.txt"),
        positive_images=("gis/gis_0a0a0a0a_0001/image_1.png",),
    )
    passages = ["gis/0a0a0a0a_1.txt"]  # the second gold passage is not in the corpus
    images = ["gis/gis_0a0a0a0a_0001/image_1.png"]
    corpus = {"gis/0a0a0a0a_1.txt|||__NO_IMAGE__"}  # its image pair is missing
    judged = judge_pairs([record, record], passages, images, corpus, "gis", "paper")
    assert judged.added == (("gis/0a0a0a0a_1.txt", "gis/gis_0a0a0a0a_0001/image_1.png"),)
    assert judged.qrels["q"] == {
        "gis/0a0a0a0a_1.txt|||__NO_IMAGE__": 1,
        "gis/ffffffff_2.txt|||__NO_IMAGE__": 1,  # judged, though nothing can retrieve it
        "gis/0a0a0a0a_1.txt|||gis/gis_0a0a0a0a_0001/image_1.png": 2,
    }


def test_pair_corpus_joins_on_keys_only() -> None:
    pairs = pair_corpus(
        ["gis/0a0a0a0a_1.txt", "gis/nokey.txt"],
        ["gis/gis_0a0a0a0a_0001/image_1.png", "gis/gis_bbbbbbbb_0001/image_1.png", "gis/x.png"],
        "gis",
        "paper",
    )
    assert pairs == [
        ("gis/0a0a0a0a_1.txt", None),
        ("gis/0a0a0a0a_1.txt", "gis/gis_0a0a0a0a_0001/image_1.png"),
        ("gis/nokey.txt", None),
    ]


def test_unknown_task_domain_and_protocol(source: Source) -> None:
    with pytest.raises(InputError, match="unknown task"):
        source.task(5, "academia")
    with pytest.raises(UnknownNameError, match="did you mean 'biology'"):
        source.task(1, "biologi")
    with pytest.raises(UnknownNameError, match="protocol"):
        source.task(4, "biology", "official")


def test_tasks_are_cached_and_judgments_skip_the_corpus(fixture_dir: Path) -> None:
    fresh = FolderSource(fixture_dir)
    light = fresh.judgments(1, "academia")
    assert light.corpus == () and light.qrels == fresh.task(1, "academia").qrels
    assert fresh.task(1, "academia") is fresh.task(1, "academia")
    assert fresh.judgments(1, "academia") is fresh.task(1, "academia")
    assert fresh.judgments(4, "academia").qrels == fresh.task(4, "academia").qrels


def test_keep_negatives_excludes_nothing_in_tasks_1_and_2(source: Source) -> None:
    for task in (1, 2):
        kept = source.task(task, "academia", negatives="keep")
        assert all(ids == frozenset() for ids in kept.excluded.values())
        official = source.task(task, "academia")
        assert kept.qrels == official.qrels and kept.queries == official.queries
        assert official.excluded["a1"] == {A_HARD, A_NEG}  # the default is the official rule
        assert source.judgments(task, "academia", negatives="keep").excluded == kept.excluded


def test_keep_negatives_leaves_task_4_negative_image_pairs_excluded(source: Source) -> None:
    # Task 4's exclusions come from negative_images, a rule of its own protocol (docs/protocol.md,
    # Per-task protocol).
    kept = source.task(4, "academia", negatives="keep")
    assert kept is source.task(4, "academia")  # one policy there, so one cache entry
    assert kept.excluded["a1"] == {f"{A_NEG}|||{AI_NEG}"}
    assert source.task(3, "academia", negatives="keep") is source.task(3, "academia")
    with pytest.raises(UnknownNameError, match="negatives policy"):
        source.task(1, "academia", negatives="drop")


def test_tasks_1_to_3_have_one_protocol(source: Source) -> None:
    assert source.task(2, "biology", "legacy") is source.task(2, "biology")
    assert source.task(3, "biology", "legacy").protocol == "paper"
    with pytest.raises(UnknownNameError, match="protocol"):
        source.task(1, "biology", "papers!")
