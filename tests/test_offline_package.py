"""The offline package stays out of the runtime: `run` loads none of it, and without it the offline
commands say what to install instead of failing with a traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OPERATOR = ROOT / "operator"
OFFLINE = "bottleneck_operator_dev"

# Imports every runtime module (as the image holds them), then parses `run --help` as the entry point
# does, and prints which offline modules got loaded along the way.
LOAD_THE_RUNTIME = f"""
import importlib, pkgutil, sys
import bottleneck_operator
from bottleneck_operator.cli import main
for info in pkgutil.walk_packages(bottleneck_operator.__path__, "bottleneck_operator."):
    if not info.name.endswith("__main__"):
        importlib.import_module(info.name)
try:
    main(["run", "--help"])
except SystemExit as exc:
    assert exc.code == 0, exc.code
print(sorted(m for m in sys.modules if m.split(".")[0] == "{OFFLINE}"))
"""


def _run(code: str, *, path: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    # With `path`, the operator directory of the checkout (and with it the offline package) is
    # taken off sys.path and `path` put first: an installation of the runtime package alone.
    prelude = ""
    if path is not None:
        prelude = (
            "import sys, pathlib\n"
            f"sys.path[:] = {path!r} + [p for p in sys.path if p and pathlib.Path(p).resolve() != "
            f"pathlib.Path({str(OPERATOR)!r}).resolve()]\n"
        )
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_run_path_loads_no_offline_module() -> None:
    result = _run(LOAD_THE_RUNTIME)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_check_sees_an_offline_module_when_one_is_loaded() -> None:
    result = _run(f"import {OFFLINE}.commands\n" + LOAD_THE_RUNTIME)
    assert result.returncode == 0, result.stderr
    assert f"'{OFFLINE}.commands'" in result.stdout


@pytest.fixture(scope="module")
def runtime_alone(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A directory holding the runtime package and nothing of the offline one, as the image does."""
    where = tmp_path_factory.mktemp("runtime")
    shutil.copytree(
        OPERATOR / "bottleneck_operator", where / "bottleneck_operator", ignore=shutil.ignore_patterns("__pycache__")
    )
    return str(where)


def test_the_runtime_alone_runs_and_loads_no_offline_module(runtime_alone: str) -> None:
    result = _run(LOAD_THE_RUNTIME, path=[runtime_alone])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", ["demo", "simulate", "train", "evaluate"])
def test_an_offline_command_without_the_offline_package_says_what_to_install(runtime_alone: str, command: str) -> None:
    code = (
        "import bottleneck_operator\n"
        f"assert bottleneck_operator.__file__.startswith({runtime_alone!r}), bottleneck_operator.__file__\n"
        "from bottleneck_operator.cli import main\n"
        f"raise SystemExit(main(['-v', {command!r}, '--seed', '1']))\n"
    )
    result = _run(code, path=[runtime_alone])
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"bottleneck-operator {command}: error: `{command}` is an offline command" in result.stderr
    assert OFFLINE in result.stderr and "make venv" in result.stderr
    assert "Traceback" not in result.stderr


def test_the_help_lists_the_offline_commands_without_loading_them(runtime_alone: str) -> None:
    code = (
        "import sys\nfrom bottleneck_operator.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit as exc:\n    assert exc.code == 0\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] == {OFFLINE!r}))\n"
    )
    result = _run(code, path=[runtime_alone])
    assert result.returncode == 0, result.stderr
    assert all(name in result.stdout for name in ("demo", "simulate", "train", "evaluate", "analyze"))
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_an_offline_command_from_a_checkout_parses_its_own_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from bottleneck_operator.cli import main

    # --duration 0 is the demo's own usage error: its real parser and checks ran, not a placeholder's.
    assert main(["demo", "--duration", "0"]) == 2
    assert "--duration and --interval must be > 0" in capsys.readouterr().err
