"""Debian's headless Chromium, run once per question: a screenshot of a page, or its DOM after load."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

SKIP_REASON = "Debian's chromium is not installed: run `make test` (it installs it) or scripts/ensure-system-deps.sh"
# Everything that would reach a network on start-up is off, so the page is the only thing loaded.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)
TIMEOUT_S = 60


def chromium_binary() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip(SKIP_REASON)
    return path


def _run(page: Path, *extra: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [chromium_binary(), *FLAGS, f"--user-data-dir={profile}", *extra, page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=cwd,
            check=False,
        )


def screenshot(page: Path, png: Path, *, width: int = 1200, height: int = 2400) -> Path:
    """A PNG of the page at the given window size."""
    result = _run(page, f"--screenshot={png.resolve()}", f"--window-size={width},{height}", cwd=png.parent)
    assert png.exists(), f"chromium wrote no screenshot (rc {result.returncode}): {result.stderr[-2000:]}"
    return png


def dump_dom(page: Path) -> str:
    """The page's DOM after load, serialised."""
    result = _run(page, "--dump-dom", cwd=page.parent)
    assert result.returncode == 0 and "<html" in result.stdout, result.stderr[-2000:]
    return result.stdout
