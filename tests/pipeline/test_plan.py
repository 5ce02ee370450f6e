"""A pipeline file is checked whole, by each command's own parser, before any stage runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from locations import ROOT

from mmbright_core.cli import build_parser
from mmbright_core.cli.pipeline import _parsers
from mmbright_core.errors import InputError
from mmbright_core.pipeline.plan import Plan, read_plan

PARSERS = _parsers(build_parser())
HEAD = '[pipeline]\nsource = "demo"\ntask = 2\nout = "out"\n'
TWO = """
[stages.bm25]
command = "run"
retriever = "bm25"

[stages.fused]
command = "fuse"
runs = ["bm25", "ocr"]
method = "rrf"

[stages.ocr]
command = "run"
retriever = "ocr-bm25"
option = { k1 = 1.2, b = 0.75 }
"""


def plan_of(tmp_path: Path, text: str, head: str = HEAD) -> Plan:
    path = tmp_path / "p.toml"
    path.write_text(head + text, encoding="utf-8")
    return read_plan(path, PARSERS)


def test_stages_run_after_their_inputs_with_the_shared_settings_and_their_options(
    tmp_path: Path,
) -> None:
    plan = plan_of(
        tmp_path,
        TWO + '\n[stages.top]\ncommand = "rerank"\nrun = "fused"\n'
        'reranker = "mteb:mteb/baseline-random-cross-encoder"\ndepth = 5\n',
    )
    assert [s.name for s in plan.stages] == ["bm25", "ocr", "fused", "top"]
    assert plan.out == tmp_path / "out"  # relative to the file
    stages = {s.name: s for s in plan.stages}
    assert stages["ocr"].argv == (
        "run", "--source", "demo", "--task", "2", "--retriever", "ocr-bm25",
        "--option", "k1=1.2", "--option", "b=0.75", "--out", "ocr",
    )  # fmt: skip
    assert stages["fused"].argv[:3] == ("fuse", "bm25", "ocr")
    assert stages["fused"].inputs == ("bm25", "ocr")
    assert stages["top"].argv[:2] == ("rerank", "fused")
    assert "--protocol" not in stages["top"].argv  # the command's default, unless set


def test_a_rewrite_stage_feeds_run_its_query_set_and_paths_are_read_from_the_file(
    tmp_path: Path,
) -> None:
    (tmp_path / "prompts").mkdir()
    plan = plan_of(
        tmp_path,
        '[stages.q]\ncommand = "rewrite"\nllm = "m"\nprompt = "./prompts/t.txt"\n'
        '[stages.r]\ncommand = "run"\nretriever = "bm25"\nqueries = "q"\n',
        head=HEAD + 'domain = ["gis", "physics"]\nnegatives = "keep"\n',
    )
    rewrite, run = plan.stages
    assert rewrite.argv[rewrite.argv.index("--prompt") + 1] == str(tmp_path / "prompts/t.txt")
    assert rewrite.argv[-2:] == ("--out", "q/queries.jsonl")
    assert run.argv[run.argv.index("--queries") + 1] == "q/queries.jsonl"
    # The shared settings go to each command that takes them: rewrite takes no --negatives.
    assert "--negatives" not in rewrite.argv
    assert run.argv[run.argv.index("--negatives") + 1] == "keep"
    assert rewrite.argv[rewrite.argv.index("--domain") :][:3] == ("--domain", "gis", "physics")


def test_the_example_file_is_a_valid_pipeline() -> None:
    plan = read_plan(ROOT / "examples" / "pipeline.toml", PARSERS)
    assert [s.command for s in plan.stages] == ["rewrite", "run", "run", "fuse", "rerank"]
    docs = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    example = (ROOT / "examples" / "pipeline.toml").read_text(encoding="utf-8")
    blocks = re.findall(r"```toml\n(.*?)```", docs, re.S)
    assert any(block.strip() in example for block in blocks)  # the documented example is it


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[stages.a]\ncommand = "index"\n', "stage 'a' runs no known command"),
        ('[stages.a]\ncommand = "rerank"\nrun = "b"\nreranker = "x"\n', "run names no stage"),
        ('[stages.a]\ncommand = "rerank"\nreranker = "x"\n', "names no 'run'"),
        (
            '[stages.a]\ncommand = "rerank"\nrun = "b"\nreranker = "x"\n'
            '[stages.b]\ncommand = "rerank"\nrun = "a"\nreranker = "x"\n',
            "reads its own output; found a -> b -> a",
        ),
        ('[stages.a]\ncommand = "run"\nretriever = "bm25"\ndepth = 5\n', "takes no option 'depth'"),
        ('[stages.a]\ncommand = "run"\nretriever = "bm25"\ntask = 1\n', "takes no option 'task'"),
        ('[stages.a]\ncommand = "run"\nretriever = "bm25"\nk = "many"\n', "invalid int value"),
        ('[stages.a]\ncommand = "run"\nretriever = "bm25"\nmteb = 1\n', "mteb is a switch"),
        (
            '[stages.a]\ncommand = "rewrite"\nllm = "m"\n[stages.b]\ncommand = "rerank"\n'
            'run = "a"\nreranker = "x"\n',
            "run reads the output of run or rerank or fuse",
        ),
        ('[stages."a b"]\ncommand = "run"\n', "cannot name a folder"),
        ("[stages]\n", "no stage"),
        ('[stage.a]\ncommand = "run"\n', "unknown table [stage]"),
    ],
)
def test_a_stage_that_cannot_run_is_refused_in_one_line_naming_file_and_stage(
    tmp_path: Path, text: str, said: str
) -> None:
    with pytest.raises(InputError) as caught:
        plan_of(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "p.toml")) and said in message
    assert "\n" not in message


def test_a_file_that_is_not_toml_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("[pipeline\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"p.toml: not a TOML file: .*line 1"):
        read_plan(path, PARSERS)
