import io
import shutil
import subprocess
from html.parser import HTMLParser

import pytest
from PIL import Image
from results_rows import results_frame

from mmbright_core.analysis.compare import compare_runs
from mmbright_core.analysis.rankdiff import rank_diff
from mmbright_core.present.report import QueryDetail, comparison_report

EVIL = "<script>alert('x')</script>"


def _png(color):
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buffer, format="PNG")
    return buffer.getvalue()


def _comparison():
    values = [("q1", 0.9, 0.1), ("q2", 0.5, 0.2), ("q3", 0.1, 0.4), ("q4", 0.3, 0.3)]
    rows = []
    for qid, text, multi in values:
        for run, value in (("text", text), (EVIL, multi)):
            rows.append((run, 2, "biology", qid, value, 2, 1, 900, 3, 1, 1.0, True))
    return compare_runs(results_frame(rows), "text", EVIL, n_resamples=200)


def _details():
    diff = rank_diff({"d1": 1}, {"d1": 2.0, "d2": 1.0}, {"d2": 2.0, "d1": 1.0}, k=1)
    return {
        ("biology", "q1"): QueryDetail(
            text="Why is the sky <blue>? " * 50,
            images=[
                ("biology/x/image_1.png", _png("red")),
                ("biology/x/image_2.svg", b"<svg xmlns='http://www.w3.org/2000/svg'/>"),
                ("biology/x/image_3.png", None),
            ],
            rank_diff=diff,
        ),
        ("biology", "q2"): QueryDetail(images=[("biology/y/image_1.png", _png("blue"))]),
    }


class _Collector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.attrs = []
        self.scripts = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def test_report_parses_and_holds_tables_figures_images():
    page = comparison_report(_comparison(), details=_details(), top=5)
    parser = _Collector()
    parser.feed(page)
    parser.close()
    assert parser.tags.count("table") >= 6  # settings, summary, 3 breakdowns, most hurt, rank diff
    figures = [a for t, a in parser.attrs if t == "div" and a.get("id", "").startswith("figure-")]
    assert len(figures) == 5
    images = [a["src"] for t, a in parser.attrs if t == "img"]
    assert len(images) == 2 and all(s.startswith("data:image/png;base64,") for s in images)
    assert "SVG payload" in page and "missing" in page
    # plotly.js is inlined exactly once (one big script) and no script is fetched.
    assert sum(len(s) > 1_000_000 for s in parser.scripts) == 1
    assert page.count("Plotly.newPlot") == 5
    assert not [a for t, a in parser.attrs if t == "script" and "src" in a]


def test_report_escapes_text():
    page = comparison_report(_comparison(), details=_details())
    assert EVIL not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;blue&gt;" in page


class _Tables(HTMLParser):
    """Each table of a page as rows of cell texts, its heading row first."""

    def __init__(self):
        super().__init__()
        self.tables = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("th", "td"):
            self.tables[-1][-1].append("")
            self._in_cell = True

    def handle_endtag(self, tag):
        self._in_cell = self._in_cell and tag not in ("th", "td")

    def handle_data(self, data):
        if self._in_cell:
            self.tables[-1][-1][-1] += data


def _tables(page):
    parser = _Tables()
    parser.feed(page)
    return {
        tuple(head): [dict(zip(head, row, strict=True)) for row in rows]
        for head, *rows in parser.tables
    }


def test_report_writes_ranks_counts_and_grades_as_integers():
    tables = _tables(comparison_report(_comparison(), details=_details(), top=5))
    # The rank diff of q1 (k=1): d1 relevant, rank 1 in A, 2 in B; d2 unjudged, 2 then 1.
    diff = next(rows for head, rows in tables.items() if "rank A" in head)
    assert [(r["doc id"], r["relevance"], r["rank A"], r["rank B"]) for r in diff] == [
        ("d2", "–", "2", "1"),
        ("d1", "1", "1", "2"),
    ]
    hurt = next(rows for head, rows in tables.items() if "judgment gap" in head)
    q1 = next(r for r in hurt if r["query id"] == "q1")
    assert (q1["A"], q1["B"], q1["B − A"]) == ("0.900", "0.100", "-0.800")
    assert (q1["images"], q1["query chars"], q1["first relevant rank A"]) == ("2", "900", "1")
    deltas = next(rows for head, rows in tables.items() if "wins" in head)
    assert [(r["queries"], r["wins"], r["ties"], r["losses"]) for r in deltas] == [
        ("4", "1", "1", "2"),
        ("4", "1", "1", "2"),
    ]


