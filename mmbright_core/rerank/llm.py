"""``llm:MODEL``: an LLM behind an OpenAI-compatible chat endpoint as a reranker.

Three modes (docs/commands.md, "Rerankers"):

- ``pointwise``: one request per candidate asks for a relevance grade 0-3; the grades are
  the scores (ties keep the first-stage order). Candidates are asked ``concurrency`` at a
  time.
- ``listwise``: RankGPT's sliding window. The last ``window`` candidates are ranked in one
  request (``[2] > [1] > [3]``), then the window moves ``step`` places towards the top,
  and again, until it covers the first candidate; each window's winners travel upwards.
- ``bright``: BRIGHT's listwise reranker as xlang-ai/BRIGHT ``rerank.py`` runs it on its
  OpenAI path (``OpenAIModel.rerank`` and the ``__main__`` loop): every candidate (the
  first stage's top ``--depth``, its ``--input_k``) in one request after the system message
  ``You are a helpful assistant``, the query's newlines made two spaces each, each document
  whole with every run of newlines made one space, numbered ``[1].`` on; sampled at
  temperature 0.8 and top_p 0.8 with at most 2048 new tokens; the answer's last fenced
  ``json`` block read as a list of those numbers, the first listed scoring ``topk`` (its
  ``--k``), the next ``topk - 1``, and so on (a number listed twice keeps its later
  score). The listed candidates lead, by that score; the others keep their first-stage
  order beneath (rerank.py drops them from its run, so only cut-offs beyond the listed ids
  can differ). Documents are read as text, so tasks 1, 2 and 4 (a pair by its passage); on
  tasks 2 and 4 the query's images follow the text.

In ``pointwise`` and ``listwise`` mode, on tasks 2-4 the query's images go with every
request, and on tasks 3-4 each candidate's image goes beside its number, as PNG data URLs
(:mod:`mmbright_core.llm.images`). Every answer is cached by its whole request
(:mod:`mmbright_core.llm.cache`). An answer that is unusable (no text, an answer that is not
one grade 0-3 alone, a window answer that is not a permutation of its numbers, a ``bright``
answer with no fenced ``json`` list naming one of its numbers) makes the query keep its
first-stage order, with the problem recorded, and is not cached: never a silent reordering.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from functools import partial
from typing import Any

from mmbright_core.data.images import ImageDecodeError, decode_image
from mmbright_core.endpoints.client import whole_option
from mmbright_core.errors import InputError, show
from mmbright_core.llm.chat import ChatClient, Message
from mmbright_core.llm.images import DEFAULT_SIDE, data_url, user_message
from mmbright_core.llm.options import chat_client, option_number
from mmbright_core.llm.prompts import BRIGHT_PARAMETERS, BRIGHT_SYSTEM
from mmbright_core.rerank.base import Candidate, ImageStore, Reranked, RerankQuery
from mmbright_core.task_table import TASK_TABLE, task_info

MODES = ("pointwise", "listwise", "bright")

POINTWISE = """Here is a question posted on the {domain} StackExchange site{images}.

Question: {query}

Here is a document{doc_images}.

Document: {document}

How much does the document help answer the question? Answer with one number only: 0 (not \
at all), 1 (on the topic), 2 (relevant: it holds part of an answer) or 3 (it answers the \
question)."""

LISTWISE = """Here is a question posted on the {domain} StackExchange site{images}, and {n} \
documents, each marked by a number in brackets.

Question: {query}
"""

LISTWISE_END = """
Question: {query}

