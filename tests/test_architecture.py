"""docs/architecture.md's package tables say what each part imports: checked against the code.

Each row's "imports" column is compared, both ways, with the first-party imports that ``ast`` finds
in the part's modules (lazy imports inside functions included), so the page cannot drift.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
RUNTIME, OFFLINE = "bottleneck_operator", "bottleneck_operator_dev"
PACKAGES = (RUNTIME, OFFLINE)
# The package's own __init__ holds the version, which every part may read: it is not a part.
NOT_PARTS = {"__init__"}


def part_names(package: str) -> set[str]:
    """The parts of a package: its subpackages and top-level modules."""
    base = ROOT / "operator" / package
    parts = {p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    parts |= {p.stem for p in base.glob("*.py")}
    return parts - NOT_PARTS


def _imported_modules(path: Path, module: str) -> set[str]:
    """Every absolute module name a file imports; `from X import name` counts as X.name too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: -node.level]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _label(package: str, imported: str) -> str | None:
    """How `package`'s table names the part that `imported` belongs to (None: no part)."""
    words = imported.split(".")
    if words[0] not in PACKAGES or len(words) < 2 or words[1] not in part_names(words[0]):
        return None
    return words[1] if words[0] == package else f"{words[0]}.{words[1]}"


def actual_imports(package: str, parts: set[str]) -> set[str]:
    """The parts of either package that the modules of `parts` import, outside `parts` themselves."""
    base = ROOT / "operator" / package
    found: set[str] = set()
    for part in parts:
        files = sorted((base / part).rglob("*.py")) if (base / part).is_dir() else [base / f"{part}.py"]
        for path in files:
            module = ".".join((package, *path.relative_to(base).with_suffix("").parts))
            for imported in _imported_modules(path, module):
                label = _label(package, imported)
                if label is not None:
                    found.add(label)
    return found - parts


def tables(text: str) -> dict[str, dict[frozenset[str], set[str]]]:
    """Each package's table: the row's parts → the parts its "imports" column names."""
    result: dict[str, dict[frozenset[str], set[str]]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"`operator/(\w+)/`.*", line.strip())
        if heading:
            current = heading.group(1)
            result[current] = {}
        elif current and line.startswith("| `"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            parts = frozenset(re.sub(r"/$|\.py$", "", name) for name in re.findall(r"`([^`]+)`", cells[0]))
            result[current][parts] = set(re.findall(r"`([^`]+)`", cells[-1]))
        elif current and result[current] and not line.startswith("|"):
            current = None
    return result


@pytest.fixture(scope="module")
def documented() -> dict[str, dict[frozenset[str], set[str]]]:
    return tables(DOC.read_text())


def test_both_packages_have_a_table(documented: dict[str, dict[frozenset[str], set[str]]]) -> None:
    assert set(documented) == set(PACKAGES)
    assert len(documented[RUNTIME]) > 10 and len(documented[OFFLINE]) >= 4


@pytest.mark.parametrize("package", PACKAGES)
def test_every_part_has_one_row(documented: dict[str, dict[frozenset[str], set[str]]], package: str) -> None:
    rows = [part for row in documented[package] for part in row]
    assert sorted(rows) == sorted(part_names(package))


@pytest.mark.parametrize("package", PACKAGES)
def test_each_row_names_exactly_what_its_part_imports(
    documented: dict[str, dict[frozenset[str], set[str]]], package: str
) -> None:
    wrong = {}
    for parts, claimed in documented[package].items():
        actual = actual_imports(package, set(parts))
        if claimed != actual:
            wrong[", ".join(sorted(parts))] = {
                "documented, not imported": sorted(claimed - actual),
                "imported, not documented": sorted(actual - claimed),
            }
    assert wrong == {}


def test_the_package_s_own_init_imports_nothing_of_it() -> None:
    # It is left out of the tables; an import there would go unseen.
    for package in PACKAGES:
        path = ROOT / "operator" / package / "__init__.py"
        assert not [m for m in _imported_modules(path, package) if m.split(".")[0] in PACKAGES]


def test_the_check_sees_a_wrong_row() -> None:
    text = DOC.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `pipeline.py` |"))
    # A row that leaves out an import, and one that names an import the code lacks: both found.
    short = tables(text.replace(row, row.replace("`analysis`, ", "")))[RUNTIME][frozenset({"pipeline"})]
    assert short != actual_imports(RUNTIME, {"pipeline"}) and "analysis" in actual_imports(RUNTIME, {"pipeline"})
    extra = tables(text.replace(row, row.replace("`analysis`, ", "`analysis`, `kube`, ")))[RUNTIME]
    assert extra[frozenset({"pipeline"})] - actual_imports(RUNTIME, {"pipeline"}) == {"kube"}


def test_imports_are_read_through_lazy_and_relative_forms(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f() -> None:\n    from bottleneck_operator import errors\n"
        "from . import settings\nfrom ..contract import times\nimport bottleneck_operator_dev.simulation.jobs\n"
    )
    found = _imported_modules(sample, "bottleneck_operator.controller.sample")
    assert {"bottleneck_operator.errors", "bottleneck_operator.controller.settings"} <= found
    assert "bottleneck_operator.contract.times" in found and "bottleneck_operator_dev.simulation.jobs" in found
    assert _label(RUNTIME, "bottleneck_operator_dev.simulation.jobs") == f"{OFFLINE}.simulation"
