"""The api embedder: what it sends for each role, what it records, what it refuses."""

from __future__ import annotations

import numpy as np
import pytest
from openai_server import KEY, MODEL, serving, vector_of
from PIL import Image

from mmbright_core.endpoints.client import Limits
from mmbright_core.errors import InputError
from mmbright_core.retrieval.backends.api import ApiEmbedder
from mmbright_core.retrieval.backends.api_client import EmbeddingClient
from mmbright_core.retrieval.dual.embedder import Embedder


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def embedder(url: str, **options: object) -> ApiEmbedder:
    client = EmbeddingClient(MODEL, url, limits=Limits(retries=0))
    return ApiEmbedder(client, **options)  # type: ignore[arg-type]


def test_it_is_a_text_embedder_with_the_text_fusion() -> None:
    with serving() as server:
        made = embedder(server.url)
    assert isinstance(made, Embedder)
    assert made.modalities == frozenset({"text"}) and made.fusion == "text"
    assert made.name == MODEL


def test_instructions_go_before_each_role_and_vectors_are_raw() -> None:
    with serving() as server:
        made = embedder(server.url, query_instruction="Q: ", document_instruction="D: ")
        queries = made.encode_texts(["why"], "query")
        documents = made.encode_texts(["because"], "document")
    assert [r["input"] for r in server.requests] == [["Q: why"], ["D: because"]]
    np.testing.assert_array_equal(queries[0], vector_of("Q: why"))  # not normalised
    np.testing.assert_array_equal(documents[0], vector_of("D: because"))


def test_long_texts_are_cut_and_empty_ones_sent_as_a_space() -> None:
    with serving() as server:
        embedder(server.url, max_chars=5).encode_texts(["abcdefgh", "", "  "], "document")
    assert server.requests[0]["input"] == ["abcde", " ", " "]


def test_settings_name_the_endpoint_and_model_never_the_key() -> None:
    with serving() as server:
        made = embedder(server.url, query_instruction="Q: ")
    settings = made.settings()
    assert settings["endpoint"] == server.url
    assert settings["model"] == MODEL and settings["query_instruction"] == "Q: "
    assert KEY not in repr(settings)


def test_images_are_refused_with_a_clear_error() -> None:
    with serving() as server:
        made = embedder(server.url)
    with pytest.raises(InputError, match="embeds texts only"):
        made.encode_images([Image.new("RGB", (2, 2))], "query")


@pytest.mark.parametrize("bad", [0, -3, True, "10"])
def test_max_chars_must_be_a_positive_integer(bad: object) -> None:
    with serving() as server, pytest.raises(InputError, match="invalid max_chars"):
        embedder(server.url, max_chars=bad)