Rank the {n} documents by how much they help answer the question, most helpful first. \
Answer only with the ranking of all {n} numbers, like [2] > [1] > [3], and no other text."""

# xlang-ai/BRIGHT rerank.py, OpenAIModel.rerank: ``prompt = (f'The following passages are
# related to query: {cur_query}\n\n' f'{doc_string}' ...)``, each passage of ``doc_string``
# written by ``"[{}]. {}\n\n".format(...)``.
BRIGHT_HEAD = "The following passages are related to query: {query}\n\n"
BRIGHT_PASSAGE = "[{number}]. {text}\n\n"
BRIGHT_END = (
    "First identify the essential problem in the query.\n"
    "Think step by step to reason about why each document is relevant or irrelevant.\n"
    "Rank these passages based on their relevance to the query.\n"
    "Please output the ranking result of passages as a list, where the first element is the "
    "id of the most relevant passage, the second element is the id of the second most "
    "element, etc.\n"
    "Please strictly follow the format to output a list of {topk} ids corresponding to the "
    "most relevant {topk} passages, sorted from the most to least relevant passage. First "
    "think step by step and write the reasoning process, then output the ranking results as "
    "a list of ids in a json format."
)
#: The tasks whose documents ``bright`` reads: those with a text.
BRIGHT_TASKS = frozenset(t for t, info in TASK_TABLE.items() if info.corpus_text)
#: ``rerank.py``'s ``parse_json``: from the first fence opening ``json`` to the last fence
#: (greedy), of which the last match is read.
_JSON_BLOCK = re.compile(r"(?:```json\s*)(.+)(?:```)", re.DOTALL)
_NEWLINES = re.compile("\n+")
#: A grade as the prompt asks for it: one number 0-3 alone (a full stop after it allowed),
#: not any digit of the answer ("alert(1)" holds a 1 and is no grade).
_GRADE = re.compile(r"\s*([0-3])\.?\s*")
_NUMBER = re.compile(r"\[(\d+)\]")
#: The most digits a window's number is read with: more name no candidate of any window
#: (and ``int`` refuses strings of over 4,300 digits).
_NUMBER_DIGITS = 9


class LlmReranker:
    """Reranks with a chat model: pointwise, by sliding windows, or as BRIGHT does.

    Args:
        client: The chat client (model, endpoint, parameters, limits, cache).
        mode: ``pointwise``, ``listwise`` or ``bright``.
        window: Candidates ranked in one listwise request.
        step: Places a listwise window moves towards the top each time.
        topk: How many ids a ``bright`` answer is asked for, and the score of the first.
        max_chars: Each document's text is cut to this many characters (None: 2000, and in
            ``bright`` mode no cut, as rerank.py sends whole documents).
        query_images: ``all`` or ``first`` of the query's images that decode (tasks 2-4).
        side: Images' longest side in pixels.

    Attributes:
        tasks: The tasks it reranks (``bright``: those whose documents have a text).
    """

    def __init__(
        self,
        client: ChatClient,
        *,
        mode: str = "listwise",
        window: int = 20,
        step: int = 10,
        topk: int = 10,
        max_chars: int | None = None,
        query_images: str = "all",
        side: int = DEFAULT_SIDE,
    ) -> None:
        _check(mode in MODES, "mode", " or ".join(MODES), mode)
        _check(query_images in ("all", "first"), "query_images", "all or first", query_images)
        _check(window >= 2, "window", "an integer of at least 2", window)
        _check(1 <= step < window, "step", f"an integer from 1 to {window - 1}", step)
        _check(topk >= 1, "topk", "a positive integer", topk)
        _check(max_chars is None or max_chars >= 1, "max_chars", "a positive integer", max_chars)
        if max_chars is None and mode != "bright":
            max_chars = 2000
        self.client, self.mode, self.window, self.step = client, mode, window, step
        self.topk, self.max_chars, self.query_images, self.side = (
            topk,
            max_chars,
            query_images,
            side,
        )
        self.name = f"llm:{client.model}"
        self.tasks = BRIGHT_TASKS if mode == "bright" else frozenset(TASK_TABLE)

    def label(self) -> str:
        """Return ``llm-<model>-<mode>``."""
        return f"llm-{self.client.model}-{self.mode}".replace("/", "-")

    def settings(self) -> dict[str, Any]:
        """Return the model, endpoint, mode and everything that shapes a request."""
        prompts = {
            "pointwise": POINTWISE,
            "listwise": LISTWISE + LISTWISE_END,
            "bright": BRIGHT_HEAD + BRIGHT_PASSAGE + BRIGHT_END,
        }[self.mode]
        own: dict[str, Any] = {}
        if self.mode == "listwise":
            own = {"window": self.window, "step": self.step}
        elif self.mode == "bright":
            own = {"topk": self.topk, "system": BRIGHT_SYSTEM}
        return {
            "model": self.client.model,
            "endpoint": self.client.endpoint,
            "mode": self.mode,
            **own,
            "max_chars": self.max_chars,
            "query_images": self.query_images,
            "image_side": self.side,
            "parameters": dict(self.client.parameters),
            "prompt_sha256": hashlib.sha256(prompts.encode()).hexdigest(),
        }

    def rerank(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        """Order ``candidates`` for ``query`` (see the module); fewer than two are not asked."""
        if len(candidates) < 2:
            return Reranked.from_order(range(len(candidates)))
        if self.mode == "pointwise":
            return self._pointwise(query, candidates, images)
        if self.mode == "bright":
            return self._bright(query, candidates, images)
        return self._listwise(query, candidates, images)

    def _pointwise(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        shown = self._query_urls(query, images)
        requests = [self._grade_request(query, shown, c, images) for c in candidates]
        replies = self.client.complete_all(requests, check=_grade_problem)
        grades: list[float] = []
        for candidate, reply in zip(candidates, replies, strict=True):
            if reply.text is None:
                return Reranked.failed(f"{candidate.doc_id}: {reply.problem}")
            grade = parse_grade(reply.text)
            assert not isinstance(grade, str)  # the check let only grades through
            grades.append(float(grade))
        return Reranked.from_scores(grades)

    def _bright(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        size = len(candidates)
        text = bright_prompt(query.text, [self._text(c) for c in candidates], self.topk)
        system = {"role": "system", "content": BRIGHT_SYSTEM}
        request = [system, user_message(text, self._query_urls(query, images))]

        def problem(answer: str) -> str | None:
            found = bright_ranking(answer, size)
            return found if isinstance(found, str) else None

        reply = self.client.complete(request, check=problem)
        if reply.text is None:
            return Reranked.failed(f"all {size} candidates: {reply.problem}")
        listed = bright_ranking(reply.text, size)
        assert not isinstance(listed, str)  # the check let only rankings through
        # rerank.py ``__main__``: ``for rank_id, r in enumerate(new_rank): cur_score[r] =
        # args.k - rank_id``, a dict, so an id listed twice keeps its later score.
        scores: dict[int, float] = {}
        for rank, index in enumerate(listed):
            scores[index] = float(self.topk - rank)
        return Reranked.from_ranked(scores)

    def _listwise(
        self, query: RerankQuery, candidates: Sequence[Candidate], images: ImageStore | None
    ) -> Reranked:
        shown = self._query_urls(query, images)
        order = list(range(len(candidates)))
        for start, end in windows(len(candidates), self.window, self.step):
            placed = order[start:end]
            request = self._window_request(query, shown, [candidates[i] for i in placed], images)
            size = len(placed)
            reply = self.client.complete(request, check=partial(_permutation_problem, size=size))
            if reply.text is None:
                return Reranked.failed(f"window {start + 1}-{end}: {reply.problem}")
            permutation = parse_permutation(reply.text, size)
            assert not isinstance(permutation, str)  # the check let only permutations through
            order[start:end] = [placed[i] for i in permutation]
        return Reranked.from_order(order)

    def _grade_request(
        self,
        query: RerankQuery,
        shown: list[str],
        candidate: Candidate,
        images: ImageStore | None,
    ) -> list[Message]:
        doc_urls = self._doc_urls(query.domain, candidate, images)
        text = POINTWISE.format(
            domain=query.domain,
            images=_with_images(shown),
            query=query.text,
            doc_images=" and its image" if doc_urls else "",
            document=self._text(candidate),
        )
        parts = [_text_part(text), *(_image_part(u) for u in [*shown, *doc_urls])]
        return [{"role": "user", "content": parts if len(parts) > 1 else text}]

    def _window_request(
        self,
        query: RerankQuery,
        shown: list[str],
        placed: Sequence[Candidate],
        images: ImageStore | None,
    ) -> list[Message]:
        n = len(placed)
        head = LISTWISE.format(
            domain=query.domain, images=_with_images(shown), n=n, query=query.text
        )
        parts: list[dict[str, Any]] = [_text_part(head), *(_image_part(u) for u in shown)]
        for number, candidate in enumerate(placed, start=1):
            parts.append(_text_part(f"\n[{number}] {self._text(candidate)}"))
            parts += [_image_part(u) for u in self._doc_urls(query.domain, candidate, images)]
        parts.append(_text_part(LISTWISE_END.format(query=query.text, n=n)))
        return [{"role": "user", "content": parts}]

    def _text(self, candidate: Candidate) -> str:
        if candidate.text is None:
            return "(an image, shown after this line)" if candidate.image_paths else "(empty)"
        return candidate.text[: self.max_chars]  # None: whole

    def _query_urls(self, query: RerankQuery, images: ImageStore | None) -> list[str]:
        if task_info(query.task).text_only or images is None:
            return []
        urls = []
        for path in query.image_paths:
            url = _url(images.query_image_bytes(query.domain, path), path, self.side)
            if url is not None:
                urls.append(url)
                if self.query_images == "first":
                    break
        return urls

    def _doc_urls(self, domain: str, candidate: Candidate, images: ImageStore | None) -> list[str]:
        if images is None:
            return []
        found = (
            _url(images.document_image_bytes(domain, p), p, self.side)
            for p in candidate.image_paths
        )
        return [url for url in found if url is not None]


def windows(size: int, window: int, step: int) -> list[tuple[int, int]]:
    """RankGPT's windows over ``size`` candidates, bottom first: ``(start, end)`` slices."""
    out = []
    end = size
    while True:
        start = max(0, end - window)
        out.append((start, end))
        if start == 0:
            return out
        end -= step


