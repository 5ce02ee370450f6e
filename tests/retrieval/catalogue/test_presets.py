"""The model catalogue: consistency, preset resolution, ``mmbright models``, docs/models.md."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

import pytest
from locations import ROOT

from mmbright_core.analysis.leaderboard import load_reference
from mmbright_core.cli import main
from mmbright_core.errors import InputError, UnknownNameError
from mmbright_core.retrieval.backend_table import PRESET_BACKENDS
from mmbright_core.retrieval.backends.instructions import INSTRUCTION_SETS, fill_domain
from mmbright_core.retrieval.catalogue import presets as catalogue
from mmbright_core.retrieval.catalogue.doc import main as write_models_page
from mmbright_core.retrieval.catalogue.doc import models_markdown
from mmbright_core.retrieval.catalogue.preset_run import Resolved, resolve
from mmbright_core.retrieval.catalogue.presets import (
    FUSIONS,
    Published,
    check_catalogue,
    get_preset,
    load_catalogue,
    presets,
)
from mmbright_core.retrieval.registry import _accepted_options, _factory


def test_at_least_twenty_open_weight_models_of_tasks_1_and_2():
    open_weight = [p for p in load_catalogue() if p.backend != "api" and set(p.tasks) & {1, 2}]
    assert len(open_weight) >= 20
    assert {p.name for p in load_catalogue() if p.backend == "api"} == {
        "openai",
        "cohere",
        "voyage",
        "google",
    }


def test_every_paper_number_of_reference_json_has_a_preset_with_that_number():
    claimed = {(n.task, n.model, n.value) for p in load_catalogue() for n in p.published}
    paper = {(r.task, r.model, r.value) for r in load_reference() if r.source == "paper"}
    assert paper <= claimed
    assert claimed <= paper


def test_a_published_number_is_stored_once_in_reference_json():
    """The catalogue names each number by task and model; its value lives in reference.json."""
    packaged = ROOT / "mmbright_core"
    records = json.loads(
        (packaged / "retrieval" / "catalogue" / "catalogue.json").read_text("utf-8")
    )
    named = [number for preset in records["presets"] for number in preset["published"]]
    assert named and all(set(number) == {"task", "model"} for number in named)
    assert sorted(p.name for p in packaged.rglob("reference.json")) == ["reference.json"]


def test_a_preset_naming_a_number_the_reference_lacks_fails_the_load():
    record = json.loads(
        (ROOT / "mmbright_core" / "retrieval" / "catalogue" / "catalogue.json").read_text()
    )
    preset = dict(record["presets"][0], published=[{"task": 1, "model": "No-Such-Model"}])
    with pytest.raises(InputError, match=r"not in reference\.json.*No-Such-Model"):
        catalogue._preset(preset, catalogue._paper_numbers())


def test_every_preset_names_known_choices():
    for preset in load_catalogue():
        assert preset.backend in PRESET_BACKENDS and preset.fusion in FUSIONS
        assert set(preset.tasks) <= {1, 2, 3, 4}
        assert set(preset.instruction_sets()) <= set(INSTRUCTION_SETS)
        assert preset.trust_remote_code == (preset.offline == "hub-code")


#: How a pin cites MTEB's model registry: its version, the entry's name and the file defining it.
REGISTRY_PIN = re.compile(
    r"mteb (?P<version>[\d.]+) model registry: (?P<name>\S+) \((?P<file>mteb/[\w/]+\.py)\)"
)


def test_every_pin_is_the_commit_mtebs_own_registry_lists_for_the_model():
    """No invented hash: each pin is read back from the registry it cites, entry and file."""
    mteb = pytest.importorskip("mteb")
    pinned = [p for p in load_catalogue() if p.revision is not None]
    assert len(pinned) >= 19
    for preset in pinned:
        cited = REGISTRY_PIN.match(preset.revision_source)
        assert cited, (preset.name, preset.revision_source)
        # The hub's repository ids are case-insensitive (reasonir/ReasonIR-8B).
        assert cited["name"].lower() == str(preset.model).lower(), preset.name
        assert mteb.get_model_meta(cited["name"]).revision == preset.revision, preset.name
        defined = (Path(mteb.__file__).parent.parent / cited["file"]).read_text("utf-8")
        assert preset.revision in defined and f'"{cited["name"]}"' in defined, preset.name


def test_a_model_left_unpinned_says_why_and_is_one_mtebs_registry_lacks():
    mteb = pytest.importorskip("mteb")
    for preset in load_catalogue():
        if preset.revision is not None:
            continue
        if preset.model is None:
            assert preset.revision_source.startswith("no model"), preset.name
        elif preset.backend == "api":
            assert preset.revision_source.startswith("not a hub model: "), preset.name
        else:
            assert preset.revision_source.startswith(f"unpinned: {preset.model} is not in MTEB")
            with pytest.raises(KeyError):
                mteb.get_model_meta(preset.model)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"backend": "faiss"}, "unknown backend"),
        ({"fusion": "sum"}, "unknown fusion"),
        ({"tasks": (5,)}, "unknown task"),
        ({"published": (Published(1, "Contriever", 20.2),)}, "not in reference.json"),
        ({"instructions": {}}, "no official instructions"),
        ({"revision": "main"}, "a revision that is not a commit"),
        ({"revision": "ABE8C1493371369031BCB1E02ACB754CF4E162FA"}, "not a commit"),
        ({"revision_source": " "}, "no revision_source"),
    ],
)
def test_an_inconsistent_preset_fails_the_check(change, message):
    broken = dataclasses.replace(get_preset("contriever"), **change)
    with pytest.raises(InputError, match=message):
        check_catalogue([*load_catalogue()[:3], broken])


def test_a_duplicate_name_fails_the_check():
    with pytest.raises(InputError, match="duplicate preset"):
        check_catalogue([get_preset("bm25"), get_preset("bm25")])


def test_an_unknown_preset_suggests_close_names():
    with pytest.raises(UnknownNameError, match="did you mean 'contriever'"):
        get_preset("contrievr")


def test_presets_of_a_task():
    assert {p.name for p in presets(3)} == {
        "clip",
        "siglip",
        "jina-clip",
        "nomic-vision",
        "bge-vl-large",
        "gme-qwen2-vl-2b",
        "gme-qwen2-vl-7b",
    }


def _runs(preset, task, name):
    """The resolution of a preset (with the opt-in where it runs hub code, MTEB's way too)."""
    if preset.trust_remote_code:
        with pytest.raises(InputError, match=r"own code from the hub.*--trust-remote-code"):
            resolve(preset, task, name)
        chosen = resolve(preset, task, name, trust_remote_code=True)
        assert chosen.options["trust_remote_code"] is True
        return chosen
    return resolve(preset, task, name)


def _resolutions():
    """Every preset, task and instruction set it has, with what it resolves to.

    Each listed set is resolved as a run resolves it (``mteb``: MTEB's registry entry read and
    checked), so a set ``mmbright models`` offers but no run can take fails here.
    """
    for preset in load_catalogue():
        for task in preset.tasks:
            for name in preset.instruction_sets():
                yield preset, task, name, _runs(preset, task, name)


def test_every_preset_resolves_for_every_task_and_instruction_set():
    for preset, _task, name, chosen in _resolutions():
        assert (chosen.preset, chosen.instructions) == (preset.name, name)
        if name == "mteb":
            assert chosen.retriever == "mteb"
            assert chosen.options["model"] == preset.mteb_model
            continue
        assert chosen.retriever == preset.backend
        texts = preset.instructions_for(name)
        options = chosen.options
        if preset.backend == "dense":
            # Instructor pools without its instruction, which must then come as a prompt.
            kind = "prompt" if "pooling_include_prompt" in preset.options else "prefix"
            assert options[f"query_{kind}"] == texts.query
            assert options[f"document_{kind}"] == texts.document
            assert options["model"] == preset.model
        elif preset.backend in ("hf", "api", "hub-code", "gritlm"):
            assert options["query_instruction"] == texts.query
            assert options["document_instruction"] == texts.document
            assert options["model"] == preset.model
        if preset.backend == "hub-code":
            assert options["interface"] == preset.interface
        if preset.backend in ("hf", "hub-code", "gritlm"):
            assert options.get("pooling") == preset.pooling
            assert options.get("max_length") == preset.max_length
        assert ("image_policy" in options) == preset.multimodal
        assert all(options[k] == v for k, v in preset.options.items())


def test_every_resolved_option_is_one_the_backend_takes():
    # A preset's options reach the backend's factory: a name it lacks fails every run.
    checked = 0
    for preset, task, name, chosen in _resolutions():
        accepted = _accepted_options(_factory(chosen.retriever))
        assert accepted is not None, chosen.retriever
        assert set(chosen.options) <= accepted, (preset.name, task, name)
        checked += 1
    assert checked > 40


def test_a_preset_in_the_hubs_code_is_refused_in_one_line(capsys):
    args = ["run", "--source", "demo", "--domain", "gis", "--task", "2", "--out", "unused"]
    assert main([*args, "--model-preset", "jina-clip"]) == 2
    err = capsys.readouterr().err
    assert "--trust-remote-code" in err and err.count("\n") == 1
    # MTEB's implementation runs the same hub code: it is no way around the opt-in.
    assert "--instructions mteb" not in err


def test_grit_runs_the_gritlm_package_and_mtebs_implementation_on_request():
    grit = get_preset("grit")
    official = resolve(grit, 1, trust_remote_code=True)
    assert official.retriever == "gritlm"
    assert official.options == {
        "model": "GritLM/GritLM-7B",
        "revision": "13f00a0e36500c80ce12870ea513846a066004af",  # MTEB's registry's
        "max_length": 2048,
        "query_max_length": 256,
        "query_instruction": "",
        "document_instruction": "",
        "dtype": "auto",
        "batch_size": 1,
        "trust_remote_code": True,
    }
    # MTEB's implementation runs the model's hub code too: the same opt-in.
    with pytest.raises(InputError, match="without --trust-remote-code"):
        resolve(grit, 1, "mteb")
    mtebs = resolve(grit, 1, "mteb", trust_remote_code=True)
    assert mtebs.options == {"model": "GritLM/GritLM-7B", "trust_remote_code": True}


def test_a_listed_mteb_set_that_mtebs_backend_refuses_fails_resolution():
    # MTEB registers contriever-msmarco with dot-product similarity: the mteb backend
    # refuses it, so offering the set would offer a run that cannot start.
    scored_by_dot = dataclasses.replace(
        get_preset("contriever"), mteb_model="facebook/contriever-msmarco"
    )
    assert "mteb" in scored_by_dot.instruction_sets()
    with pytest.raises(InputError, match="not a dense encoder scored by cosine"):
        resolve(scored_by_dot, 1, "mteb")


def test_resolution_gives_the_official_texts():
    assert get_preset("nomic-vision").instructions_for("official").query == "search_query: "
    diver = resolve(get_preset("diver-retriever"), 1).options
    assert (diver["query_instruction"], diver["document_instruction"]) == (
        "",
        "Represent this text:",
    )
    e5 = resolve(get_preset("e5"), 1).options
    assert e5["query_instruction"] == "" and e5["pooling"] == "last-token"
    bright = resolve(get_preset("e5"), 1, "bright").options["query_instruction"]
    assert fill_domain(bright, "biology") == (
        "Instruct: Given a biology post, retrieve relevant passages that help answer the post"
        "\nQuery: "
    )
    # CLIP runs as the official retrieval_clip: transformers' CLIPModel, QuickGELU.
    assert resolve(get_preset("clip"), 2) == Resolved(
        "hf",
        {
            "model": "openai/clip-vit-large-patch14",
            "revision": "32bd64288804d66eefd0ccbe215aa642df71cc41",  # MTEB's registry's
            "max_length": 77,
            "query_instruction": "",
            "document_instruction": "",
            "image_policy": "first",
        },
        "clip",
        "official",
    )
    assert resolve(get_preset("bm25"), 1).options == {}


def test_diver_runs_in_the_dtype_vllms_auto_picks():
    # retrieval_qwen3_ft_diver runs vLLM's LLM(...) without a dtype: vLLM's "auto" keeps a
    # bfloat16 checkpoint in bfloat16 (MTEB's registry: 7,670 MB for 4.02 B parameters, two
    # bytes each); the hf backend's own default is float32.
    assert resolve(get_preset("diver-retriever"), 1).options["dtype"] == "bfloat16"


def test_resolution_refuses_what_the_preset_lacks():
    with pytest.raises(InputError, match="not run on task 2"):
        resolve(get_preset("bm25"), 2)
    with pytest.raises(InputError, match="no 'bright' instructions; expected one of official"):
        resolve(get_preset("contriever"), 1, "bright")
    with pytest.raises(InputError, match="no model in MTEB's registry"):
        resolve(get_preset("reasonir"), 1, "mteb")
    with pytest.raises(InputError, match="unknown instruction set"):
        resolve(get_preset("e5"), 1, "brite")


def test_models_table_lists_every_preset_with_its_published_number(capsys):
    assert main(["models"]) == 0
    shown, _, notes = capsys.readouterr().out.partition("\n\n")
    lines = shown.splitlines()
    assert lines[0].split()[:4] == ["preset", "paper", "model", "revision"]
    assert lines[0].split()[-1] == "upstream_bugs"
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {p.name for p in load_catalogue()}
    assert rows["jina-clip"].endswith(" T3") and rows["gme-qwen2-vl-7b"].endswith(" T4")
    assert rows["clip"].endswith(" -")
    assert "jina-clip, Task 3: The official retrieval_jina_clip_it2i calls Image.open" in notes
    assert "facebook/contriever-msmarco" in rows["contriever"]
    assert "T1 20.1" in rows["contriever"]
    assert str(get_preset("contriever").revision) in rows["contriever"]
    assert "unpinned" in rows["inst-l"]
    assert "T2 10.4 T3 33.6" in rows["clip"]


def test_models_table_says_each_revisions_source_and_every_departure(capsys):
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for preset in load_catalogue():
        assert f"\n{preset.name}: {preset.revision_source}\n" in out
        for note in preset.departures:
            assert f"\n{preset.name}: {note}\n" in out
    assert "\nsbert: mteb 2.26.24 model registry: sentence-transformers/all-mpnet-base-v2 (" in out
    assert "\ninst-l: unpinned: hkunlp/instructor-large is not in MTEB's model registry" in out
    assert "\nopenai: not a hub model: " in out


def test_every_preset_says_how_it_batches_on_the_page_and_the_command_line(capsys):
    assert main(["models"]) == 0
    shown, _, notes = capsys.readouterr().out.partition("\n\n")
    header, *lines = shown.splitlines()
    assert header.split()[-2:] == ["batch", "upstream_bugs"]
    rows = {line.split()[0]: line.split()[-2] for line in lines}  # the batch column
    page = models_markdown()
    for preset in load_catalogue():
        assert f"\n{preset.name}: {preset.batch_composition}\n" in notes
        assert f"\n- batching: {preset.batch_composition}\n" in page
    # The official runner never passes encode_batch_size (src/eval_runner.py), so
    # retrieval_sf_qwen_e5 encodes one text per call: these presets do too, and say so.
    for name in ("e5", "sf", "qwen", "qwen2"):
        assert get_preset(name).options["batch_size"] == 1 and rows[name] == "1"
        assert "encode_batch_size" in get_preset(name).batch_composition
    # The runner's batch_size=8 reaches the others: contriever's eight consecutive texts, and
    # one call over the whole list where the official code makes one (sentence-transformers'
    # encode, ReasonIR's own), whose batches the library or model code forms.
    for name in ("contriever", "sbert", "bge", "inst-l", "inst-xl", "nomic", "reasonir"):
        assert get_preset(name).options["batch_size"] == 8 and rows[name] == "8", name
        assert "batch_size=8" in get_preset(name).batch_composition, name
        one_call = get_preset(name).options.get("one_call", False)
        assert one_call == (name != "contriever"), name
    assert not any("batch" in note for note in get_preset("reasonir").departures)


def test_the_models_page_gives_each_revision_with_its_source():
    page = models_markdown()
    for preset in load_catalogue():
        shown = preset.revision_source
        if preset.revision is not None:
            shown = f"`{preset.revision}`, from the {preset.revision_source}"
        assert f"`{preset.model or '-'}`, revision: {shown}\n" in page, preset.name


#: Words of a note about the scale of the scores written: the preset's ``score_scale``.
SCALE_WORDS = re.compile(r"\b100 ?(x|×|times)\b|\bx ?100\b|score scale", re.IGNORECASE)


def test_no_departure_note_speaks_of_the_score_scale():
    """A preset writes its scores on the official scale (``score_scale``): no departure there."""
    for preset in load_catalogue():
        for note in preset.departures:
            assert not SCALE_WORDS.search(note), (preset.name, preset.score_scale, note)


def test_models_json_of_one_task(capsys):
    assert main(["models", "--task", "2", "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in records] == [p.name for p in presets(2)]
    gme = next(r for r in records if r["name"] == "gme-qwen2-vl-7b")
    assert gme["published"] == [{"task": 2, "model": "GME-7B", "value": 22.0}]
    assert gme["trust_remote_code"] is True and gme["fusion"] == "joint"
    assert gme["instruction_sets"] == ["official", "mteb", "none"]
    (bug,) = gme["upstream_bugs"]
    assert bug["task"] == 4 and "safe_img_path" in bug["effect"]


def test_upstream_bugs_are_named_on_the_presets_whose_published_number_they_change():
    affected = {(p.name, b.task) for p in load_catalogue() for b in p.upstream_bugs}
    assert affected == {
        ("jina-clip", 3),
        ("nomic-vision", 3),
        ("bge-vl-large", 4),
        ("gme-qwen2-vl-2b", 4),
        ("gme-qwen2-vl-7b", 4),
    }
    for preset in load_catalogue():
        for bug in preset.upstream_bugs:
            assert bug.task in preset.tasks
            assert f"upstream bug, Task {bug.task}: {bug.effect}" in models_markdown()


def test_docs_models_md_is_the_generated_page():
    committed = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    assert committed == models_markdown(), (
        "docs/models.md is stale: run python -m mmbright_core.retrieval.catalogue.doc"
    )


def test_the_generator_writes_the_page_through_the_atomic_writer(tmp_path, monkeypatch):
    # A root without docs/ yet: the atomic writer makes the folder, as for every output.
    monkeypatch.setattr(sys, "argv", ["catalogue_doc", str(tmp_path)])
    assert write_models_page() == 0
    assert (tmp_path / "docs" / "models.md").read_text(encoding="utf-8") == models_markdown()


def test_a_departure_note_never_describes_the_official_behaviour() -> None:
    """A departure always means a difference: no note says the preset does as the code does."""
    same = ("as in the official code", "as the official code does")
    for preset in load_catalogue():
        for note in preset.departures:
            assert not any(words in note for words in same), (preset.name, note)
