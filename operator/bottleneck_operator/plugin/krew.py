"""The archive krew installs: a POSIX shell launcher that runs this package's plugin.

The plugin is Python, so the archive holds no binary: its launcher finds a Python that has the
``bottleneck-operator`` package (``pip install bottleneck-operator``) and runs the plugin there.
The archive is built byte for byte the same every time (fixed times, owners and modes), so the
sha256 in ``plugins/bottleneck.yaml`` can be checked against it (a test does).

``python -m bottleneck_operator.plugin.krew DIR`` writes ``DIR/kubectl-bottleneck.tar.gz`` and prints
its sha256.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

ARCHIVE = "kubectl-bottleneck.tar.gz"
LAUNCHER = """\
#!/bin/sh
# kubectl-bottleneck as krew installs it: runs the plugin of the bottleneck-operator Python package.
# BOTTLENECK_PYTHON names the Python to use; else the first of python3, python that has the package.
for py in "${BOTTLENECK_PYTHON:-}" python3 python; do
  if [ -n "$py" ] && command -v "$py" >/dev/null 2>&1 && "$py" -c 'import bottleneck_operator.plugin.main' 2>/dev/null; then
    exec "$py" -m bottleneck_operator.plugin.main "$@"
  fi
done
echo "error: kubectl bottleneck needs the bottleneck-operator Python package: pip install bottleneck-operator" \\
  "(or set BOTTLENECK_PYTHON to a Python that has it)" >&2
exit 1
"""
LICENSE_NOTE = "bottleneck-operator is licensed under the Apache License 2.0.\n"


def _add(tar: tarfile.TarFile, name: str, text: str, mode: int) -> None:
    data = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), mode, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def archive_bytes() -> bytes:
    """The krew archive: the launcher and a licence note, reproducible byte for byte."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        _add(tar, "kubectl-bottleneck", LAUNCHER, 0o755)
        _add(tar, "LICENSE", LICENSE_NOTE, 0o644)
    out = io.BytesIO()
    with gzip.GzipFile(filename="", fileobj=out, mode="wb", mtime=0) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def sha256() -> str:
    """The archive's sha256, as the krew manifest states it."""
    return hashlib.sha256(archive_bytes()).hexdigest()


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    target.mkdir(parents=True, exist_ok=True)
    (target / ARCHIVE).write_bytes(archive_bytes())
    print(f"{target / ARCHIVE}  sha256 {sha256()}")
