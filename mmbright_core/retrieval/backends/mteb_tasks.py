"""MTEB task metadata mirroring MTEB's own MM-BRIGHT tasks, so MTEB models pick their prompts.

An MTEB model resolves its prompt or instruction from the task it is told it runs (the task's
name, type and ``prompt``, the prompt type ``query`` or ``document``: ``AbsEncoder
.get_instruction``, ``get_prompt_name``) and reads its inputs by the task's category
(``t2t``: text to text; ``it2t``: text and image to text...). MTEB's repository defines the
MM-BRIGHT tasks per domain, ``MMBright<Domain>{T2T,IT2T,IT2I}Retrieval`` (``mteb/tasks/
retrieval/eng/mm_bright_retrieval.py``), with one query prompt per variant and none for
documents; the PyPI release (mteb 2.26.24) does not ship them yet. This module builds the same
``TaskMetadata`` (name, type, category, modalities, prompt, dataset), so a model run here
sees what it would see there. MTEB defines no Task 4: under the ``harness`` task definition
(the default) it gets this package's own ``MMBright<Domain>IT2ITRetrieval`` (category
``it2it``, the IT2T query prompt); under ``mteb`` the pair prompt of MTEB's MM-BRIGHT pull
request (:data:`PAIR_PROMPT`), whose Task 4 was not merged.

Query images differ by task definition too. ``harness``: this package's image policy and
no-image rule (docs/protocol.md). ``mteb``: :func:`mteb_query_pictures`, what MTEB's task
hands a model (embeddings-benchmark/mteb 1650ca54, ``mm_bright_retrieval.py``,
``_concatenate_images_vertically`` and ``_load_multimodal_queries``): every image that
decodes without Pillow's ``LOAD_TRUNCATED_IMAGES`` (a truncated file is skipped), stacked on
a new white canvas even when there is one (so no EXIF orientation turns it), and the white
224x224 image when none decodes.

:func:`task_rows` builds the ``datasets.Dataset`` MTEB's data loaders read, with the images
MTEB's tasks give a model: MTEB's MM-BRIGHT loader stores each image as its file's bytes
under ``datasets.Image(mode="RGB")`` (``_load_image_data``, ``_load_multimodal_queries``), so
the model gets the file's own decode. A ``Dataset`` built from decoded PIL images would not:
``datasets`` stores such an image by encoding it again, in its own format where Pillow can
write it (``datasets/features/image.py``, ``image_to_bytes``), and a JPEG comes back
re-compressed, its pixels changed. Here each image is stored losslessly, as a PNG of the
pixels this package decoded (with its rules for undecodable and truncated images,
docs/protocol.md), under the same feature: the model gets those pixels, bit for bit, turned
upright by the file's EXIF orientation as that feature's decode turns MTEB's images
(``Image.decode_example``: ``ImageOps.exif_transpose`` when the tag is set). The file's own
bytes are not stored: a truncated file, which this package decodes padded, would make that
feature raise ("image file is truncated") where MTEB's task stops; every other file gives the
same pixels either way.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

from PIL import Image, ImageOps

from mmbright_core.data.image_batches import each_preprocessed
from mmbright_core.data.images import (
    ImageDecodeError,
    ImageSource,
    QueryImages,
    concat_vertical,
    load_image,
)
from mmbright_core.errors import UnknownNameError, require
from mmbright_core.io.mteb import mteb_task_name
from mmbright_core.retrieval.dual.encoder import white_image
from mmbright_core.types import Query

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
#: Task 4's query prompt in MTEB's MM-BRIGHT pull request (``MMBrightIT2ITRetrieval``); the
#: merged tasks (embeddings-benchmark/mteb 1650ca54) define no Task 4.
PAIR_PROMPT = (
    "Given a technical question and its images, retrieve passage-and-image pairs that provide "
    "the reasoning needed to answer it."
)
#: ``harness`` (the default): this package's query images and Task 4 prompt; ``mteb``: MTEB's.
TASK_DEFINITIONS = ("harness", "mteb")


def query_prompts(definition: str = "harness") -> dict[int, str]:
    """Return the query prompt of each task under a task definition.

    Raises:
        UnknownNameError: A definition other than ``harness`` or ``mteb``.
    """
    if definition not in TASK_DEFINITIONS:
        raise UnknownNameError("MTEB task definition", definition, TASK_DEFINITIONS)
    return QUERY_PROMPTS if definition == "harness" else {**QUERY_PROMPTS, 4: PAIR_PROMPT}


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


def task_metadata(task: int, domain: str, definition: str = "harness") -> Any:
    """Return the ``mteb.TaskMetadata`` of ``task`` on ``domain``, as MTEB's tasks declare it.

    ``definition`` chooses Task 4's prompt (:func:`query_prompts`).

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
        prompt={"query": query_prompts(definition)[task]},
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


