"""Plugins: ``--retriever MODULE:FACTORY`` and the documented example of docs/plugins.md.

The example is taken from the Markdown itself, written beside the run as a module, run
through the command line on the demo (tasks 1 and 2), scored by ``mmbright eval``, and its
scores checked against the bag-of-words cosine computed here.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from locations import ROOT
from raising_plugin import ESCAPED

from mmbright_core.cli import main
from mmbright_core.data.sources import open_source
from mmbright_core.errors import InputError, is_hidden
from mmbright_core.io.official import read_outputs
from mmbright_core.retrieval import get_retriever

DOC = ROOT / "docs" / "plugins.md"
MODULES = ("hashed_bow", "plugin_cases", "exiting_plugins", "exits_on_import")


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The current folder, holding the example module of docs/plugins.md."""
    block = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None
    (tmp_path / "hashed_bow.py").write_text(block.group(1), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the import appends the folder
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name, None)


def test_the_documented_example_is_about_thirty_lines() -> None:
    block = re.search(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None and 20 <= len(block.group(1).splitlines()) <= 40


def _bag(text: str, dim: int) -> np.ndarray:
    vector = np.zeros(dim)
    for word in re.findall(r"\w+", text.lower()):
        vector[int.from_bytes(hashlib.sha256(word.encode()).digest()[:4], "little") % dim] += 1
    return vector


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norms = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(a @ b) / norms if norms else 0.0


@pytest.mark.parametrize("task", [1, 2])
def test_the_documented_example_runs_records_and_scores(plugin_dir: Path, task: int) -> None:
    out = plugin_dir / "runs"
    args = ["run", "--source", "demo", "--task", str(task), "--retriever", "hashed_bow:make"]
    assert main([*args, "--option", "dim=64", "--out", str(out), "--domain", "biology"]) == 0
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    stored = json.loads((folder / "config.json").read_text())["config"]
    assert stored["retriever"] == "hashed_bow:make" and stored["model"] == "hashed-bow"
    assert stored["options"]["dim"] == 64 and stored["options"]["plugin_options"] == {"dim": 64}
    assert stored["fusion"] == "text" and stored["image_policy"] is None
    eval_args = ["eval", "--source", "demo", "--task", str(task), "--run", str(folder)]
    assert main([*eval_args, "--format", "json"]) == 0
    data = open_source("demo").task(task, "biology")
    run = read_outputs(folder).runs["biology"]
    bags = {d.doc_id: _bag(d.text, 64) for d in data.corpus}
    for query in data.queries:
        excluded = data.excluded.get(query.query_id, frozenset())
        expected = {
            d: 100 * _cosine(_bag(query.text, 64), bag)
            for d, bag in bags.items()
            if d not in excluded
        }
        got = run[query.query_id]
        assert len(got) == len(expected)  # the demo's corpora hold fewer than 1,000
        assert got == pytest.approx(expected, abs=1e-4)


def test_a_factory_returning_a_retriever_answers_to_its_spec(plugin_dir: Path) -> None:
    (plugin_dir / "plugin_cases.py").write_text(
        "from mmbright_core.retrieval.backends.random_rank import RandomRetriever\n"
        "def random(seed=0):\n    return RandomRetriever(seed=seed)\n"
        "def nothing():\n    return 42\n"
        "not_callable = 3\n",
        encoding="utf-8",
    )
    retriever = get_retriever("plugin_cases:random", seed=5)
    assert retriever.name == "plugin_cases:random"
    assert retriever.settings() == {"seed": 5, "plugin_options": {"seed": 5}}
    with pytest.raises(InputError, match="returned int: 42"):
        get_retriever("plugin_cases:nothing")
    with pytest.raises(InputError, match="has no callable 'missing'"):
        get_retriever("plugin_cases:missing")
    with pytest.raises(InputError, match="has no callable 'not_callable'"):
        get_retriever("plugin_cases:not_callable")
    with pytest.raises(InputError, match=r"does not take option.*colour"):
        get_retriever("plugin_cases:random", colour="red")


def test_errors_are_one_line_on_the_command_line(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["run", "--source", "demo", "--task", "1", "--out", str(plugin_dir / "o")]
    assert main([*args, "--retriever", "no_such_module:make"]) == 2
    err = capsys.readouterr().err
    assert "cannot import plugin module 'no_such_module'" in err
    assert "Traceback" not in err
    assert main([*args, "--retriever", "hashed_bow:"]) == 2
    assert "malformed plugin spec" in capsys.readouterr().err


EXITING = """
import sys

from hashed_bow import HashedBow


class Quitting(HashedBow):
    def encode_texts(self, texts, role):
        sys.exit()


def quits_making():
    exit(0)


def quits_encoding():
    return Quitting(16)
"""


@pytest.mark.parametrize(
    ("spec", "doing", "code"),
    [
        ("exits_on_import:make", "being imported", "SystemExit('no GPU here')"),
        ("exiting_plugins:quits_making", "making its retriever", "SystemExit(0)"),
        ("exiting_plugins:quits_encoding", "ranking 'gis'", "SystemExit(None)"),
    ],
)
def test_a_plugin_ending_the_program_is_one_line_with_status_2(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], spec: str, doing: str, code: str
) -> None:
    (plugin_dir / "exiting_plugins.py").write_text(EXITING, encoding="utf-8")
    (plugin_dir / "exits_on_import.py").write_text("raise SystemExit('no GPU here')\n")
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis", "--retriever", spec]
    assert main([*args, "--out", str(plugin_dir / "o")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"mmbright run: error: the plugin {spec!r} tried to end the program while {doing}; "
        f"expected an answer, or an exception saying what is wrong; found {code}. A plugin "
        "must not call sys.exit() or exit(): raise an exception instead (docs/plugins.md).\n"
    )
    assert not list((plugin_dir / "o").rglob("*.json"))


APART = """
import numpy as np

from hashed_bow import HashedBow


class Apart(HashedBow):
    modalities = frozenset({"text", "image"})
    fusion = "raw-mean"

    def encode_images(self, images, role):
        return np.ones((len(images), self.dim // 2), dtype=np.float32)


def make():
    return Apart(16)
"""


@pytest.mark.parametrize("task", [2, 4])
def test_text_and_image_vectors_of_two_lengths_are_one_line_naming_both(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], task: int
) -> None:
    # Task 2 fuses each query's text and image, Task 4 each passage's: both refuse to add
    # vectors of 16 and 8 numbers (Task 4's would otherwise be read as rows of 16).
    (plugin_dir / "apart.py").write_text(APART, encoding="utf-8")
    args = ["run", "--source", "demo", "--task", str(task), "--domain", "gis"]
    assert main([*args, "--retriever", "apart:make", "--out", str(plugin_dir / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "mmbright run: error: fusion 'raw-mean' adds each text vector to an image vector, "
        "and the model's text and image vectors differ in length; expected text and image "
        "vectors of one length; found text vectors of 16 numbers, image vectors of 8. "
    ), err
    assert "Traceback" not in err and err.count("\n") == 1
    assert not list((plugin_dir / "o").rglob("*.json"))
    sys.modules.pop("apart", None)


HOSTILE = """
import numpy as np

from hashed_bow import HashedBow


class Answering(HashedBow):
    def __init__(self, answer):
        super().__init__(16)
        self.answer = answer

    def encode_texts(self, texts, role):
        return self.answer(len(texts), self.dim)


def tiny():
    return Answering(lambda n, d: np.full((n, d), 1e-50))


def huge():
    return Answering(lambda n, d: np.full((n, d), 1e38))


class BlankQueries(HashedBow):
    # Zeros as given for every query: the model's own answer (as an official recipe's zero
    # image is), unlike 1e-50, which only float32 makes 0.
    def encode_texts(self, texts, role):
        vectors = np.asarray(super().encode_texts(texts, role))
        return np.zeros_like(vectors) if role == "query" else vectors


def blank_queries():
    return BlankQueries(16)


def words():
    return Answering(lambda n, d: [["0.5"] * d] * n)


def ragged():
    return Answering(lambda n, d: [[1.0] * (d - i % 2) for i in range(n)])


def digits():
    return Answering(lambda n, d: [[10**400] + [1.0] * (d - 1)] * n)


class Ranking:
    name, tasks = "ranking", frozenset({1, 2, 3, 4})

    def __init__(self, answer):
        self.answer = answer

    def label(self):
        return "ranking"

    def settings(self):
        return {}

    def retrieve(self, data, source, k):
        return self.answer


def none(cache_dir=None):
    return Ranking(None)


def listed(cache_dir=None):
    return Ranking([["a1", "doc", 1.0]])
"""


@pytest.mark.parametrize(
    ("factory", "said"),
    [
        ("tiny", "returned a vector that is all zeros (as float32) for the text "),
        ("huge", "returned a vector that has a length that overflows float32 (numbers near 1e38) "),
        ("words", "returned vectors that are not rows of numbers; "),
        ("ragged", "returned vectors that are not rows of numbers; "),
        ("digits", "returned vectors that are not rows of numbers; "),
        ("none", "answered None from retrieve; "),
        ("listed", "answered a list from retrieve; "),
    ],
)
def test_a_plugins_unusable_vectors_or_ranking_are_one_line_and_nothing_is_kept(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str], factory: str, said: str
) -> None:
    # Vectors 1e-50 (0 in float32) or 1e38 (the length overflows) would be scored as all
    # zeros with exit status 0; texts, rows of two lengths, 401 digits and a ranking that is
    # no mapping ended in a traceback.
    (plugin_dir / "hostile_plugin.py").write_text(HOSTILE, encoding="utf-8")
    spec = f"hostile_plugin:{factory}"
    cache = plugin_dir / "cache"
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis", "--retriever", spec]
    assert main([*args, "--out", str(plugin_dir / "o"), "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert f"'{spec}'" in err and said in err, err
    assert not list((plugin_dir / "o").rglob("*.json"))
    assert not list(cache.rglob("*.npy"))
    sys.modules.pop("hostile_plugin", None)


def test_vectors_that_are_zeros_as_the_plugin_gave_them_are_its_answer_and_scored(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only what float32 makes 0 (or overflows) is refused: a row of zeros as given is the
    # model's answer, as the official recipes' zero image for a missing one is.
    (plugin_dir / "hostile_plugin.py").write_text(HOSTILE, encoding="utf-8")
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis"]
    args += ["--retriever", "hostile_plugin:blank_queries", "--out", str(plugin_dir / "o")]
    assert main([*args, "--cache-dir", str(plugin_dir / "cache")]) == 0, capsys.readouterr().err
    (scores,) = (plugin_dir / "o").rglob("gis/scores.json")
    ranked = json.loads(scores.read_text(encoding="utf-8"))
    assert ranked and {s for docs in ranked.values() for s in docs.values()} == {0.0}
    sys.modules.pop("hostile_plugin", None)


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A distribution installed on sys.path that registers ``toy-plugin``."""
    info = tmp_path / "site" / "toyplug-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toyplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[mmbright.retrievers]\ntoy-plugin = toy_embedders:make\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return "toy-plugin"


def test_an_installed_entry_point_is_a_retriever_name(installed: str, tmp_path: Path) -> None:
    from mmbright_core.retrieval import available_retrievers
    from mmbright_core.ui.run import running

    assert installed in available_retrievers() and running.installed_plugins() == [installed]
    retriever = get_retriever(installed, fusion="zero-image", cache_dir=str(tmp_path))
    assert retriever.name == installed and retriever.tasks == frozenset({1, 2, 3, 4})
    assert retriever.settings()["fusion"] == "zero-image"


def test_the_run_page_lists_installed_plugins(installed: str, fixture_dir: Path) -> None:
    from apptest import fresh, goto, use_folder

    at = fresh()
    use_folder(at, fixture_dir)
    goto(at, "run")
    assert installed in at.selectbox(key="run_retriever").options
    assert any(f"Installed plugins: {installed}." in c.value for c in at.caption)


def test_a_plugins_traceback_shows_its_control_and_bidi_characters_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["run", "--source", "demo", "--task", "1", "--domain", "gis"]
    assert main([*args, "--out", str(tmp_path / "o"), "--retriever", "raising_plugin:make"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert 'raising_plugin.py", line 17, in retrieve' in err
    assert err.endswith(f"RuntimeError: {ESCAPED}\n")
    assert not any(is_hidden(char) for char in err.replace("\n", ""))
