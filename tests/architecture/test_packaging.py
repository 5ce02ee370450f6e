"""The package's metadata reads without a warning from the setuptools it builds with.

``project.license`` as a TOML table (``{ text = "..." }``) is deprecated by setuptools 77 and
later, which want an SPDX expression string (PEP 639): ``pip install`` printed the warning.
"""

from __future__ import annotations

import warnings

import pytest
from locations import ROOT
from packaging.requirements import Requirement
from packaging.version import Version
from setuptools import __version__ as installed
from setuptools.config.pyprojecttoml import apply_configuration
from setuptools.dist import Distribution

PYPROJECT = ROOT / "pyproject.toml"


def test_the_license_is_an_spdx_expression_setuptools_reads_without_warning() -> None:
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        dist = apply_configuration(Distribution(), str(PYPROJECT))
    assert [str(w.message) for w in said if "license" in str(w.message)] == []
    assert dist.metadata.license_expression == "Apache-2.0"


def test_the_build_asks_for_a_setuptools_that_takes_the_spdx_form() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    build = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["build-system"]
    (setuptools,) = [Requirement(r) for r in build["requires"] if r.startswith("setuptools")]
    assert Version("77") in setuptools.specifier and Version("76.9") not in setuptools.specifier
    assert Version(installed) in setuptools.specifier
