"""MTEB task metadata mirroring MTEB's own MM-BRIGHT tasks, so MTEB models pick their prompts.

An MTEB model resolves its prompt or instruction from the task it is told it runs (the task's
name, type and ``prompt``, the prompt type ``query`` or ``document``: ``AbsEncoder
.get_instruction``, ``get_prompt_name``) and reads its inputs by the task's category
(``t2t``: text to text; ``it2t``: text and image to text...). MTEB's repository defines the
MM-BRIGHT tasks per domain, ``MMBright<Domain>{T2T,IT2T,IT2I}Retrieval`` (``mteb/tasks/
retrieval/eng/mm_bright_retrieval.py``), with one query prompt per variant and none for
documents; the PyPI release does not ship them yet. This module builds the same
``TaskMetadata`` (name, type, category, modalities, prompt, dataset), so a model run here
sees what it would see there. Task 4, which MTEB does not define, gets this package's own
``MMBright<Domain>IT2ITRetrieval`` (category ``it2it``, the IT2T query prompt).
"""

from __future__ import annotations

from typing import Any

from mmbright_core.io.mteb import mteb_task_name
from mmbright_core.retrieval.base import require

#: The dataset and revision MTEB's tasks read (docs/protocol.md, the data as published).
DATASET = {"path": "mm-bright/MM-BRIGHT", "revision": "97702ca9ea81cd0a25288e74a9402439550d6bd4"}

#: MTEB's spelling of each domain inside a task name (``pm`` is ``ProjectManagement``).
DOMAIN_NAMES: dict[str, str] = {
    "academia": "Academia",
    "apple": "Apple",
    "askubuntu": "AskUbuntu",
    "aviation": "Aviation",
    "bioacoustics": "Bioacoustics",
    "bioinformatics": "Bioinformatics",
    "biology": "Biology",
    "bitcoin": "Bitcoin",
    "chemistry": "Chemistry",
    "christianity": "Christianity",
    "crypto": "Crypto",
    "earthscience": "EarthScience",
    "economics": "Economics",
    "gaming": "Gaming",
    "gis": "GIS",
    "islam": "Islam",
    "law": "Law",
    "math": "Math",
    "medicalsciences": "MedicalSciences",
    "philosophy": "Philosophy",
    "physics": "Physics",
    "pm": "ProjectManagement",
    "psychology": "Psychology",
    "quant": "Quant",
    "quantumcomputing": "QuantumComputing",
    "robotics": "Robotics",
    "salesforce": "Salesforce",
    "sustainability": "Sustainability",
    "travel": "Travel",
}

_PASSAGES = "retrieve passages that provide the reasoning needed to answer it."
#: MTEB's query prompt of each task (documents get none); Task 4 borrows Task 2's.
QUERY_PROMPTS: dict[int, str] = {
    1: f"Given a technical question, {_PASSAGES}",
    2: f"Given a technical question and its images, {_PASSAGES}",
    3: "Given a technical question and its images, retrieve images that provide relevant "
    "visual evidence.",
    4: f"Given a technical question and its images, {_PASSAGES}",
}
#: The task names, as recorded in a run's configuration (one per domain and task).
TASK_NAMES = "MMBright<Domain>{T2T,IT2T,IT2I,IT2IT}Retrieval"
_KIND: dict[int, tuple[str, str, list[str]]] = {  # task -> (type, category, modalities)
    1: ("Retrieval", "t2t", ["text"]),
    2: ("Any2AnyRetrieval", "it2t", ["text", "image"]),
    3: ("Any2AnyRetrieval", "it2i", ["text", "image"]),
    4: ("Any2AnyRetrieval", "it2it", ["text", "image"]),
}


def task_name(task: int, domain: str) -> str:
    """Return the MTEB task name of ``task`` on ``domain`` (``MMBrightBiologyIT2TRetrieval``).

    Domains MTEB does not know (a local folder's own) are capitalised as they are.
    """
    suffix = mteb_task_name(task).removeprefix("MMBright")
    return f"MMBright{DOMAIN_NAMES.get(domain, domain.capitalize())}{suffix}"


def task_metadata(task: int, domain: str) -> Any:
    """Return the ``mteb.TaskMetadata`` of ``task`` on ``domain``, as MTEB's tasks declare it.

    Raises:
        MissingDependencyError: mteb is not installed.
    """
    metadata = require("mteb.abstasks.task_metadata", "the mteb retriever", "mteb")
    kind, category, modalities = _KIND[task]
    return metadata.TaskMetadata(
        name=task_name(task, domain),
        description=f"MM-BRIGHT task {task} on the {domain} domain.",
        type=kind,
        category=category,
        modalities=modalities,
        prompt={"query": QUERY_PROMPTS[task]},
        dataset=dict(DATASET),
        reference="https://arxiv.org/abs/2601.09562",
        eval_splits=["test"],
        eval_langs=["eng-Latn"],
        main_score="ndcg_at_10",
        date=("2025-01-01", "2026-01-15"),
        domains=["Academic", "Web", "Medical", "Legal", "Religious"],
        task_subtypes=["Reasoning as Retrieval"],
        license="cc-by-4.0",
        annotations_creators="expert-annotated",
        dialect=[],
        sample_creation="found",
        bibtex_citation="",
    )