def parse_permutation(text: str, size: int) -> tuple[int, ...] | str:
    """Return the 0-based order a ``[2] > [1] > [3]`` answer gives, or what is wrong with it."""
    digits = (n.lstrip("0") or "0" for n in _NUMBER.findall(text))
    numbers = [int(n) if len(n) <= _NUMBER_DIGITS else 0 for n in digits]  # 0: no candidate
    if sorted(numbers) != list(range(1, size + 1)):
        return (
            f"the answer {show(text)} is not a permutation of [1]..[{size}]"
            f" (found {len(numbers)} numbers, {len(set(numbers))} distinct)"
        )
    return tuple(n - 1 for n in numbers)


def bright_prompt(query: str, documents: Sequence[str], topk: int) -> str:
    r"""The user message of a ``bright`` request, as rerank.py's ``OpenAIModel.rerank`` writes it.

    The query's newlines become two spaces each (``query.replace('\n','  ')``), and every
    run of newlines of a document one space (``re.sub('\n+', ' ', doc[1])``).
    """
    passages = "".join(
        BRIGHT_PASSAGE.format(number=number, text=_NEWLINES.sub(" ", text))
        for number, text in enumerate(documents, start=1)
    )
    head = BRIGHT_HEAD.format(query=query.replace("\n", "  "))
    return head + passages + BRIGHT_END.format(topk=topk)


