"""What the cluster's monitoring stack looks like for one Job: intervals, field sets, missing pieces, names.

Drawn from what TELEMETRY.md and the exporters' documentation describe: scrape intervals of 5-60 s
(kube-prometheus-stack's default 30 s, dcgm-exporter's chart 15 s), dcgm-exporter collecting every
30 s by default so faster scrapes repeat its values, DEV-only, default and full DCGM field sets, the
collector sidecar opted out on some Jobs, PSI missing on old kernels, missed scrapes, a short outage of
one exporter, and now and then a restarted trainer container whose cAdvisor counters start over.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator_dev.familyae.workload import JobConfig

INTERVALS = (5.0, 10.0, 15.0, 30.0, 60.0)
EXPORTERS = ("dcgm", "cadvisor", "ksm", "node", "sidecar")
NAMESPACES = ("ml-training", "research", "vision", "nlp", "recsys", "speech", "platform-batch", "team-a", "team-b")
PURPOSES = ("pretrain", "finetune", "sweep", "ablation", "baseline", "repro", "train")


@dataclass(frozen=True)
class Telemetry:
    """The drawn monitoring setup.

    Attributes:
        si: scrape interval per exporter.
        collect: dcgm-exporter's collect interval (its gauges repeat between collections).
        field_set: "dev-only", "default" or "full".
        power_clocks: the enforced power limit and clock-event reasons are exported.
        sidecar, sidecar_net, node_psi, ksm, node: which families exist.
        miss: probability that a scrape is missed.
        outage: the exporter that has a short outage, or "".
        restart: whether one pod's trainer container restarts inside the window.
    """

    si: dict[str, float]
    collect: float
    field_set: str
    power_clocks: bool
    sidecar: bool
    sidecar_net: bool
    node_psi: bool
    ksm: bool
    node: bool
    miss: float
    outage: str
    restart: bool

    def tags(self) -> tuple[str, ...]:
        out = [f"dcgm:{self.field_set}", f"scrape:{self.si['cadvisor']:g}s", f"dcgm-scrape:{self.si['dcgm']:g}s"]
        out.append(f"dcgm-collect:{self.collect:g}s")
        out += [] if self.sidecar else ["no-sidecar"]
        out += ["sidecar-net"] if self.sidecar_net else []
        out += [] if self.node_psi else ["no-node-psi"]
        out += [] if self.ksm else ["no-ksm"]
        out += [] if self.node else ["no-node-exporter"]
        out += ["power-clocks"] if self.power_clocks else []
        out += [f"missed-scrapes:{self.miss:g}"] if self.miss else []
        out += [f"outage:{self.outage}"] if self.outage else []
        out += ["counter-reset:cadvisor"] if self.restart else []
        return tuple(out)


def draw_telemetry(rng: np.random.Generator) -> Telemetry:
    """A monitoring setup."""
    base = float(rng.choice(INTERVALS, p=(0.08, 0.17, 0.3, 0.35, 0.1)))
    dcgm = base if rng.random() < 0.6 else float(rng.choice(INTERVALS, p=(0.1, 0.2, 0.4, 0.25, 0.05)))
    field_set = str(rng.choice(("dev-only", "default", "full"), p=(0.25, 0.45, 0.3)))
    power_clocks = field_set == "full" or rng.random() < 0.15
    sidecar = rng.random() < 0.85
    return Telemetry(
        si={"dcgm": dcgm, "cadvisor": base, "ksm": base, "node": base, "sidecar": base},
        collect=30.0 if rng.random() < 0.5 else dcgm,  # dcgm-exporter -c 30000 by default
        field_set=field_set,
        power_clocks=power_clocks,
        sidecar=sidecar,
        sidecar_net=sidecar and rng.random() < 0.6,
        node_psi=rng.random() < 0.9,
        ksm=rng.random() < 0.92,
        node=rng.random() < 0.97,
        miss=float(rng.choice((0.0, 0.005, 0.02, 0.05), p=(0.4, 0.3, 0.2, 0.1))),
        outage=str(rng.choice(EXPORTERS)) if rng.random() < 0.15 else "",
        restart=rng.random() < 0.06,
    )


def window_length(rng: np.random.Generator, tele: Telemetry, step: float) -> int:
    """Timestamps in the window: at least ~22 scrapes of the slowest exporter and 24 steps, up to 1.6x more."""
    slowest = max(tele.si.values())
    need = max(int(np.ceil(22 * slowest / step)) + 1, 24)
    return int(np.ceil(need * float(rng.uniform(1.0, 1.6))))


def _suffix(rng: np.random.Generator, n: int) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    return "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), n))


def draw_names(rng: np.random.Generator, cfg: JobConfig) -> tuple[str, str, tuple[str, ...], tuple[str, ...]]:
    """(namespace, Job name, pod names, node names) as a batch/v1 indexed Job and its nodes are named."""
    namespace = str(rng.choice(NAMESPACES))
    job = f"{cfg.model.key.replace('.', '')}-{rng.choice(PURPOSES)}-{_suffix(rng, 5)}"
    pods = tuple(f"{job}-{k}-{_suffix(rng, 5)}" for k in range(cfg.pods))
    cloud = cfg.node.key.startswith(("cloud", "g4dn"))
    nodes = []
    for _ in range(cfg.nodes):
        if cloud:
            a, b, c = (int(x) for x in rng.integers(0, 255, 3))
            nodes.append(f"ip-10-{a}-{b}-{c}.ec2.internal")
        else:
            nodes.append(f"{cfg.node.key}-{int(rng.integers(1, 400)):03d}")
    return namespace, job, pods, tuple(nodes)
