"""xlang-ai/BRIGHT's ``reason.py`` and ``rerank.py``, transcribed, to hold the recipes to.

Each function follows the named upstream code line by line (its names kept), so a test
compares what the package sends and reads with what BRIGHT's own code sends and reads,
never with the package's own path.
"""

from __future__ import annotations

import json
import re
from typing import Any


def reason_prompt(post: str) -> str:
    """The prompt reason.py's ``__main__`` loop writes for one post (``e["query"]``)."""
    cur_post = post.replace("\n", " ")
    prompt = (f'{cur_post}\n\n'
              f'Instructions:\n'
              f'1. Identify the essential problem.\n'
              f'2. Think step by step to reason and describe what information could be relevant and helpful to address the questions in detail.\n'  # noqa: E501
              f'3. Draft an answer with as many thoughts as you have.\n')  # fmt: skip
    return prompt


def openai_body(model: str, prompt: str) -> dict[str, Any]:
    """The request body the ``OpenAIModel(model)`` of either file sends for ``prompt``.

    reason.py ``OpenAIModel.generate`` and rerank.py ``OpenAIModel.rerank`` alike:
    ``format_chat(prompt, system_message="You are a helpful assistant")``, then
    ``chat.completions.create(model=..., messages=inputs, max_tokens=self.max_tokens,
    temperature=self.temperature, top_p=self.top_p)`` with ``__init__``'s
    ``temperature=0.8, top_p=0.8`` and ``self.max_tokens = 2048``.
    """
    inputs = [
        {"role": "system", "content": "You are a helpful assistant"},
        {"role": "user", "content": prompt},
    ]
    return {
        "model": model,
        "messages": inputs,
        "max_tokens": 2048,
        "temperature": 0.8,
        "top_p": 0.8,
    }


def rerank_prompt(query: str, docs: list[list[str]], topk: int) -> str:
    """rerank.py ``OpenAIModel.rerank``'s prompt; ``docs``: ``[did, documents[did]]``."""
    doc_string = ""
    for doc_idx, doc in enumerate(docs):
        doc_string += "[{}]. {}\n\n".format(doc_idx + 1, re.sub("\n+", " ", doc[1]))
    cur_query = query.replace("\n", "  ")
    prompt = (f'The following passages are related to query: {cur_query}\n\n'
              f'{doc_string}'
              f'First identify the essential problem in the query.\n'
              f'Think step by step to reason about why each document is relevant or irrelevant.\n'
              f'Rank these passages based on their relevance to the query.\n'
              f'Please output the ranking result of passages as a list, where the first element is the id of the most relevant '  # noqa: E501
              f'passage, the second element is the id of the second most element, etc.\n'
              f'Please strictly follow the format to output a list of {topk} ids corresponding to the most relevant {topk} passages, sorted from the most to least relevant passage. First think step by step and write the reasoning process, then output the ranking results as a list of ids in a json format.'  # noqa: E501
              )  # fmt: skip
    return prompt


def rerank_new_rank(text: str, docs: list[list[str]]) -> list[str] | None:
    """What rerank.py ``OpenAIModel.rerank`` returns for an answer (None: it falls back).

    Its ``parse_json`` and ``[indices_map[r] for r in response if r in indices_map]``; a
    ``TypeError`` is raised where rerank.py would stop with it.
    """
    indices_map = {}
    for doc_idx, doc in enumerate(docs):
        indices_map[doc_idx + 1] = doc[0]

    def parse_json(text: str) -> Any:
        matches = re.findall(r"(?:```json\s*)(.+)(?:```)", text, re.DOTALL)
        if len(matches) > 0:
            try:
                return json.loads(matches[-1].strip())
            except ValueError:
                return None
        return None

    response = parse_json(text)
    if response is None:
        return None
    return [indices_map[r] for r in response if r in indices_map]


def rerank_scores(new_rank: list[str] | None, sorted_ids: list[str], k: int) -> dict[str, int]:
    """rerank.py ``__main__``'s ``cur_score`` of one query (``sorted_ids``: the first stage's)."""
    cur_score = {}
    if new_rank is None:
        # use the original ranks if fail
        for rank_id, did in enumerate(sorted_ids):
            cur_score[did] = k - rank_id
    else:
        for rank_id, r in enumerate(new_rank):
            cur_score[r] = k - rank_id
    return cur_score
