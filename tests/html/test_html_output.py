"""Every page is written by one function with one error: a usage error naming the file, exit code 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bottleneck_operator.errors import EXIT_USAGE, UsageError
from bottleneck_operator.html import PageNotWritten, write_html, write_summary_html

STATUS = {"bottleneck": "IO", "confidence": 0.7, "phase": "Running"}
SUMMARY = {"jobs": 3, "gpuHours": 12.5, "byClass": {"IO": 2, "GPU": 1}}

Writer = Callable[[Path], Path]
WRITERS: dict[str, Writer] = {
    "report": lambda path: write_html(STATUS, path, name="ml/train"),
    "summary": lambda path: write_summary_html(SUMMARY, path),
}


@pytest.mark.parametrize("kind", sorted(WRITERS))
def test_a_page_is_written_and_its_path_returned(kind: str, tmp_path: Path) -> None:
    path = tmp_path / f"{kind}.html"
    assert WRITERS[kind](path) == path
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("kind", sorted(WRITERS))
@pytest.mark.parametrize("where", ["missing-dir/page.html", "."])
def test_an_unwritable_path_is_one_usage_error(kind: str, where: str, tmp_path: Path) -> None:
    path = tmp_path / where
    with pytest.raises(PageNotWritten) as caught:
        WRITERS[kind](path)
    err = caught.value
    assert isinstance(err, UsageError) and err.exit_code == EXIT_USAGE
    assert str(err).startswith(f"--html: cannot write {path}: ") and isinstance(err.__cause__, OSError)
    assert "Errno" not in str(err)  # the system's reason in words, not the exception's repr
    assert not (tmp_path / "missing-dir").exists()
