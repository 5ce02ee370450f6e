"""A stored domain is reused only when its record equals the run's and all its files exist."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mmbright_core.retrieval import get_retriever
from mmbright_core.retrieval.runner import run_task
from mmbright_core.retrieval.stored import DOMAIN_FILES, reuse_domain


def test_a_domain_is_reused_under_its_own_config_only(source, tmp_path: Path):
    outcome = run_task(source, 2, get_retriever("bm25"), tmp_path)
    first = outcome.domains[0]
    stored = reuse_domain(outcome.task_dir, first.domain, outcome.config, DOMAIN_FILES)
    assert stored is not None and stored.reused
    assert (stored.run, stored.metrics) == (first.run, first.metrics)
    other = dataclasses.replace(outcome.config, k=outcome.config.k - 1)
    assert reuse_domain(outcome.task_dir, first.domain, other, DOMAIN_FILES) is None


def test_a_domain_missing_a_file_it_should_hold_is_run_again(source, tmp_path: Path):
    outcome = run_task(source, 2, get_retriever("bm25"), tmp_path)
    domain = outcome.domains[0].domain
    names = (*DOMAIN_FILES, "ocr.json")  # a retriever that records OCR words writes it too
    assert reuse_domain(outcome.task_dir, domain, outcome.config, names) is None
