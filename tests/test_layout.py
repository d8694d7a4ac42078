"""Small pieces: no module of either package over 400 lines, no function over 60.

Read with ``ast`` so that the limits count what a reader meets: a function's lines run from its
first decorator to its last statement, docstring included.
"""

from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parent.parent / "operator"
# Both packages: the runtime and the offline code beside it, held to the same limits.
PACKAGE = OPERATOR / "bottleneck_operator"
OFFLINE = OPERATOR / "bottleneck_operator_dev"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# Modules over the limit while they are being split (paths relative to operator/).
PENDING_SPLIT: set[str] = set()
# Functions over the limit while they are being split ("module:function").
PENDING_FUNCTIONS: set[str] = set()


def _modules() -> list[Path]:
    return sorted([*PACKAGE.rglob("*.py"), *OFFLINE.rglob("*.py")])


def _name(path: Path) -> str:
    return path.relative_to(OPERATOR).as_posix() if path.is_relative_to(OPERATOR) else path.name


def _functions(path: Path) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]]:
    """Every function (methods and nested ones too) with its length in lines."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        (node, (node.end_lineno or node.lineno) - min([node.lineno, *(d.lineno for d in node.decorator_list)]) + 1)
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    ]


def _long_functions(path: Path) -> list[str]:
    found = []
    for node, length in _functions(path):
        if length > MAX_FUNCTION_LINES and f"{_name(path)}:{node.name}" not in PENDING_FUNCTIONS:
            found.append(f"{_name(path)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_package_is_found() -> None:
    # The limits below would hold vacuously over an empty list.
    assert len(_modules()) > 100 and (PACKAGE / "cli.py").exists() and (OFFLINE / "simulation").is_dir()


def test_no_module_is_over_the_limit() -> None:
    long = {
        _name(p): n
        for p in _modules()
        if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES and _name(p) not in PENDING_SPLIT
    }
    assert long == {}


def test_no_function_is_over_the_limit() -> None:
    long = [f for p in _modules() for f in _long_functions(p)]
    assert long == []


def test_the_allow_lists_are_not_stale() -> None:
    # An entry for a module or function that is gone or already short enough hides nothing: drop it.
    stale = [
        name
        for name in PENDING_SPLIT
        if not (OPERATOR / name).exists() or len((OPERATOR / name).read_text().splitlines()) <= MAX_MODULE_LINES
    ]
    for entry in PENDING_FUNCTIONS:
        module, function = entry.split(":")
        path = OPERATOR / module
        lengths = [n for node, n in _functions(path) if node.name == function] if path.exists() else []
        if not any(length > MAX_FUNCTION_LINES for length in lengths):
            stale.append(entry)
    assert stale == []


def test_the_counter_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    sample = tmp_path / "sample.py"
    sample.write_text(f"import functools\n\n\n@functools.cache\ndef long() -> None:\n{body}\n")
    assert len(_long_functions(sample)) == 1
