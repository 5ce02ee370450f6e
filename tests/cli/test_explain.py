"""``mmbright explain``: a run's item explained from the shell, as JSON or as a PNG overlay.

The run is made by ``mmbright run`` with a plugin whose image vector sees only the top-left
quarter of the image, so the grid it prints must put its weight there.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from corner_embedder import SPEC, demo_run
from not_files import assert_each_refused
from PIL import Image

from mmbright_core.cli import main
from mmbright_core.data.images import query_images
from mmbright_core.data.sources import open_source
from mmbright_core.io.json_shapes import json_kind
from mmbright_core.io.official import read_outputs
from mmbright_core.present.region_overlay import region_name

QUERY = "biology_1"


@pytest.fixture(scope="module")
def corner_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo Task 2 biology run of the corner plugin."""
    return demo_run(tmp_path_factory.mktemp("corner-run"))


def _explain(run: Path, *extra: str) -> list[str]:
    return [
        "explain", "--source", "demo", "--task", "2", "--run", str(run), "--query", QUERY,
        "--allow-import", SPEC, "--cache-dir", str(run.parent.parent / "cache"), *extra,
    ]  # fmt: skip


def _wrong_and_relevant(run: Path) -> tuple[str, str]:
    data = open_source("demo").task(2, "biology")
    relevant = next(d for d, grade in data.qrels[QUERY].items() if grade > 0)
    ranked = read_outputs(run).runs["biology"][QUERY]
    return next(d for d in ranked if d != relevant), relevant


def test_the_grid_printed_as_json_puts_the_weight_on_the_quarter_the_model_sees(
    corner_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong, relevant = _wrong_and_relevant(corner_run)
    args = _explain(corner_run, "--doc", wrong, "--versus", relevant, "--regions", "--grid", "6")
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["kind"], printed["grid"], printed["fill"]) == ("regions", 6, "mean")
    assert (printed["doc_id"], printed["versus"], printed["run"]) == (
        wrong,
        relevant,
        str(corner_run),
    )
    assert printed["retriever"] == SPEC and printed["passes"] == 37
    ranked = read_outputs(corner_run).runs["biology"][QUERY]
    assert printed["score"] == pytest.approx(ranked[wrong], abs=1e-4)
    assert printed["versus_score"] == pytest.approx(ranked[relevant], abs=1e-4)
    (image,) = printed["images"]
    values = image["values"]
    # A 6x6 grid: the top-left quarter is exactly the first three rows' first three cells.
    outside = [values[r][c] for r in range(6) for c in range(6) if r >= 3 or c >= 3]
    assert outside == [0.0] * 27
    assert any(values[r][c] != 0 for r in range(3) for c in range(3))


