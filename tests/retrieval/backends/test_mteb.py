"""The mteb backend: MTEB's registry models through MTEB's encoder protocol, offline.

``mteb/baseline-random-encoder`` is MTEB's own model with MTEB's real encoder protocol: each
text's or image's vector comes from a SHA-256 of its content, and a text given with an image
gets the mean of the two vectors. The expected vectors below come from calling that model's
``encode`` directly on plain data loaders of the images' file bytes, never from the backend.
"""

from __future__ import annotations

import io
import sys

import numpy as np
import pytest
from fixture_dataset import changed_by_a_second_jpeg, encode, photo
from PIL import Image

from mmbright_core.data.images import decode_image
from mmbright_core.errors import InputError, MissingDependencyError
from mmbright_core.retrieval.backends.mteb_tasks import (
    IMAGE_ROWS,
    QUERY_PROMPTS,
    task_metadata,
    task_name,
)

pytest.importorskip("mteb")

from mteb_direct import RANDOM, encode_directly

from mmbright_core.retrieval.backends.mteb import MtebEmbedder
from mmbright_core.retrieval.backends.mteb_registry import split_name


@pytest.fixture(scope="module")
def embedder() -> MtebEmbedder:
    """The random encoder, loaded once."""
    return MtebEmbedder(RANDOM)


def direct(embedder: MtebEmbedder, **columns: list) -> np.ndarray:
    """The model's own output for one plain batch of ``columns``."""
    return encode_directly(embedder.load(), **columns)


def decoded(data: bytes) -> Image.Image:
    """An image file decoded as the package hands it to an embedder."""
    return decode_image(data, "image")


def test_task_names_mirror_mtebs_tasks():
    assert task_name(1, "biology") == "MMBrightBiologyT2TRetrieval"
    assert task_name(2, "pm") == "MMBrightProjectManagementIT2TRetrieval"
    assert task_name(3, "gis") == "MMBrightGISIT2IRetrieval"
    assert task_name(4, "askubuntu") == "MMBrightAskUbuntuIT2ITRetrieval"


def test_task_metadata_carries_mtebs_type_category_and_query_prompt():
    t1, t2, t3 = (task_metadata(task, "physics") for task in (1, 2, 3))
    assert (t1.type, t1.category, t1.modalities) == ("Retrieval", "t2t", ["text"])
    assert (t2.type, t2.category) == ("Any2AnyRetrieval", "it2t")
    assert t2.prompt == {"query": QUERY_PROMPTS[2]}
    assert QUERY_PROMPTS[1].startswith("Given a technical question, retrieve passages")
    from mteb.types import PromptType

    assert t3.get_modalities(PromptType.query) == ["image", "text"]
    assert t3.get_modalities(PromptType.document) == ["image"]
    assert t1.dataset["revision"] == "97702ca9ea81cd0a25288e74a9402439550d6bd4"


def test_split_name_reads_an_optional_revision():
    assert split_name("org/model@abc") == ("org/model", "abc")
    assert split_name("org/model") == ("org/model", None)


def test_texts_are_the_models_own_vectors_documents_stripped_as_mteb_does(embedder):
    embedder.bind(1, "gis")
    texts = ["a question about maps", "  padded passage\n"]
    queries = embedder.encode_texts(texts, "query")
    documents = embedder.encode_texts(texts, "document")
    assert queries.dtype == np.float32 and queries.shape == (2, 32)
    np.testing.assert_array_equal(queries, direct(embedder, text=texts))
    np.testing.assert_array_equal(documents, direct(embedder, text=[t.strip() for t in texts]))
    assert not np.array_equal(queries[1], documents[1])


def test_a_query_with_an_image_is_one_input_the_model_fuses(embedder):
    embedder.bind(2, "gis")
    red, blue = encode((8, 6), "red"), encode((5, 5), "blue")
    texts = ["first", "second", "third"]
    joint = embedder.encode_joint(texts, [decoded(red), None, decoded(blue)], "query")
    text = direct(embedder, text=texts)
    image = direct(embedder, image=[red, blue])
    np.testing.assert_allclose(joint[0], (text[0] + image[0]) / 2, rtol=1e-6)
    np.testing.assert_array_equal(joint[1], text[1])  # no image: the text alone
    np.testing.assert_allclose(joint[2], (text[2] + image[1]) / 2, rtol=1e-6)


def test_corpus_images_are_encoded_under_the_image_task(embedder):
    embedder.bind(3, "gis")
    red = encode((8, 6), "red")
    np.testing.assert_array_equal(
        embedder.encode_images([decoded(red)], "document"), direct(embedder, image=[red])
    )
    with pytest.raises(InputError, match="MMBrightGISIT2IRetrieval takes no text documents"):
        embedder.encode_texts(["a passage"], "document")