def bright_ranking(text: str, size: int) -> list[int] | str:
    """The 0-based candidates a ``bright`` answer lists, in its order, or what is wrong with it.

    As rerank.py's ``parse_json`` and ``OpenAIModel.rerank`` read an answer: the last match
    of a fenced ``json`` block is loaded as JSON and its items kept where they are one of the
    ids ``1..size`` (``[indices_map[r] for r in response if r in indices_map]``: ``2.0``
    and ``true`` name ids 2 and 1, a string names none). Where rerank.py falls back to the
    first-stage order (no such block, JSON that does not load) and where it would fail or
    rank nothing (JSON that is no list of ids, one that names no id), this says why.
    """
    blocks = _JSON_BLOCK.findall(text)
    if not blocks:
        return f"the answer {show(text)} holds no ```json block"
    try:
        response = json.loads(blocks[-1].strip())
    except ValueError:
        return f"the answer's ```json block {show(blocks[-1].strip())} is not JSON"
    indices = {number: number - 1 for number in range(1, size + 1)}  # rerank.py's indices_map
    try:
        listed = [indices[r] for r in response if r in indices]
    except TypeError:  # not iterable, or an item that is a list or an object
        listed = []
    if not listed:
        return f"the answer's ```json block {show(blocks[-1].strip())} lists none of ids 1..{size}"
    return listed