def test_json_with_out_is_written_to_the_file_instead_of_printed(
    corner_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong, relevant = _wrong_and_relevant(corner_run)
    regions = _explain(corner_run, "--doc", wrong, "--versus", relevant, "--regions", "--grid", "3")
    assert main(regions) == 0
    printed = capsys.readouterr().out
    out = tmp_path / "grid.json"
    assert main([*regions, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert json.loads(out.read_text()) == json.loads(printed)
    parts = tmp_path / "parts.json"
    assert main([*_explain(corner_run, "--doc", wrong), "--out", str(parts)]) == 0
    assert json.loads(parts.read_text())["doc_id"] == wrong


def test_the_png_is_the_query_image_with_the_heat_over_it(
    corner_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong, relevant = _wrong_and_relevant(corner_run)
    out = tmp_path / "heat.png"
    args = ["--doc", wrong, "--versus", relevant, "--regions", "--grid", "4", "--fill", "grey"]
    assert main([*_explain(corner_run, *args), "--format", "png", "--out", str(out)]) == 0
    said = capsys.readouterr().out
    named = {region_name(r, c, 4) for r in range(2) for c in range(2)}  # the quarter's cells
    assert any(said.startswith(f"wrote {out}: Filling the {name} cell") for name in named)
    source = open_source("demo")
    query = next(q for q in source.task(2, "biology").queries if q.query_id == QUERY)
    picture = query_images(source, query, "first").images[0]
    with Image.open(out) as drawn:
        assert drawn.format == "PNG" and drawn.size == picture.size
        # The lower-right cell is untouched (the model never sees it): the image's own pixels.
        corner = (picture.width - 2, picture.height - 2)
        assert drawn.convert("RGB").getpixel(corner) == picture.getpixel(corner)
        # The file says what it shows: the printed sentence, the colours' legend, the grid.
        text = dict(drawn.text)  # type: ignore[attr-defined]
    assert said == f"wrote {out}: {text['Description']} {text['Comment'].split(' Tint:')[0]}\n"
    assert text["Title"] == query.images[0].path
    assert text["Comment"].startswith(f"Red: the cell raised {wrong} over {relevant}; blue:")
    assert "Fill grey" in text["Comment"] and "the strongest (" in text["Comment"]
    grid = json.loads(text["mmbright:grid"])
    assert len(grid) == 4 and all(len(row) == 4 for row in grid)
    strongest = max(abs(v) for row in grid for v in row)
    assert strongest > 0 and f"the strongest ({strongest:.2f})" in text["Comment"]
    assert all(grid[r][c] == 0 for r in range(4) for c in range(4) if r >= 2 or c >= 2)


def test_without_regions_the_scores_parts_are_printed(
    corner_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong, _ = _wrong_and_relevant(corner_run)
    assert main(_explain(corner_run, "--doc", wrong)) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["kind"] == "fusion" and printed["doc_id"] == wrong
    ranked = read_outputs(corner_run).runs["biology"][QUERY]
    assert printed["text_part"] + printed["image_part"] == pytest.approx(ranked[wrong], abs=1e-4)


def test_mistakes_are_one_line_each(
    corner_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong, relevant = _wrong_and_relevant(corner_run)
    base = _explain(corner_run, "--doc", wrong)
    cases = [
        ([*base, "--format", "png"], "--format png draws the regions grid"),
        ([*base, "--format", "png", "--regions"], "--format png writes a file"),
        ([*(a if a != QUERY else "biology_999" for a in base)], "in none of the run's domains"),
        ([*base, "--versus", relevant], "--versus compares two items' regions"),
        ([*base, "--regions", "--grid", "0"], "invalid grid size"),
        ([*base[:-2], "--doc", "biology/nowhere.txt", "--regions"], "not in the corpus"),
        ([*base, "--regions", "--side", "document"], "has no image of its own"),
        ([*base, "--regions", "--domain", "gis"], "not in the task's data"),
    ]
    for args, message in cases:
        assert main(args) == 2, message
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    refused = [a for a in base if a not in ("--allow-import", SPEC)]
    assert main([*refused, "--regions"]) == 2
    err = capsys.readouterr().err
    assert "imports the module 'corner_embedder'" in err and "--allow-import" in err


@pytest.mark.parametrize("scale", ["abc", 0, -100])
def test_a_score_scale_that_is_no_number_above_0_is_one_line(
    corner_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], scale: object
) -> None:
    # A text ended in a traceback (float('abc')); 0 or a negative scale rebuilt a retriever
    # scoring everything 0, or in reverse.
    run = Path(shutil.copytree(corner_run, tmp_path / corner_run.name))
    for path in run.rglob("config.json"):
        stored = json.loads(path.read_text(encoding="utf-8"))
        stored["config"]["options"]["score_scale"] = scale
        path.write_text(json.dumps(stored), encoding="utf-8")
    wrong, _ = _wrong_and_relevant(run)
    args = _explain(run, "--doc", wrong)
    args[args.index("--cache-dir") + 1] = str(corner_run.parent.parent / "cache")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "mmbright explain: error: not a run configuration: bad option 'score_scale'; "
        f"expected a number above 0; found {json_kind(scale)}"
    ), err
    assert err.count("\n") == 1


def test_an_item_the_corpus_lacks_is_one_line_naming_it_the_query_and_the_ranked_ids(
    corner_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ranked = read_outputs(corner_run).runs["biology"][QUERY]
    first = sorted(ranked, key=ranked.__getitem__, reverse=True)[:5]
    for extra in ([], ["--regions"]):
        assert main([*_explain(corner_run, "--doc", "biology/nowhere.txt"), *extra]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert err.startswith(
            f"mmbright explain: error: {corner_run}: item 'biology/nowhere.txt' is not in the "
            f"corpus of query {QUERY!r} (task 2, domain biology). The run ranks first for it: "
            f"{', '.join(first)}"
        ), err


@pytest.mark.parametrize("form", ["json", "png"])
def test_out_naming_a_link_a_fifo_or_a_device_is_refused(
    corner_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    wrong, _ = _wrong_and_relevant(corner_run)
    args = _explain(corner_run, "--doc", wrong, "--regions", "--grid", "2", "--format", form)
    assert_each_refused(tmp_path, "explain", lambda out: main([*args, "--out", out]), capsys)
