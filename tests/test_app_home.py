"""Home under AppTest: a dataset folder it cannot use says why on the page itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from apptest import fresh
from streamlit.testing.v1 import AppTest

from mmbright_core.ui.confine import ROOT_ENV


def _home_on(folder: str) -> AppTest:
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input(folder).run()
    assert not at.exception
    return at


def _page_errors(at: AppTest) -> list[str]:
    # The page's own messages, not the sidebar's (Home is where the user looks), as the
    # user reads them: the page escapes their Markdown.
    return [e.value.replace("\\", "") for e in at.main.error]


def test_home_names_a_dataset_folder_it_cannot_use(tmp_path: Path) -> None:
    missing = tmp_path / "mm-brigth"
    said = _page_errors(_home_on(str(missing)))
    assert len(said) == 1 and f"no such folder: '{missing}'" in said[0]
    assert "unknown source" not in said[0]

    said = _page_errors(_home_on("/etc"))
    assert len(said) == 1 and said[0].startswith("/etc: no MM-BRIGHT parquet files")
    assert "{config}/{domain}.parquet" in said[0]  # the layout it expects

    (tmp_path / "data.parquet").write_bytes(b"PAR1")
    said = _page_errors(_home_on(str(tmp_path / "data.parquet")))
    assert len(said) == 1 and "not a folder:" in said[0] and "data.parquet" in said[0]


def test_home_names_a_dataset_folder_outside_the_root(
    fixture_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    said = _page_errors(_home_on(str(fixture_dir)))
    assert len(said) == 1 and "dataset folder is outside the folder this server may" in said[0]
    assert f"found '{fixture_dir}'" in said[0]


def test_home_is_quiet_on_a_usable_folder(fixture_dir: Path) -> None:
    at = _home_on(str(fixture_dir))
    assert _page_errors(at) == []
