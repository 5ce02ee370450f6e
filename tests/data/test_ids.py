from __future__ import annotations

import numpy as np
import pytest

from mmbright_core.data.ids import (
    as_list,
    as_str_list,
    check_protocol,
    display_id,
    image_key,
    image_structs,
    normalise_path,
    pair_id,
    pair_parts,
    passage_id,
    passage_key,
    split_pair_id,
    without_none_marker,
)
from mmbright_core.data.layout import DOMAIN_GROUPS, DOMAINS, parquet_name
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.base import passage_id as retrievers_passage_id


def test_layout_has_the_29_sorted_domains_in_four_groups() -> None:
    assert len(DOMAINS) == 29
    assert list(DOMAINS) == sorted(DOMAINS)
    assert sorted(d for g in DOMAIN_GROUPS.values() for d in g) == list(DOMAINS)
    assert parquet_name("documents", "biology") == "documents/biology.parquet"


def test_backslashes_become_slashes() -> None:
    assert (
        normalise_path("gis\\gis_0a1b2c3d_0001\\image_1.png") == "gis/gis_0a1b2c3d_0001/image_1.png"
    )
    assert normalise_path("gis/x.png") == "gis/x.png"


@pytest.mark.parametrize(
    ("passage", "paper", "legacy"),
    [
        ("academia/a7beca61_6123.txt", "a7beca61", "a7beca61"),
        ("biology/fec40b40_1635_4.txt", "fec40b40", None),  # chunked: legacy finds no key
        ("academia/0123456789abcdef_12.txt", "0123456789abcdef", "0123456789abcdef"),
        ("academia/not-hex.txt", None, None),
    ],
)
def test_passage_key_paper_and_legacy(passage: str, paper: str | None, legacy: str | None) -> None:
    assert passage_key(passage, "paper") == paper
    assert passage_key(passage, "legacy") == legacy


def test_image_key_reads_the_domain_folder_name() -> None:
    assert image_key("academia/academia_a7beca61_0002/image_1.webp", "academia") == "a7beca61"
    assert image_key("academia/other_a7beca61_0002/image_1.webp", "academia") is None
    assert image_key("biology/biology_fec40b40_0001/image_3.png", "biology") == "fec40b40"


def test_pair_ids_round_trip() -> None:
    assert pair_id("p/a_1.txt", None) == "p/a_1.txt|||__NO_IMAGE__"
    assert pair_id("p/a_1.txt", "p/p_a_1/image_1.png") == "p/a_1.txt|||p/p_a_1/image_1.png"
    assert split_pair_id("p/a_1.txt|||__NO_IMAGE__") == ("p/a_1.txt", None)
    assert split_pair_id("p/a_1.txt|||x.png") == ("p/a_1.txt", "x.png")
    with pytest.raises(InputError, match="not a Task 4 pair id"):
        split_pair_id("p/a_1.txt")


def test_pair_ids_read_as_passage_and_image_name_or_text_only() -> None:
    image = "physics/physics_ab12_0001/image_1.png"
    assert display_id(f"physics/ab12_88755.txt|||{image}") == "physics/ab12_88755.txt + image_1.png"
    assert display_id("physics/ab12_88755.txt|||__NO_IMAGE__") == (
        "physics/ab12_88755.txt (text only)"
    )
    assert display_id("physics/ab12_88755.txt") == "physics/ab12_88755.txt"  # not a pair
    assert display_id(image) == image  # a Task 3 image
    assert pair_parts("p/a_1.txt|||__NO_IMAGE__") == ("p/a_1.txt", None)
    assert pair_parts("p/a_1.txt") == ("p/a_1.txt", None)


def test_list_cells_accept_numpy_arrays_none_and_lists() -> None:
    assert as_list(None, "gold_ids") == []
    assert as_str_list(np.array(["a", "b"], dtype=object), "gold_ids") == ["a", "b"]
    assert as_str_list(np.array([1, 2]), "gold_ids") == ["1", "2"]  # ids are strings
    assert as_str_list(("x",), "gold_ids") == ["x"]
    with pytest.raises(InputError, match="'gold_ids' holds a str"):
        as_list("academia/a_1.txt", "gold_ids")


def test_image_structs_normalise_paths() -> None:
    cells = np.array(
        [
            {"image_path": "a\\a_1_1\\image_1.png", "source_passage_id": "a/1_1.txt"},
            {"image_path": "a/a_1_1/image_2.png", "source_passage_id": None},
            "a\\a_1_1\\image_3.png",
        ],
        dtype=object,
    )
    assert image_structs(cells, "positive_images") == [
        ("a/a_1_1/image_1.png", "a/1_1.txt"),
        ("a/a_1_1/image_2.png", None),
        ("a/a_1_1/image_3.png", None),
    ]
    with pytest.raises(InputError, match="without an image path"):
        image_structs([{"source_passage_id": "a/1_1.txt"}], "positive_images")


def test_none_marker_and_protocol_names() -> None:
    assert without_none_marker(["N/A"]) == frozenset()
    assert without_none_marker(["a/1_1.txt", "N/A"]) == {"a/1_1.txt"}
    assert check_protocol("legacy") == "legacy"
    with pytest.raises(UnknownNameError, match="did you mean 'paper'"):
        check_protocol("papr")


def test_passage_id_is_the_passage_of_a_pair_and_any_other_id_itself() -> None:
    assert passage_id("physics/ab12_3.txt|||physics/physics_ab12_0001/image_1.png") == (
        "physics/ab12_3.txt"
    )
    assert passage_id("physics/ab12_3.txt|||__NO_IMAGE__") == "physics/ab12_3.txt"
    assert passage_id("physics/physics_ab12_0001/image_1.png") == (
        "physics/physics_ab12_0001/image_1.png"
    )
    assert retrievers_passage_id is passage_id