@pytest.mark.parametrize(("qrels", "flag"), [({"d1": 1}, "no"), ({"d1": 1, "n9": 0}, "yes")])
def test_report_flags_a_gap_only_where_the_judgments_name_a_non_relevant_item(qrels, flag):
    # q1 lost d1's first place to the unjudged d2; n9, judged non-relevant, is in no top k.
    diff = rank_diff(qrels, {"d1": 2.0, "d2": 1.0}, {"d2": 2.0, "d1": 1.0}, k=1)
    details = {("biology", "q1"): QueryDetail(rank_diff=diff)}
    tables = _tables(comparison_report(_comparison(), details=details, top=5))
    hurt = next(rows for head, rows in tables.items() if "judgment gap" in head)
    assert next(r for r in hurt if r["query id"] == "q1")["judgment gap"] == flag


def test_report_figures_look_the_same_inside_the_dashboard(monkeypatch):
    # The dashboard's Export tab builds the report in a process where Streamlit's theme is
    # Plotly's default: that theme fits no margin to the labels ("tu" for "askubuntu").
    pio = pytest.importorskip("plotly.io")
    theme = pytest.importorskip("streamlit.elements.lib.streamlit_plotly_theme")
    monkeypatch.setattr(pio.templates, "default", "plotly")  # as in `mmbright compare`
    alone = comparison_report(_comparison(), details=_details())
    theme.configure_streamlit_plotly_theme()
    assert pio.templates.default == "streamlit"
    assert comparison_report(_comparison(), details=_details()) == alone


def test_report_without_losses():
    rows = [(r, 1, "a", "q", 0.5, 0, 0, 10, 1, 1, 1.0, True) for r in ("x", "y")]
    comparison = compare_runs(results_frame(rows), "x", "y", n_resamples=10)
    page = comparison_report(comparison)
    assert "No query lost" in page


@pytest.mark.browser
def test_report_renders_in_chromium(tmp_path):
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not shutil.which(chromium):
        pytest.skip("chromium is not installed")
    path = tmp_path / "report.html"
    path.write_text(comparison_report(_comparison(), details=_details()), encoding="utf-8")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--virtual-time-budget=10000",
            "--dump-dom",
            path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    # Plotly draws each figure as <svg class="main-svg"> elements inside the figure's div.
    for number in range(1, 6):
        start = dom.index(f'id="figure-{number}"')
        end = dom.find('id="figure-', start + 1)
        assert '<svg class="main-svg"' in dom[start : end if end > 0 else len(dom)]
    assert dom.count('<img src="data:image/png;base64,') == 2


def test_report_rank_tables_show_task4_pairs_as_the_pages_do():
    pair = "biology/p1.txt|||biology/biology_p1_0001/image_1.png"
    text_only = "biology/p1.txt|||__NO_IMAGE__"
    diff = rank_diff({pair: 1}, {pair: 2.0, text_only: 1.0}, {text_only: 2.0, pair: 1.0}, k=1)
    details = {("biology", "q1"): QueryDetail(rank_diff=diff)}
    page = comparison_report(_comparison(), details=details, top=5)
    rows = next(rows for head, rows in _tables(page).items() if "rank A" in head)
    assert {r["document"] for r in rows} == {
        "biology/p1.txt + image_1.png",
        "biology/p1.txt (text only)",
    }
    # No raw pair id beside them: a file format's, and too wide for a 1000 px page.
    assert "doc id" not in rows[0] and "|||" not in page and "__NO_IMAGE__" not in page
