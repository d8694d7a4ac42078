"""The allocator settings the container image gives the operator, read from the Dockerfile.

The benchmarks run the operator (and time feature extraction) under the same glibc settings as the
image does, from the one place they are written.
"""

from __future__ import annotations

import re
from pathlib import Path

DOCKERFILE = Path(__file__).resolve().parent.parent / "Dockerfile"


def image_malloc_env(dockerfile: Path = DOCKERFILE) -> dict[str, str]:
    """The ``MALLOC_*`` variables the image's ``ENV`` instructions set."""
    text = dockerfile.read_text().replace("\\\n", " ")
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith("ENV "):
            found.update(re.findall(r"\b(MALLOC_\w+)=(\S+)", line))
    return found