def test_a_jpeg_reaches_the_model_with_the_pixels_of_its_own_decode(embedder, monkeypatch):
    data = photo((24, 16), 7)
    assert changed_by_a_second_jpeg(data)  # the case: datasets would store other pixels
    original = Image.open(io.BytesIO(data)).convert("RGB")
    model = embedder.load()
    seen: list[Image.Image] = []
    real = model.encode

    def recording(inputs, **kwargs):
        seen.extend(image for batch in inputs for image in batch["image"])
        return real(inputs, **kwargs)

    with monkeypatch.context() as patch:  # only this patch ends here, not the suite's
        patch.setattr(model, "encode", recording)
        embedder.bind(3, "gis")
        corpus = embedder.encode_images([decoded(data)], "document")
        embedder.bind(2, "gis")
        query = embedder.encode_joint(["a question"], [decoded(data)], "query")
        embedder.bind(4, "gis")  # a pair's passage goes through MTEB's corpus formatting (a map)
        pair = embedder.encode_joint(["a passage"], [decoded(data)], "document")
        assert len(seen) == 3
        for image in seen:
            assert (image.mode, image.size) == ("RGB", original.size)
            np.testing.assert_array_equal(np.asarray(image), np.asarray(original))
    np.testing.assert_array_equal(corpus, direct(embedder, image=[data]))
    text = direct(embedder, text=["a question"])
    np.testing.assert_allclose(query[0], (text[0] + direct(embedder, image=[data])[0]) / 2)
    joint = direct(embedder, text=["a passage"], image=[data])
    np.testing.assert_allclose(pair, joint, rtol=1e-6)


def test_a_rotated_photo_reaches_the_model_upright_as_mtebs_image_feature_decodes_it(embedder):
    from datasets import Dataset, Features
    from datasets import Image as ImageFeature

    exif = Image.Exif()
    exif[Image.ExifTags.Base.Orientation] = 6  # stored turned: shown rotated 90 degrees
    buffer = io.BytesIO()
    Image.open(io.BytesIO(photo((24, 16), 8))).save(buffer, format="JPEG", exif=exif)
    data = buffer.getvalue()
    # MTEB's own task stores the file under Image(mode="RGB"); reading it turns it upright.
    stored = Dataset.from_dict(
        {"image": [{"bytes": data, "path": None}]},
        features=Features({"image": ImageFeature(mode="RGB")}),
    )
    assert stored[0]["image"].size == (16, 24) and decoded(data).size == (24, 16)
    embedder.bind(3, "gis")
    np.testing.assert_array_equal(
        embedder.encode_images([decoded(data)], "document"), direct(embedder, image=[data])
    )


def test_the_model_is_told_mtebs_task_and_prompt_type(embedder, monkeypatch):
    model = embedder.load()
    seen: list[tuple[str, object, str]] = []
    real = model.encode

    def recording(inputs, **kwargs):
        seen.append(
            (
                kwargs["task_metadata"].name,
                kwargs["task_metadata"].prompt,
                kwargs["prompt_type"].value,
            )
        )
        return real(inputs, **kwargs)

    monkeypatch.setattr(model, "encode", recording)
    embedder.bind(2, "pm")
    embedder.encode_texts(["q"], "query")
    embedder.encode_texts(["d"], "document")
    name = "MMBrightProjectManagementIT2TRetrieval"
    assert seen == [
        (name, {"query": QUERY_PROMPTS[2]}, "query"),
        (name, {"query": QUERY_PROMPTS[2]}, "document"),
    ]


def test_settings_record_model_revision_prompts_and_the_scoped_task(embedder):
    embedder.bind(None, None)
    settings = embedder.settings()
    assert settings["model"] == RANDOM and settings["revision"] == "2"
    assert settings["similarity"] == "cosine" and settings["backend"] == "mteb"
    assert settings["images"] == IMAGE_ROWS
    assert settings["task_prompts"]["3"] == {"query": QUERY_PROMPTS[3]}
    assert "mteb_task" not in settings
    embedder.bind(1, "biology")
    assert embedder.settings()["mteb_task"] == "MMBrightBiologyT2TRetrieval"
    assert (embedder.name, embedder.fusion) == ("baseline-random-encoder", "joint")
    assert embedder.modalities == {"text", "image"}


def test_encoding_outside_a_task_is_refused():
    fresh = MtebEmbedder(RANDOM)
    with pytest.raises(InputError, match="outside a task"):
        fresh.encode_texts(["x"], "query")


def test_an_unknown_model_is_one_clear_line_with_close_matches():
    with pytest.raises(InputError) as caught:
        MtebEmbedder("mteb/baseline-random-encodr")
    message = str(caught.value)
    assert "unknown MTEB model 'mteb/baseline-random-encodr'" in message
    assert "Did you mean 'mteb/baseline-random-encoder'" in message
    assert "\n" not in message


def test_a_revision_other_than_the_registrys_is_refused():
    with pytest.raises(InputError, match=r"expected mteb/baseline-random-encoder@2"):
        MtebEmbedder(f"{RANDOM}@3")


@pytest.mark.parametrize("name", ["vidore/colpali-v1.2", "mteb/baseline-random-cross-encoder"])
def test_models_not_scored_by_cosine_are_refused(name):
    with pytest.raises(InputError, match="not a dense encoder scored by cosine"):
        MtebEmbedder(name)


def test_missing_mteb_names_the_extra(monkeypatch):
    for module in [m for m in sys.modules if m.split(".")[0] == "mteb"]:
        monkeypatch.delitem(sys.modules, module)
    monkeypatch.setitem(sys.modules, "mteb", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'mmbright\[mteb\]'"):
        MtebEmbedder(RANDOM)
