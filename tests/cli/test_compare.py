import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest
from not_files import assert_each_refused

import mmbright_core.data
from mmbright_core.cli import main
from mmbright_core.io.official import write_domain_outputs
from mmbright_core.io.runs import write_trec_run

A1, A2, A3 = "academia/a1b2c3d4_101.txt", "academia/a1b2c3d4_102.txt", "academia/e5f6a7b8_201.txt"
A_HARD, A_EMPTY = "academia/0123456789abcdef_301.txt", "academia/c0ffee00_401.txt"
A_DUP = "academia/c0ffee00_402.txt"
B1, B3 = "biology/fec40b40_1635_0.txt", "biology/abcdef12_77_0.txt"

TEXT = {
    "a1": {A1: 8.0, A2: 7.0},  # nDCG@10 1
    "a2": {A3: 5.0, A_EMPTY: 4.0},  # 1
    "a4": {A3: 3.0},  # 1
    "b1": {B1: 3.0},  # 1
    "b2": {B3: 3.0},  # 1
}
MULTI = {
    "a1": {A_HARD: 10.0, A2: 9.0, A1: 8.0},  # A_HARD excluded: A1 at rank 2 -> 1/log2(3)
    "a2": {A3: 5.0, A_DUP: 4.0, A_EMPTY: 3.0},  # golds at 1 and 3
    "a4": {A1: 3.0},  # 0
    "b1": {B1: 3.0},  # 1 (tie)
    # b2 absent: scored in one run only
}
A1_B = 1 / math.log2(3)
A2_B = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))


@pytest.fixture
def runs(tmp_path):
    text, multi = tmp_path / "text.trec", tmp_path / "multi.trec"
    write_trec_run(text, TEXT)
    write_trec_run(multi, MULTI)
    return str(text), str(multi)


