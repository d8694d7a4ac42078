"""A world draws the same Jobs for a seed in every process.

Python salts the hash of a string per process, so iterating a set of names (or of string enums) can
change order from one run to the next; a generator that draws random numbers in that order then gives
another world each time, and a figure printed by a bench could not be run again. Two processes with
different hash salts must draw every listed world alike.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

DIGESTS = """
import hashlib
from bottleneck_operator_dev.worlds import WORLDS, world_windows
for letter in WORLDS:
    labels, windows = world_windows(letter, 12, 3)
    h = hashlib.sha256()
    for y, w in zip(labels, windows):
        h.update(y.value.encode())
        for p in w.pods:
            for k in sorted(p.signals):
                h.update(k.encode())
                h.update(p.signals[k].tobytes())
    print(letter, h.hexdigest())
"""


def _digests(hash_seed: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run([sys.executable, "-c", DIGESTS], env=env, check=True, capture_output=True, text=True)
    return dict(line.split() for line in out.stdout.splitlines())


@pytest.mark.slow
def test_every_world_draws_the_same_jobs_whatever_the_string_hash_salt() -> None:
    first, second = _digests("1"), _digests("2")
    assert len(first) >= 30  # every listed world was drawn
    differ = sorted(w for w in first if first[w] != second[w])
    assert not differ, f"worlds whose Jobs depend on the process's string-hash salt: {differ}"
