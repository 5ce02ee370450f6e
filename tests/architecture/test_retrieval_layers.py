"""``retrieval/``'s parts stand in layers: no import climbs back up, between parts or inside one.

A part of a package is one of its modules or sub-packages (the package's ``__init__`` is one
more); a part sits above every part it imports. The order is computed from the imports
(``layering.layer_order``): where parts import one another in a circle, the order chosen is
the one in which the fewest imports climb, and those are listed. Every import counts, inside
functions and under ``TYPE_CHECKING`` too (``layering.import_graph``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from layering import NAME, PACKAGE, import_graph, layer_order

RETRIEVAL = f"{NAME}.retrieval"
PACKAGES = sorted(
    RETRIEVAL + "".join(f".{part}" for part in init.parent.relative_to(PACKAGE / "retrieval").parts)
    for init in (PACKAGE / "retrieval").rglob("__init__.py")
)


def _short(part: str) -> str:
    return part.rpartition(".")[2]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_climbs_back_up_between_the_packages_parts(package: str) -> None:
    layers, climbing = layer_order(import_graph(), package)
    order = " < ".join("/".join(map(_short, layer)) for layer in layers)
    assert climbing == [], f"in {package} ({order}), these climb back up: {climbing}"


def test_the_records_and_the_contract_sit_below_every_backend() -> None:
    layers, _ = layer_order(import_graph(), RETRIEVAL)
    level = {_short(part): index for index, layer in enumerate(layers) for part in layer}
    assert level["backend_table"] == level["base"] == 0
    assert level["dual"] < level["backends"] < level["catalogue"] < level["runner"]


def test_the_order_leaves_the_fewest_imports_climbing(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    for folder in ("low", "high"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "__init__.py").write_text("", encoding="utf-8")
    (root / "base.py").write_text("", encoding="utf-8")
    # high imports low twice, low imports high once (lazily): low is the lower part.
    (root / "high" / "a.py").write_text("from pkg.low import b\nimport pkg.base\n")
    (root / "high" / "c.py").write_text("from ..low.b import B\n")
    (root / "low" / "b.py").write_text("def f():\n    from pkg.high import c\n")
    layers, climbing = layer_order(import_graph(root, "pkg"), "pkg")
    assert layers == [["pkg", "pkg.base", "pkg.low"], ["pkg.high"]]
    assert climbing == ["pkg.low.b -> pkg.high.c"]
    inside, none = layer_order(import_graph(root, "pkg"), "pkg.high")
    assert inside == [["pkg.high", "pkg.high.a", "pkg.high.c"]] and none == []
