"""Names and tags: how the Job, its pods and its nodes are called, and what was drawn for it."""

from __future__ import annotations

import numpy as np

from bottleneck_operator_dev.familyaj.fleet import Placement
from bottleneck_operator_dev.familyaj.observe import Observation
from bottleneck_operator_dev.familyaj.scrape import Timeline

NAMESPACES = (
    "ml-research",
    "team-vision",
    "speech-lab",
    "llm-platform",
    "recsys",
    "robotics",
    "ads-ranking",
    "sandbox",
)
WORDS = ("aurora", "basalt", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "iris", "juniper", "kestrel",
         "lumen", "maple", "nimbus", "onyx", "pylon", "quartz", "raven", "sierra", "tundra", "umber", "vesper")  # fmt: skip
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"


def _suffix(rng: np.random.Generator, n: int = 5) -> str:
    return "".join(_ALNUM[int(k)] for k in rng.integers(0, len(_ALNUM), n))


def job_names(rng: np.random.Generator, pl: Placement) -> tuple[str, str, list[str], list[str]]:
    """Namespace, Job name, pod names and node names (drawn from their own stream)."""
    namespace = str(rng.choice(NAMESPACES))
    name = f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{_suffix(rng, 4)}"
    style = str(rng.choice(["batch", "pytorchjob", "jobset"]))
    if style == "batch":
        pods = [f"{name}-{k}-{_suffix(rng)}" for k in range(pl.pods)]
    elif style == "pytorchjob":
        pods = [f"{name}-master-0"] + [f"{name}-worker-{k}" for k in range(pl.pods - 1)]
    else:
        pods = [f"{name}-trainer-0-{k}-{_suffix(rng)}" for k in range(pl.pods)]
    pool = str(rng.choice(["gpu", "train", "a", "pool"]))
    first = int(rng.integers(0, 200))
    nodes = [f"{pool}-{pl.kind.key}-{first + k:03d}" for k in range(pl.pods)]
    return namespace, name, pods, nodes


def _window_bucket(duration: float) -> str:
    for limit, text in ((180.0, "under-3m"), (900.0, "3-15m"), (1800.0, "15-30m")):
        if duration < limit:
            return text
    return "30-60m"


def job_tags(
    pl: Placement, obs: Observation, tl: Timeline, duration: float, *, short: bool, launch: bool, xid: bool
) -> tuple[str, ...]:
    """What was drawn for a Job: hardware, fleet, telemetry setup and window (never its class)."""
    scheds = [s for per in obs.schedules.values() for s in per]
    tags = [
        f"gpu:{pl.gpu.key}",
        f"node-kind:{pl.kind.key}",
        f"pods:{pl.pods}",
        f"gpus-per-pod:{pl.gpus_per_pod}",
        f"fabric:{pl.kind.fabric}",
        f"storage:{pl.storage.key}",
        f"dcgm:{obs.field_set}",
        f"dcgm-scrape:{obs.schedules['dcgm'][0].interval:g}s",
        f"dcgm-collect:{obs.schedules['dcgm'][0].collect:g}s",
        f"node-scrape:{obs.schedules['node'][0].interval:g}s",
        f"layout:{obs.layout['dcgm']}",
        f"window:{_window_bucket(duration)}",
    ]
    flags = {
        "too-short": short,
        "starts-at-launch": launch,
        "power-capped": pl.power_limit_w < pl.gpu.tdp_w,
        "shared-node": any(nb.pods > 0 for nb in pl.neighbours),
        "counter-reset": any(s.reset_at is not None for s in scheds),
        "scrape-outage": any(s.outage is not None for s in scheds),
        "checkpoint-pauses": bool(tl.pauses),
        "no-sidecar": not obs.sidecar,
        "no-sidecar-net": obs.sidecar and not obs.sidecar_net,
        "no-ksm": not obs.ksm,
        "no-node-psi": not obs.node_psi,
        "no-ib-collector": (pl.kind.fabric != "tcp" or pl.storage.transport == "rdma") and not obs.node_ib,
        "power-fields": obs.power_clocks,
        "xid": xid,
    }
    tags += [t for t, on in flags.items() if on]
    return tuple(tags)
