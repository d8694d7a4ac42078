"""``python -m recordings [SCENARIO ...]``: record the scenarios (all by default); root only."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from recordings.harness import Scenario, record


def scenarios() -> dict[str, Scenario]:
    from recordings import cpu_quota, interconnect_veth, io_limit, memory_swap

    return {
        "cpu": cpu_quota.SCENARIO,
        "io": io_limit.scenario(),
        "memory": memory_swap.SCENARIO,
        "interconnect": interconnect_veth.SCENARIO,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m recordings", description=__doc__)
    ap.add_argument("names", nargs="*", help="cpu, io, memory, interconnect (default: all)")
    ap.add_argument("--seconds", type=float, default=150.0, help="length of each recorded window")
    ap.add_argument("--scrape", type=float, default=10.0, help="scrape interval of the recording Prometheus")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp/bnr-recordings"))
    ns = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit(
            "make record needs root: it makes cgroups, a swapfile, network namespaces and tc qdiscs (run it with sudo)"
        )
    missing = [
        b for b in ("prometheus", "prometheus-node-exporter", "ip", "tc", "mkswap", "swapon") if not shutil.which(b)
    ]
    if missing:
        sys.exit(f"make record needs {', '.join(missing)} on PATH (make system-deps; iproute2; util-linux)")
    known = scenarios()
    unknown = [n for n in ns.names if n not in known]
    if unknown:
        sys.exit(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    for name in ns.names or list(known):
        print(f"recording {name} for {ns.seconds:.0f}s ...", flush=True)
        truth = record(known[name], seconds=ns.seconds, scrape=ns.scrape, workroot=ns.workdir)
        print(json.dumps({"scenario": name, **truth["measured"]}), flush=True)


if __name__ == "__main__":
    main()
