"""Every path confined on a shared server, path errors as messages, and the host allow-list."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import streamlit as st
from apptest import error_messages, fresh, goto

from mmbright_core.errors import InputError
from mmbright_core.io.official import write_domain_outputs, write_summary
from mmbright_core.ui.common import hosts
from mmbright_core.ui.common.confine import ROOT_ENV, Confinement, confine

A1 = "academia/a1b2c3d4_101.txt"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    served = tmp_path / "served"
    served.mkdir()
    (tmp_path / "private").mkdir()
    monkeypatch.setenv(ROOT_ENV, str(served))
    return served.resolve()


def _outputs(folder: Path, domains: tuple[str, ...] = ("academia",)) -> Path:
    for domain in domains:
        write_domain_outputs(folder, domain, {"a1": {A1: 1.0}}, {"NDCG@10": 1.0})
    write_summary(folder, "mine", "text", {d: {"NDCG@10": 1.0} for d in domains})
    return folder


@pytest.mark.parametrize("typed", ["a\0b", "/tmp/x\0"])
@pytest.mark.parametrize("confined", [True, False])
def test_a_nul_character_is_an_input_error(
    typed: str, confined: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    if confined:
        monkeypatch.setenv(ROOT_ENV, str(tmp_path))
    else:
        monkeypatch.delenv(ROOT_ENV, raising=False)
    with pytest.raises(InputError, match="runs folder holds a NUL character"):
        confine(typed, "runs folder")


def test_a_symlink_loop_is_an_input_error(root: Path):
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(InputError, match="runs folder cannot be resolved"):
        confine("loop/x", "runs folder")


def test_a_symlink_deep_inside_the_root_is_refused(root: Path, tmp_path: Path):
    (root / "runs" / "deep").mkdir(parents=True)
    (root / "runs" / "deep" / "out").symlink_to(tmp_path / "private")
    (root / "runs" / "deep" / "in").symlink_to(root / "runs")
    confinement = Confinement.from_env()
    with pytest.raises(InputError, match="entry is outside"):
        confinement.check_tree(root / "runs", "runs folder", depth=2)
    confinement.check_tree(root / "runs", "runs folder", depth=1)  # "deep" itself is inside
    Confinement(None).check_tree(root / "runs", "runs folder", depth=3)  # unconfined


def test_a_domain_folder_leading_out_of_a_runs_folder_is_refused(
    fixture_dir: Path, root: Path, tmp_path: Path
):
    shutil.copytree(fixture_dir, root / "data")
    _outputs(tmp_path / "private" / "theirs")
    run = root / "runs" / "run_mine"
    _outputs(run, ("biology",))
    (run / "academia").symlink_to(tmp_path / "private" / "theirs" / "academia")
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input("data").run()
    at.selectbox(key="task").set_value(1).run()
    at.text_input(key="runs_folder").input("runs").run()
    at.button(key="add_folder").click().run()
    assert not at.exception
    assert any("runs folder entry is outside" in e for e in error_messages(at))
    assert not at.multiselect(key="selected_runs_1").value


def test_a_config_folder_leading_out_of_a_dataset_is_refused(
    fixture_dir: Path, root: Path, tmp_path: Path
):
    shutil.copytree(fixture_dir, root / "data")
    shutil.move(root / "data" / "examples", tmp_path / "private" / "examples")
    (root / "data" / "examples").symlink_to(tmp_path / "private" / "examples")
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input("data").run()
    assert not at.exception
    assert any("dataset folder entry is outside" in e.value for e in at.sidebar.error)
    goto(at, "run")
    assert not at.exception
    assert any("dataset folder entry is outside" in e for e in error_messages(at))


@pytest.mark.parametrize("inside", ["run_t2t_random", "run_t2t_random/academia"])
def test_a_run_never_writes_through_a_symlinked_subfolder(
    fixture_dir: Path, root: Path, tmp_path: Path, inside: str
):
    shutil.copytree(fixture_dir, root / "data")
    target = root / "outputs" / inside
    target.parent.mkdir(parents=True)
    target.symlink_to(tmp_path / "private")
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input("data").run()
    at.selectbox(key="task").set_value(1).run()
    goto(at, "run")
    at.selectbox(key="run_retriever").set_value("random").run()
    at.text_input(key="run_out").input("outputs").run()
    at.button(key="run_start").click().run()
    assert not at.exception
    assert any("output folder entry is outside" in e for e in error_messages(at))
    assert not any((tmp_path / "private").iterdir())  # nothing written outside the root


def test_path_errors_are_messages_on_the_page(fixture_dir: Path, root: Path):
    (root / "loop").symlink_to(root / "loop")
    shutil.copytree(fixture_dir, root / "data")
    at = fresh()
    at.radio(key="source_kind").set_value("Local folder").run()
    at.text_input(key="source_folder").input("data\0").run()
    assert not at.exception
    assert any("NUL character" in e.value for e in at.sidebar.error)
    assert at.title[0].value == "MM-BRIGHT failure analysis"  # Home keeps running
    at.text_input(key="source_folder").input("data").run()
    for typed, said in (("runs\0", "NUL character"), ("loop", "cannot be resolved")):
        at.text_input(key="runs_folder").input(typed).run()
        at.button(key="add_folder").click().run()
        assert not at.exception and any(said in e for e in error_messages(at)), typed
    goto(at, "run")
    for typed, said in (("out\0", "NUL character"), ("loop/out", "cannot be resolved")):
        at.selectbox(key="run_retriever").set_value("random").run()
        at.text_input(key="run_out").input(typed).run()
        at.button(key="run_start").click().run()
        assert not at.exception
        assert any(said in e for e in error_messages(at)), typed
        assert not any("The retriever failed" in e for e in error_messages(at))


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("mmbright.example.org", True),
        ("MMBright.Example.org:8501", True),
        ("localhost:8501", True),
        ("127.0.0.1:80", True),
        ("[::1]:8501", True),
        ("mmbright.example.org.", True),
        ("evil.example", False),
        ("mmbright.example.org.evil.example", False),
        (None, False),
    ],
)
def test_host_allowed(header: str | None, allowed: bool):
    names = hosts.allowed_hosts("mmbright.example.org, 127.0.0.1,localhost,::1")
    assert hosts.host_allowed(header, names) is allowed
    assert hosts.host_allowed(header, hosts.allowed_hosts("")) is True  # unset: no check


def test_a_page_for_another_host_is_refused(monkeypatch: pytest.MonkeyPatch):
    requested = {"Host": "rebound.evil.example:8501"}
    monkeypatch.setattr(type(st.context), "headers", property(lambda self: requested))
    monkeypatch.setenv(hosts.HOSTS_ENV, "mmbright.example.org,localhost")
    at = fresh()
    assert not at.exception
    assert len(at.error) == 1 and "'rebound.evil.example'" in at.error[0].value
    assert hosts.HOSTS_ENV.replace("_", "\\_") in at.error[0].value  # Markdown-escaped
    assert not at.title  # nothing of the page was drawn
    requested["Host"] = "localhost:8501"
    at = fresh()
    assert not at.error and at.title[0].value == "MM-BRIGHT failure analysis"
