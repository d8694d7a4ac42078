"""``python -m recordings [SCENARIO ...]``: record the scenarios (all by default); root only."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

from recordings.harness import Scenario, record

# What each scenario runs besides Prometheus and node-exporter.
NEEDS = {
    "interconnect": ("ip", "tc"),
    "objectstore": ("ip", "tc"),
    "gpu-objectstore": ("ip", "tc"),
    "gpu-objectstore-busy": ("ip", "tc"),
    "gpu-allreduce": ("ip", "tc"),
    "memory": ("mkswap", "swapon"),
    "gpu-memory": ("mkswap", "swapon"),
}


def scenarios(workroot: Path) -> dict[str, Scenario]:
    from recordings import cpu_quota, gpu_scenarios, interconnect_veth, io_limit, memory_swap, object_store

    return {
        "cpu": cpu_quota.SCENARIO,
        "loader": cpu_quota.FEW_WORKERS,
        "io": io_limit.scenario(),
        "memory": memory_swap.SCENARIO,
        "interconnect": interconnect_veth.SCENARIO,
        "objectstore": object_store.SCENARIO,
        **gpu_scenarios.scenarios(workroot),
    }


def _missing(names: list[str]) -> list[str]:
    needed = {"prometheus", "prometheus-node-exporter"}
    for name in names:
        needed.update(NEEDS.get(name, ()))
    return sorted(b for b in needed if not shutil.which(b))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m recordings", description=__doc__)
    ap.add_argument(
        "names", nargs="*", help="cpu, loader, io, objectstore, memory, interconnect (the default), or gpu-* (a GPU's)"
    )
    ap.add_argument("--seconds", type=float, default=150.0, help="length of each recorded window")
    ap.add_argument("--scrape", type=float, default=10.0, help="scrape interval of the recording Prometheus")
    ap.add_argument("--workdir", type=Path, default=Path("/var/tmp/bnr-recordings"))
    ns = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit(
            "make record needs root: it makes cgroups, a swapfile, network namespaces and tc qdiscs (run it with sudo)"
        )
    known = scenarios(ns.workdir)
    names = ns.names or [n for n in known if not known[n].real_gpu]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    missing = _missing(names)
    if missing:
        sys.exit(f"make record needs {', '.join(missing)} on PATH (make system-deps; iproute2; util-linux)")
    failed = []
    for name in names:
        print(f"recording {name} for {ns.seconds:.0f}s ...", flush=True)
        try:
            truth = record(known[name], seconds=ns.seconds, scrape=ns.scrape, workroot=ns.workdir)
        except Exception as exc:  # one scenario's failure (a missing GPU feature, say) keeps the others
            print(f"{name} failed: {exc}", file=sys.stderr, flush=True)
            failed.append(name)
            continue
        print(json.dumps({"scenario": name, **truth["measured"], **truth.get("gpu", {})}), flush=True)
    if failed:
        sys.exit(f"not recorded: {', '.join(failed)}")


if __name__ == "__main__":
    main()
