"""How the Job is observed: what differs between real clusters' monitoring stacks, drawn per Job.

Scrape intervals (dcgm-exporter 5-60 s), dcgm-exporter's collection interval and field set
(DEV-only, the shipped default counters, full profiling), which exporters and families exist, the
label layouts the contract allows, counter resets and missed scrapes, and the run's length.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bottleneck_operator_dev.familyal.draws import Setup, pick

# A window under about 20 samples is too short to judge; at the 30 s step and scrape interval
# kube-prometheus-stack defaults to, that is a run under 600 s.
SHORT_SAMPLES = 20
SHORT_RUN_S = SHORT_SAMPLES * 30.0


@dataclass(frozen=True)
class Observation:
    """The monitoring of one Job.

    Attributes:
        scrape: exporter -> Prometheus scrape interval, seconds.
        dcgm_collect: dcgm-exporter's collection interval (``-c``), seconds.
        field_set: "dev-only", "default" or "full".
        power_clocks: the counters file exports POWER_MGMT_LIMIT and the clock-event reasons.
        nvlink_prof: NVLINK_TX/RX_BYTES exported (a custom counters file, NVLink boards only).
        present: exporters and optional families that exist ("sidecar", "sidecar_net", "node_psi",
            "ksm", "node", "node_ib", "cadvisor").
        layout: exporter -> label layout read.
        hostname_label: dcgm-exporter's node label ("Hostname" or, newest, "hostname").
        resets: exporter -> unix time of a restart that resets its counters.
        miss: probability that one scrape is missed.
        duration: the window's (and Job's) length, seconds.
        lead: seconds the pods started before the window.
        warmup: seconds from pod start to the first iteration (image pull done, model loading).
        too_short: the window holds too few samples to judge.
        xid: the last XID error code dcgm-exporter shows (0: none).
    """

    scrape: dict[str, float]
    dcgm_collect: float
    field_set: str
    power_clocks: bool
    nvlink_prof: bool
    present: frozenset[str]
    layout: dict[str, str]
    hostname_label: str
    resets: dict[str, float] = field(default_factory=dict)
    miss: float = 0.0
    duration: float = 1800.0
    lead: float = 0.0
    warmup: float = 60.0
    too_short: bool = False
    xid: int = 0


def _present(rng: np.random.Generator, s: Setup) -> frozenset[str]:
    have = set()
    for name, p in (("sidecar", 0.75), ("ksm", 0.92), ("cadvisor", 0.95), ("node_psi", 0.85)):
        if rng.random() < p:
            have.add(name)
    if "sidecar" in have and rng.random() < 0.6:
        have.add("sidecar_net")
    # node-exporter series reach a pod only through kube_pod_info's node (the pod join).
    if "ksm" in have and rng.random() < 0.95:
        have.add("node")
    fabric = s.cluster.fabric
    if "node" in have and fabric is not None and fabric.rdma and rng.random() < 0.85:
        have.add("node_ib")
    return frozenset(have)


def draw_observation(rng: np.random.Generator, s: Setup, start: float) -> Observation:
    """The monitoring stack and the run's timing."""
    dcgm_si = float(rng.choice((5.0, 10.0, 15.0, 20.0, 30.0, 45.0, 60.0)))
    scrape = {"dcgm": dcgm_si}
    for exp in ("node", "cadvisor", "ksm", "sidecar"):
        scrape[exp] = float(rng.choice((15.0, 30.0)))
    field_set = pick(rng, ("dev-only", "default", "full"), (0.25, 0.4, 0.35))
    if s.cluster.board.key == "t4" and field_set == "full":
        field_set = "default"
    present = _present(rng, s)
    too_short = bool(rng.random() < 0.05)
    duration = float(
        rng.uniform(90.0, 0.9 * SHORT_RUN_S) if too_short else rng.uniform(2 * SHORT_RUN_S, 5 * SHORT_RUN_S)
    )
    resets = {}
    for exp in ("node", "cadvisor", "sidecar", "dcgm"):
        if not too_short and rng.random() < 0.12:
            resets[exp] = start + float(rng.uniform(0.2, 0.8)) * duration
    return Observation(
        scrape=scrape,
        dcgm_collect=float(rng.choice((5.0, 10.0, 15.0, 30.0), p=(0.15, 0.15, 0.2, 0.5))),
        field_set=field_set,
        power_clocks=bool(rng.random() < 0.5),
        nvlink_prof=bool(field_set == "full" and s.cluster.board.nvlink_gbps > 0 and rng.random() < 0.5),
        present=present,
        layout={
            "dcgm": pick(rng, ("exported-labels", "pod-labels"), (0.6, 0.4)),
            "node": pick(rng, ("pod-join", "node-label"), (0.7, 0.3)),
            "cadvisor": pick(rng, ("kube-prometheus-stack", "plain"), (0.7, 0.3)),
        },
        hostname_label=pick(rng, ("Hostname", "hostname"), (0.8, 0.2)),
        resets=resets,
        miss=float(rng.uniform(0.0, 0.03)),
        duration=duration,
        lead=float(rng.uniform(0.0, 30.0)),
        warmup=float(rng.uniform(20.0, 120.0)) if not too_short else float(rng.uniform(10.0, 40.0)),
        too_short=too_short,
        xid=int(rng.choice((0, 13, 31, 43), p=(0.94, 0.02, 0.02, 0.02))),
    )