#: How the images reach an MTEB model (recorded; it keys the embedding and answer caches).
IMAGE_ROWS = "decoded pixels, EXIF-upright, as lossless PNG under datasets.Image(mode='RGB')"
#: How the query images are made under the ``mteb`` task definition (recorded likewise).
MTEB_QUERY_IMAGES = (
    "MTEB's: decodable files (truncated skipped) stacked on a white canvas, else white 224x224"
)
#: Why a truncated query image is left out under the ``mteb`` task definition.
TRUNCATED = "truncated: MTEB's task decodes without LOAD_TRUNCATED_IMAGES and skips it"


def mteb_query_pictures(source: ImageSource, query: Query) -> QueryImages:
    """Return the one image MTEB's MM-BRIGHT task gives ``query``, and the images left out.

    The images that decode strictly (a truncated file is left out, as Pillow refuses it
    without ``LOAD_TRUNCATED_IMAGES``, which MTEB never sets), converted to RGB without EXIF
    orientation, stacked top to bottom on a new white canvas as wide as the widest and each
    centred (also a single image); the white 224x224 image when none decodes (module
    docstring).
    """
    found = QueryImages()
    decoded = []
    for ref in query.images:
        try:
            image = load_image(source.query_image_bytes(query.domain, ref.path), ref.path)
        except ImageDecodeError as err:
            found.problems[ref.path] = err.reason
            continue
        if image.padded:
            found.problems[ref.path] = TRUNCATED
        else:
            decoded.append(image.image)
    found.images = [concat_vertical(decoded) if decoded else white_image()]
    return found


def task_rows(columns: Mapping[str, Sequence[Any]], what: str) -> Any:
    """Return the ``datasets.Dataset`` of ``columns`` (string columns; ``image``: PIL images).

    Images are read one at a time (a :class:`~mmbright_core.data.image_batches.LazyImages`
    decodes each as it is read) and stored as lossless PNG under MTEB's image feature, so
    that reading a row gives back each image's pixels exactly (module docstring).

    Args:
        columns: Column name -> values, all of one length.
        what: The backend, for the error of a missing dependency.

    Raises:
        MissingDependencyError: datasets (the mteb extra) is not installed.
    """
    datasets = require("datasets", what, "mteb")
    features = datasets.Features(
        {
            name: datasets.Image(mode="RGB") if name == "image" else datasets.Value("string")
            for name in columns
        }
    )
    stored = {
        name: each_preprocessed(values, _lossless) if name == "image" else list(values)
        for name, values in columns.items()
    }
    return datasets.Dataset.from_dict(stored, features=features)


def _lossless(image: Image.Image) -> dict[str, bytes | None]:
    # Upright and RGB, as MTEB's feature decodes a file (no copy for an upright RGB image,
    # this package's usual one); zlib's fastest level: the bytes live for one batch, and
    # PNG is lossless at every level. The PNG carries no EXIF, so it is not turned twice.
    if image.getexif().get(Image.ExifTags.Base.Orientation) is not None:
        image = ImageOps.exif_transpose(image)
    buffer = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(
        buffer, format="PNG", compress_level=1
    )
    return {"bytes": buffer.getvalue(), "path": None}