def _json(capsys, *argv):
    assert main(["compare", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_json_by_hand(fixture_dir, runs, capsys):
    out = _json(capsys, "--source", str(fixture_dir), "--task", "2", *runs, "--seed", "3")
    assert (out["run_a"], out["run_b"], out["measure"]) == ("text.trec", "multi.trec", "nDCG@10")
    assert out["unpaired"] == 1 and out["seed"] == 3
    summary = {row["scope"]: row for row in out["summary"]}
    academia = summary["academia"]
    assert academia["queries"] == 3
    assert academia["delta"] == pytest.approx((A1_B - 1 + A2_B - 1 + 0 - 1) / 3)
    assert (academia["wins"], academia["ties"], academia["losses"]) == (0, 0, 3)
    # Three non-zero deltas of one sign: 2 of the 8 sign patterns reach |sum|: p = 0.25.
    assert academia["perm_exact"] and academia["p_perm"] == pytest.approx(0.25)
    biology = summary["biology"]
    assert biology["queries"] == 1 and biology["delta"] == 0 and biology["p_perm"] == 1.0
    assert biology["t"] is None  # one query: no t-test
    # Holm over the two domains: 0.25 * 2 = 0.5, then max(0.5, 1.0 * 1) = 1.0.
    assert academia["p_perm_holm"] == pytest.approx(0.5) and biology["p_perm_holm"] == 1.0
    assert summary["(pooled)"]["queries"] == 4
    hurt = out["most_hurt"]
    assert [h["query_id"] for h in hurt] == ["a4", "a1", "a2"]
    assert hurt[0]["first_relevant_rank_b"] is None and hurt[1]["first_relevant_rank_b"] == 2.0
    # a4's images: one missing, an SVG (neither decodes) and a 1x1 image (kept, as the
    # official loader keeps it).
    assert (hurt[0]["n_images"], hurt[0]["n_decodable_images"]) == (3, 1)


def test_compare_tsv_top_and_domain(fixture_dir, runs, capsys):
    argv = ["compare", "--source", str(fixture_dir), "--task", "2", *runs]
    assert main([*argv, "--domain", "academia", "--top", "1"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("# multi.trec vs text.trec: nDCG@10")
    assert lines[1].split("\t")[:3] == ["scope", "queries", "mean_a"]
    assert [line.split("\t")[0] for line in lines[2:4]] == ["academia", "(pooled)"]
    hurt = lines[lines.index("# most hurt queries (top 1)") + 2 :]
    assert len(hurt) == 1 and hurt[0].split("\t")[:2] == ["academia", "a4"]
    assert "biology" not in text
    # The same seed prints the same digits.
    assert main([*argv, "--domain", "academia", "--top", "1"]) == 0
    assert capsys.readouterr().out == text


def test_compare_prints_ranks_and_counts_as_integers(fixture_dir, runs, capsys):
    argv = ["--source", str(fixture_dir), "--task", "2", *runs]
    assert main(["compare", *argv]) == 0
    lines = capsys.readouterr().out.splitlines()
    start = lines.index("# most hurt queries (top 3)") + 1
    head = lines[start].split("\t")
    rows = [dict(zip(head, line.split("\t"), strict=True)) for line in lines[start + 1 :]]
    # a4: B ranks no relevant document; a1: B's first relevant one is at rank 2 (A_HARD excluded).
    ranks = [(r["query_id"], r["first_relevant_rank_a"], r["first_relevant_rank_b"]) for r in rows]
    assert ranks == [("a4", "1", "nan"), ("a1", "1", "2"), ("a2", "1", "1")]
    assert rows[1]["a"] == "1.0000"  # a measure keeps its decimals, even when whole
    hurt = _json(capsys, *argv)["most_hurt"]
    assert [type(h["first_relevant_rank_a"]) for h in hurt] == [int, int, int]


def test_compare_official_outputs_folder(fixture_dir, runs, tmp_path, capsys):
    folder = tmp_path / "outputs" / "run_multi"
    for domain in ("academia", "biology"):
        write_domain_outputs(folder, domain, {q: MULTI[q] for q in MULTI if q[0] == domain[0]}, {})
    out = _json(capsys, "--source", str(fixture_dir), "--task", "2", runs[0], str(folder))
    assert out["run_b"] == "run_multi"
    assert out["summary"][-1]["queries"] == 4


def test_compare_writes_a_report(fixture_dir, runs, tmp_path, capsys):
    report = tmp_path / "out" / "report.html"
    argv = ["compare", "--source", str(fixture_dir), "--task", "2", *runs, "--report", str(report)]
    assert main(argv) == 0
    assert "report written" in capsys.readouterr().err
    page = report.read_text(encoding="utf-8")
    tags = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, dict(attrs)))

    Parser().feed(page)
    images = [a for t, a in tags if t == "img"]
    # a4: the 1x1 image (missing and SVG shown as problems); a1: two; a2: one of two.
    assert len(images) == 4
    assert "Who signs the thesis approval page?" in page
    assert "SVG payload" in page and "relevant dropped" in page


def test_compare_errors_are_one_message(fixture_dir, runs, capsys):
    argv = ["compare", "--source", str(fixture_dir), "--task", "2", *runs, "--domain", "physic"]
    assert main(argv) == 2
    assert "unknown domain 'physic'" in capsys.readouterr().err


def test_a_domain_named_twice_is_compared_once(fixture_dir, runs, capsys):
    argv = ["--source", str(fixture_dir), "--task", "2", *runs]
    once = _json(capsys, *argv, "--domain", "academia")
    twice = _json(capsys, *argv, "--domain", "academia", "--domain", "academia")
    assert twice["summary"] == once["summary"]


def test_slice_names_agree_with_the_core():
    from mmbright_core.analysis.slices import SLICES
    from mmbright_core.cli.compare import _SLICES

    assert _SLICES == SLICES


def test_compare_by_images_prints_the_slice_table(fixture_dir, runs, capsys):
    out = _json(capsys, "--source", str(fixture_dir), "--task", "2", *runs, "--by", "images")
    groups = {row["group"]: row for row in out["slice"]}
    # Paired queries: a1 and a2 (2 images each) lose 1 - A1_B and 1 - A2_B; a4 (3) loses 1;
    # b1 (1 image) ties.
    assert list(groups) == ["1", "2", "3-5"]
    assert groups["2"]["queries"] == 2 and groups["2"]["losses"] == 2
    assert groups["2"]["delta"] == pytest.approx((A1_B - 1 + A2_B - 1) / 2)
    assert groups["2"]["ci_low"] == pytest.approx(A1_B - 1)
    assert groups["2"]["ci_high"] == pytest.approx(A2_B - 1)
    assert groups["1"]["ties"] == 1 and groups["3-5"]["delta"] == -1.0


def test_compare_by_ocr_words_says_not_read_without_a_cached_result(fixture_dir, runs, capsys):
    out = _json(capsys, "--source", str(fixture_dir), "--task", "2", *runs, "--by", "ocr-words")
    assert {row["group"] for row in out["slice"]} <= {"not read", "no image"}


def test_compare_by_ocr_words_reads_the_words_an_ocr_run_recorded(no_ocr_engine, capsys):
    shipped = Path(mmbright_core.data.__file__).parent / "demo" / "runs"
    runs = [str(shipped / "run_it2t_bm25"), str(shipped / "run_it2t_ocr-bm25")]
    out = _json(capsys, "--source", "demo", "--task", "2", *runs, "--by", "ocr-words")
    read = [row for row in out["slice"] if row["group"] not in ("not read", "no image")]
    assert read and sum(row["queries"] for row in read) >= 10


def test_compare_reads_failure_tags_from_the_notes_file(
    fixture_dir, runs, tmp_path, monkeypatch, capsys
):
    from mmbright_core.notes import NotesStore, QueryKey

    notes = tmp_path / "notes.sqlite3"
    monkeypatch.setenv("MMBRIGHT_NOTES", str(notes))
    with NotesStore(notes) as store:
        store.add_tag("<b>bold</b> tag")
        store.set_tags(
            QueryKey(str(fixture_dir), 2, "paper", "academia", "a4"), ["<b>bold</b> tag"]
        )
    report = tmp_path / "report.html"
    argv = [*runs, "--by", "tag", "--report", str(report)]
    assert (
        main(["compare", "--source", str(fixture_dir), "--task", "2", *argv, "--format", "json"])
        == 0
    )
    printed = capsys.readouterr()
    out = json.loads(printed.out)
    hurt = {row["query_id"]: row["tags"] for row in out["most_hurt"]}
    assert hurt["a4"] == "<b>bold</b> tag" and hurt["a1"] == ""
    assert [row["group"] for row in out["slice"]] == ["<b>bold</b> tag", "(no tag)"]
    assert f"failure tags read from {notes} (1 annotated queries)" in printed.err
    page = report.read_text(encoding="utf-8")
    assert "&lt;b&gt;bold&lt;/b&gt; tag" in page and "<b>bold</b>" not in page
    assert "judgment gap" in page


def test_a_report_naming_a_link_a_fifo_or_a_device_is_refused(fixture_dir, runs, tmp_path, capsys):
    argv = ["compare", "--source", str(fixture_dir), "--task", "2", *runs, "--report"]
    assert_each_refused(tmp_path, "compare", lambda out: main([*argv, out]), capsys)
