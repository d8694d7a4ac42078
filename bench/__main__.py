"""Run every benchmark and print its figures: ``python -m bench [name ...]``.

Each ``bench/bench_<area>.py`` exposes ``main()``; one failing benchmark is reported and the rest still run.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path

ORDER = [
    "blind", "devworlds", "simulator", "telemetry", "layouts", "analysis", "crossfamily", "operator", "bounded", "retained", "sidecar",
    "webhook", "soak",
]  # fmt: skip


def _available() -> list[str]:
    found = sorted(p.stem.removeprefix("bench_") for p in Path(__file__).parent.glob("bench_*.py"))
    return [n for n in ORDER if n in found] + [n for n in found if n not in ORDER]


def main(argv: list[str]) -> int:
    names = argv or _available()
    failed = []
    for name in names:
        print(f"\n=== bench {name} ===", flush=True)
        started = time.perf_counter()
        try:
            importlib.import_module(f"bench.bench_{name}").main()
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"--- bench {name}: {time.perf_counter() - started:.1f} s", flush=True)
    if failed:
        print(f"\nbenchmarks that failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