def parse_grade(text: str) -> int | str:
    """Return the grade a pointwise answer gives, or what is wrong with it.

    The prompt asks for one number only: the answer must be 0, 1, 2 or 3 alone (blanks
    around it and a full stop after it allowed); any other text is not read for a digit.
    """
    found = _GRADE.fullmatch(text)
    if found is None:
        return f"the answer {show(text)} is no grade 0-3 (the prompt asks for one number only)"
    return int(found.group(1))


def _grade_problem(text: str) -> str | None:
    found = parse_grade(text)
    return found if isinstance(found, str) else None


def _permutation_problem(text: str, size: int) -> str | None:
    found = parse_permutation(text, size)
    return found if isinstance(found, str) else None


def _url(data: bytes | None, path: str, side: int) -> str | None:
    try:
        return data_url(decode_image(data, path), side)
    except ImageDecodeError:
        return None  # as the official loader drops it


def _with_images(urls: Sequence[str]) -> str:
    return "" if not urls else f", with its image{'s' if len(urls) > 1 else ''} (shown below)"


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image_part(url: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": url}}


def _check(ok: bool, name: str, expected: str, found: object) -> None:
    if not ok:
        raise InputError(f"bad llm reranker option {name}", expected=expected, found=repr(found))


#: The reranker's own numeric options, with their types; ``mode`` and ``query_images`` are
#: taken as given, and every other option configures the chat client.
_NUMBERS = {"window": int, "step": int, "topk": int, "max_chars": int, "image_side": int}


def llm_reranker(
    model: str, endpoint: str | None = None, cache_dir: str | None = None, **options: Any
) -> LlmReranker:
    """Build ``llm:MODEL`` (the registry's factory).

    ``options``: the reranker's own (``mode``, ``window``, ``step``, ``topk``,
    ``max_chars``, ``query_images``, ``image_side``, as :class:`LlmReranker` takes them),
    sampling parameters (``temperature``, ``top_p``, ``max_tokens``, ``seed``, ``stop``;
    in ``bright`` mode over rerank.py's own: temperature 0.8, top_p 0.8, 2048), limits
    (``concurrency``, ``timeout``, ``retries``, ``backoff``, ``max_requests``,
    ``token_budget``) and ``api_key_env``, as ``mmbright rewrite`` takes.

    Raises:
        InputError: An option no part takes, or a number that is not one.
    """
    own: dict[str, Any] = {n: options.pop(n) for n in ("mode", "query_images") if n in options}
    for name, kind in _NUMBERS.items():
        if name in options:
            own[name] = option_number(name, options.pop(name), kind)
    side = whole_option("image_side", own.pop("image_side", DEFAULT_SIDE), 1)
    defaults = BRIGHT_PARAMETERS if own.get("mode") == "bright" else None
    client = chat_client(model, endpoint, options, cache_dir, defaults)
    return LlmReranker(client, side=side, **own)
