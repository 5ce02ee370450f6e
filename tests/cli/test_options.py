"""The task options: one declaration, one meaning in every subcommand, and a light ``--help``."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from mmbright_core.cli import build_parser
from mmbright_core.data.choices import NEGATIVES, PROTOCOLS, TASKS

# The least each subcommand needs to parse; --domain is added by the tests.
REQUIRED = {
    "eval": [],
    "stats": ["--source", "demo"],
    "qrels": ["--source", "demo", "--task", "1"],
    "run": ["--source", "demo", "--task", "1", "--retriever", "bm25", "--out", "o"],
    "compare": ["a.trec", "b.trec", "--source", "demo", "--task", "1"],
    "rerank": ["a.trec", "--source", "demo", "--task", "1", "--reranker", "m:f", "--out", "o"],
}
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "torch", "streamlit", "PIL", "ray")


def subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("mmbright has no subcommands")


def actions(parser: argparse.ArgumentParser, dest: str) -> list[argparse.Action]:
    parser.format_help()  # declares what a subcommand leaves until it is used
    return [action for action in parser._actions if action.dest == dest]


@pytest.mark.parametrize("command", sorted(REQUIRED))
def test_domain_repeated_or_listed_means_the_same(command):
    parse = build_parser().parse_args
    base = [command, *REQUIRED[command]]
    repeated = parse([*base, "--domain", "academia", "--domain", "biology"])
    listed = parse([*base, "--domain", "academia", "biology"])
    mixed = parse([*base, "--domain", "academia", "biology", "--domain", "chemistry"])
    assert repeated.domains == listed.domains == ["academia", "biology"]
    assert mixed.domains == ["academia", "biology", "chemistry"]


@pytest.mark.parametrize("command", sorted(set(REQUIRED) - {"qrels"}))  # qrels needs its domains
def test_no_domain_means_none(command):
    assert build_parser().parse_args([command, *REQUIRED[command]]).domains is None


def test_the_choices_come_from_the_data_layer():
    checked = {"protocol": PROTOCOLS, "task": TASKS, "negatives": NEGATIVES}
    seen = set()
    for name, parser in subcommands().items():
        for dest, choices in checked.items():
            for action in actions(parser, dest):
                assert tuple(action.choices or ()) == choices, (name, dest)
                seen.add((name, dest))
    assert {name for name, dest in seen if dest == "protocol"} == {
        "eval", "stats", "qrels", "run", "compare", "rerank", "fuse", "explain"
    }  # fmt: skip


def test_the_owners_re_export_the_choices():
    from mmbright_core.data import ids, images, stats, tasks
    from mmbright_core.data.choices import POLICIES

    assert ids.PROTOCOLS is PROTOCOLS and tasks.NEGATIVES is NEGATIVES
    assert images.POLICIES is POLICIES and stats.TASKS is TASKS


def test_qrels_takes_several_domains(capsys):
    from mmbright_core.cli import main

    assert main(["qrels", "--source", "demo", "--task", "1", "--domain", "gis", "biology"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert {line.split("/")[0] for line in lines} == {"gis", "biology"}
    assert main(["qrels", "--source", "demo", "--task", "1", "--domain", "gis", "biologi"]) == 2
    assert "unknown domain 'biologi'" in capsys.readouterr().err


def test_help_imports_no_backend():
    # -X importtime lists every module imported, one per line on stderr: robust, no timing.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mmbright_core", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "usage: mmbright" in done.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert not {name for name in imported if name.split(".")[0] in HEAVY}


def test_the_public_api_still_imports():
    import mmbright_core
    from mmbright_core import EvalResult, Measure, evaluate, parse_measure

    result = evaluate({"q": {"d": 1}}, {"q": {"d": 1.0}}, measures=("nDCG@10",))
    assert isinstance(result, EvalResult) and result.aggregate["nDCG@10"] == 1.0
    assert isinstance(parse_measure("nDCG@10"), Measure)
    assert "evaluate" in dir(mmbright_core)
    with pytest.raises(AttributeError):
        _ = mmbright_core.no_such_name


@pytest.mark.parametrize("command", ["run", "rerank", "rewrite"])
def test_wait_means_the_same_in_every_command_that_writes(command, capsys):
    parser = subcommands()[command]
    least = REQUIRED.get(command, ["--source", "demo", "--task", "1", "--llm", "m", "--out", "q"])
    assert parser.parse_args(least).wait == 0  # refused at once unless told to wait
    assert parser.parse_args([*least, "--wait"]).wait is None  # as long as it takes
    assert parser.parse_args([*least, "--wait", "2.5"]).wait == 2.5
    for bad in ("-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as stopped:
            parser.parse_args([*least, "--wait", bad])
        assert stopped.value.code == 2
        said = capsys.readouterr().err.splitlines()[-1]
        assert said.endswith(f"argument --wait: expected a number of seconds, found '{bad}'")
