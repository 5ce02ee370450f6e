"""The question a retriever's ``explain_scores`` answers: one frozen record, wrappers included.

A retriever of its own (no class of the package behind it) explains its scores from the
:class:`Question` alone; a run on rewritten queries hands it the rewritten text and the
rewrite, and ``ocr-*`` the words it read, appended as the run scored them.
"""

from __future__ import annotations

from typing import Any

from mmbright_core.analysis.attribution import explain
from mmbright_core.data.images import ImageSource
from mmbright_core.io.rewrites import Rewrite
from mmbright_core.retrieval.explanation import DenseAttribution, Question, Unavailable
from mmbright_core.retrieval.runner.rewritten import Rewritten
from mmbright_core.types import Document, Query, TaskData

DATA = TaskData(
    task=1,
    domain="d",
    protocol="paper",
    queries=(Query("q0", "d", "red fox", ()),),
    corpus=(
        Document("d/0.txt", "a red hen"),
        Document("d/1.txt", "the red fox runs"),
        Document("d/2.txt", "a quiet fox den"),
    ),
    qrels={},
    excluded={},
)


class Overlap:
    """Scores a document by the words it shares with the query; keeps what it was asked."""

    name = "overlap"
    tasks = frozenset({1})

    def __init__(self) -> None:
        self.asked: list[Question] = []

    def label(self) -> str:
        return "overlap"

    def settings(self) -> dict[str, Any]:
        return {"model": "overlap"}

    def retrieve(
        self, data: TaskData, source: ImageSource | None, k: int
    ) -> dict[str, dict[str, float]]:
        return {}

    def explain_scores(self, question: Question) -> dict[str, DenseAttribution]:
        self.asked.append(question)
        words = set(question.scored.text.split())
        return {
            doc_id: DenseAttribution(
                doc_id, float(len(words & set(question.data.corpus[p].text.split()))), None
            )
            for doc_id, p in question.positions.items()
        }


def test_a_retriever_of_its_own_explains_from_the_question() -> None:
    retriever = Overlap()
    found = explain(retriever, DATA, None, "q0", ["d/1.txt", "d/9.txt", "d/2.txt"])
    # "red fox" shares 2 words with d/1, 1 with d/2; d/9 is not in the corpus.
    assert [found["d/1.txt"].score, found["d/2.txt"].score] == [2.0, 1.0]  # type: ignore[union-attr]
    assert isinstance(found["d/9.txt"], Unavailable)
    assert retriever.asked == [Question(DATA, None, DATA.queries[0], {"d/1.txt": 1, "d/2.txt": 2})]


def test_a_rewritten_run_hands_its_retriever_the_rewritten_text_and_the_rewrite() -> None:
    inner = Overlap()
    rewrite = Rewrite("d", "q0", "red fox", (), "quiet den", None, 3, 2, "red fox quiet den")
    rewritten = Rewritten(inner, {("d", "q0"): rewrite}, {}, 1, "set.jsonl")
    found = explain(rewritten, DATA, None, "q0", ["d/2.txt"])
    assert found["d/2.txt"].score == 3.0  # type: ignore[union-attr]  # fox, quiet, den
    (asked,) = inner.asked
    assert asked.query.text == "red fox quiet den"
    assert asked.rewrite == ("red fox", "quiet den")
    assert asked.image_words == ()


def test_the_scored_query_has_the_image_words_appended_one_a_line() -> None:
    query = DATA.queries[0]
    asked = Question(DATA, None, query, {}, image_words=("DIAGRAM", "fig 2"))
    assert asked.scored.text == "red fox\nDIAGRAM\nfig 2"
    assert asked.scored.query_id == "q0"
    assert Question(DATA, None, query, {}).scored is query
