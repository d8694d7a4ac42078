"""Gradient sync and model-parallel transfers: bytes from the model, time from the links' capacity.

Ring all-reduce moves ``2 (n - 1) / n`` of the gradient through each member; across nodes the
collective is hierarchical (each node's share goes out through its fabric ports), inside a node it
runs over NVLink, or peer to peer over PCIe on boards without NVLink. Tensor parallelism adds
per-layer collectives on NVLink that the step mostly waits for.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bottleneck_operator_dev.familye.archetypes import Archetype
from bottleneck_operator_dev.familye.cluster import Env


def _u(rng: np.random.Generator, lo_hi: tuple[float, float]) -> float:
    return float(np.exp(rng.uniform(np.log(lo_hi[0]), np.log(lo_hi[1]))))


def comm(rng: np.random.Generator, env: Env, a: Archetype, mech: str, kernels: float) -> dict[str, Any]:
    """Gradient sync and model-parallel transfers from gradient bytes and link capacities."""
    b, f = env.board, env.fabric
    params = _u(rng, a.params)
    tp = 1
    if b.nvlink_bps > 0 and env.gpus >= 4 and (mech == "nvlink" or (a.name == "llm" and rng.random() < 0.5)):
        tp = env.gpus
    grad = 2.0 * params / tp
    g, p = env.gpus, env.pods
    nvlink = 2 * (g - 1) / g * grad if b.nvlink_bps > 0 and g > 1 else 0.0
    p2p = 2 * (g - 1) / g * grad if b.nvlink_bps == 0 and g > 1 else 0.0
    # hierarchical all-reduce: each node moves its whole (TP: each GPU its own shard of the) gradient
    nic = 2 * (p - 1) / p * grad * (g if tp > 1 else 1) if p > 1 else 0.0
    eff_p2p = rng.uniform(0.35, 0.8)
    t_intra = nvlink / (b.nvlink_bps * 0.8) if nvlink else p2p / (b.pcie_bps * eff_p2p)
    t_inter = nic / (env.ports * f.port_bps * f.efficiency) if f is not None and nic else 0.0
    t_tp, tp_bytes = 0.0, 0.0
    if tp > 1:  # per-layer collectives keep the links busy for part of the kernels' time; some of it is exposed
        tp_bytes = kernels * rng.uniform(0.1, 0.6) * b.nvlink_bps * 0.8
        t_tp = tp_bytes / (b.nvlink_bps * 0.8) * rng.uniform(0.3, 0.7)
    return {
        "grad": grad,
        "nic": nic,
        "nvlink": nvlink + tp_bytes,
        "p2p": p2p,
        "t_comm": max(t_intra, t_inter),
        "link": ("nic" if t_inter > t_intra else "nvlink" if nvlink else "p2p") if t_intra or t_inter else "",
        "t_tp": t_tp,
        "overlap": rng.uniform(0.4, 0.95),
        "tp": float(tp),
    }


def set_interconnect(rng: np.random.Generator, env: Env, mech: str, c: dict[str, Any], base: float, sev: float) -> None:
    """Make the mechanism's links slow enough that removing them speeds the step up by ``sev``."""
    exposed = (sev - 1.0) * base
    if mech == "nvlink":
        c["t_tp"] = exposed
        c["nvlink"] = exposed * env.board.nvlink_bps * rng.uniform(0.7, 0.9)
    elif mech == "network" and env.fabric is not None:
        c["t_comm"] = exposed + c["hidden"]
        c["link"] = "nic"
        c["nic"] = c["t_comm"] * env.ports * env.fabric.port_bps * env.fabric.efficiency
        c["grad"] = c["nic"] / (2 * (env.pods - 1) / env.pods)
    elif mech == "pcie" and env.gpus > 1 and rng.random() < 0.6:
        c["t_comm"] = exposed + c["hidden"]
        c["link"] = "p2p"
        c["p2p"] = c["t_comm"] * env.board.pcie_bps * rng.uniform(0.35, 0.8)
        c["grad"] = c["p2p"] / (2 * (env.gpus - 1) / env.gpus)
    else:
        c["h2d_exposed"] = exposed
