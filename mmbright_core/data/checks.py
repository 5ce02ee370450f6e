"""No silent zeros: what building a task refuses in the data, and what it warns about.

A corpus with no row, or with a doc id twice, cannot be ranked honestly (which of two equal
ids did a run mean?), so it is refused with the file and the ids. What leaves a score
standing but lower than it should be is said with counts: null query texts or passages
(read as empty text, as the official loader reads them), and a corpus whose images all
fail to decode (Task 3 then has nothing to rank; Task 4, whose pairs would all be text-only,
refuses it, as the official runner does). Queries none of which has a judgment
fail already, at scoring ("no query can be evaluated"). The warnings travel with the task's
data (``ProtocolReport.warnings``) into the run's ``metrics.json``, the command line and
the dashboard.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from mmbright_core.errors import InputError, show

_SHOWN = 3  # repeated ids quoted in a message


def data_file(config: str, domain: str) -> str:
    """The file a config's rows of one domain come from, as messages name it."""
    return f"{config}/{domain}.parquet"


def check_corpus_ids(ids: Sequence[str], config: str, domain: str, what: str) -> None:
    """Refuse a corpus with no row, or with an id that repeats.

    Args:
        ids: The corpus ids, in file order (passage ids, or image paths).
        config: The config they come from (``documents``, ``document_images``).
        domain: The domain.
        what: What an id names, for the message (``passage``, ``image``).

    Raises:
        InputError: The corpus is empty, or an id repeats (the message quotes the first few).
    """
    source = data_file(config, domain)
    if not ids:
        raise InputError(
            "the corpus is empty: nothing could be ranked",
            source=source,
            expected=f"at least one {what}",
            found="no rows",
            hint="Re-download the file or rebuild the folder",
        )
    counts = Counter(ids)
    repeated = [doc_id for doc_id, n in counts.items() if n > 1]
    if repeated:
        quoted = ", ".join(f"{show(d)} ({counts[d]} times)" for d in repeated[:_SHOWN])
        more = f" and {len(repeated) - _SHOWN:,} more" if len(repeated) > _SHOWN else ""
        raise InputError(
            f"{len(repeated):,} {what} id(s) repeat",
            source=source,
            expected=f"each {what} id once (a run names a document by its id)",
            found=quoted + more,
            hint="Remove the repeated rows, or give each a distinct id",
        )


def null_text_warning(nulls: int, total: int, what: str, config: str, domain: str) -> str | None:
    """Say how many of ``total`` texts were null (read as empty text), or None if none."""
    if not nulls:
        return None
    return (
        f"{data_file(config, domain)}: {nulls:,} of {total:,} {what} have no text (null); "
        "they are read as empty text"
    )


def undecodable_warning(problems: Mapping[str, str], kept: int, domain: str) -> str | None:
    """Say that every Task 3 corpus image failed to decode, or None if one decoded (or none)."""
    if kept or not problems:
        return None
    path, reason = next(iter(problems.items()))
    return (
        f"{data_file('document_images', domain)}: all {len(problems):,} corpus images fail to "
        f"decode (the first, {show(path)}: {reason}); the corpus is empty: every ranking is "
        "empty and every score 0"
    )


def check_pair_images(problems: Mapping[str, str], kept: int, domain: str) -> None:
    """Refuse Task 4 on a domain none of whose document images decodes.

    As the official runner does (mm-bright/MM-BRIGHT ``src/eval_runner.py``,
    ``EvaluationRunner._evaluate_domain``: an empty ``corpus_images_map`` raises "No document
    images loaded ... Task 4 cannot be evaluated without them"): every pair would be
    text-only, and the run would report plausible numbers for another task.

    Raises:
        InputError: No image of the domain decodes (or it has none).
    """
    if kept:
        return
    found = "no rows"
    if problems:
        path, reason = next(iter(problems.items()))
        found = f"all {len(problems):,} fail to decode (the first, {show(path)}: {reason})"
    raise InputError(
        "no document image decodes: Task 4 ranks (passage, image) pairs and cannot be "
        "evaluated without images",
        source=data_file("document_images", domain),
        expected="at least one decodable document image",
        found=found,
        hint="Re-download the file or rebuild the folder; tasks 1 and 2 need no document images",
    )
