"""The Job's window: its pods' signals from every exporter the cluster runs, named and checked against the contract."""

from __future__ import annotations

import numpy as np

from bottleneck_operator.contract.signals import SIGNALS
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow, SignalBlock, families_and_coverage
from bottleneck_operator_dev.familyan.exporters import GRID, FloatArray, Scrapes, present
from bottleneck_operator_dev.familyan.physics import Plan
from bottleneck_operator_dev.familyan.plan import RegimeStages
from bottleneck_operator_dev.familyan.render import cadvisor_ksm, dcgm, make_grid
from bottleneck_operator_dev.familyan.render_host import node, sidecar
from bottleneck_operator_dev.familyan.timeline import Timeline

_TEAMS = {
    "image-jpeg": "vision",
    "llm-pretrain": "llm",
    "finetune-smallfiles": "nlp-apps",
    "recsys-embedding": "ranking",
    "speech-audio": "speech",
    "diffusion": "genmedia",
    "rl-env": "rl",
}


def _names(rng: np.random.Generator, plan: Plan, i: int) -> tuple[str, str, list[str], list[str]]:
    kind = plan.workload.kind
    ns = f"{_TEAMS[kind]}-{rng.choice(['prod', 'research', 'dev', 'exp'])}"
    job = f"{kind}-{i:04d}-{int(rng.integers(0, 16**5)):05x}"
    c = plan.cluster
    style = "worker" if c.nodes > 1 and rng.random() < 0.6 else "indexed"
    pods = [
        f"{job}-worker-{k}" if style == "worker" else f"{job}-{k}-{int(rng.integers(0, 36**5)):07x}"[: len(job) + 8]
        for k in range(c.nodes)
    ]
    nodes = [f"{c.board.key.lower()}-{int(rng.integers(0, 1000)):03d}" for _ in range(c.nodes)]
    return ns, job, pods, nodes


def _signals(plan: Plan, tl: Timeline, rs: RegimeStages, act: FloatArray, rng: np.random.Generator,
             t: FloatArray, at: FloatArray, step: float) -> tuple[dict[str, FloatArray], list[Scrapes], list[str]]:  # fmt: skip
    """Every exporter's signals as (pods, timestamps) arrays, the scrapes, and tags for drawn faults."""
    c = plan.cluster
    reg_idx = np.searchsorted(np.asarray(tl.bounds), t, side="right").astype(np.int64) - 1
    reg_idx = np.clip(reg_idx, 0, len(tl.regimes) - 1)
    startup = np.array([tl.regimes[k].phase == "startup" for k in reg_idx])
    strag = np.array([[r.straggler and j == tl.straggler_node for j in range(c.nodes)] for r in tl.regimes])
    grid = make_grid(act, np.asarray(rs.clocks, dtype=float), strag, reg_idx, t, startup, rng)
    tags: list[str] = []
    gap = None
    first = int(np.searchsorted(t, at[0]))
    if rng.random() < 0.1:  # dcgm-exporter restarted: a few scrapes missing
        g0 = int(rng.integers(first, t.size - 1))
        gap = (g0, g0 + int(rng.integers(2, 12)))
        tags.append("dcgm-gap")
    out, scr = dcgm(plan, grid, rng, at, step, gap)
    scrapes = [scr]
    more, extra = cadvisor_ksm(plan, grid, rng, at, step)
    out.update(more)
    scrapes += extra
    more, scr = node(plan, grid, rng, at, step)
    out.update(more)
    scrapes.append(scr)
    reset = int(rng.integers(first, t.size - 2)) if rng.random() < 0.15 else None
    more, scr = sidecar(plan, grid, rng, at, step, reset)
    if reset is not None and present("sc_cpu_cores", SIGNALS["sc_cpu_cores"].family, c.missing):
        tags.append("counter-reset")
    out.update(more)
    scrapes.append(scr)
    return out, scrapes, tags


def _pick(plan: Plan, sig: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """Only the contract's signals whose family this cluster exports (the memory limit from wherever it is)."""
    c = plan.cluster
    if "mem_limit_bytes" not in sig:
        from_ksm = c.layout["cadvisor"] == "spec-dropped" and SIGNALS["cpu_limit_cores"].family not in c.missing
        if "mem_limit_sidecar" in sig and SIGNALS["sc_cpu_cores"].family not in c.missing:
            sig["mem_limit_bytes"] = sig["mem_limit_sidecar"]
        elif from_ksm:
            sig["mem_limit_bytes"] = np.full_like(sig["cpu_cores"], plan.mem_limit)
    keep = {}
    for name, spec in SIGNALS.items():
        if name in sig and present(name, spec.family, c.missing):
            keep[name] = sig[name]
    if c.board.prof == "gr-only":  # T4: GR_ENGINE_ACTIVE is its only profiling field
        for name in ("tensor_active", "dram_active", "pcie_tx_bps", "pcie_rx_bps", "sm_active", "sm_occupancy",
                     "fp32_active", "fp16_active", "nvlink_tx_bps", "nvlink_rx_bps"):  # fmt: skip
            keep.pop(name, None)
    return keep


def assemble(seed: int, i: int, plan: Plan, tl: Timeline, rs: RegimeStages, act: FloatArray,
             rng: np.random.Generator, start: float, step: float, length: int) -> tuple[JobWindow, tuple[Scrapes, ...], list[str]]:  # fmt: skip
    """The JobWindow, the raw scrapes behind it, and tags for the faults drawn on the way."""
    c = plan.cluster
    ns, job, pod_names, node_names = _names(rng, plan, i)
    at = start + step * np.arange(length, dtype=float)
    t = tl.bounds[0] + GRID * np.arange(int((at[-1] - tl.bounds[0]) // GRID) + 1, dtype=float)
    sig, scrapes, tags = _signals(plan, tl, rs, act, rng, t, at, step)
    keep = _pick(plan, sig)
    neighbour = any(r.neighbour for r in tl.regimes)
    pods = tuple(
        PodWindow(
            pod=pod_names[k],
            node=node_names[k],
            gpu_model=c.board.model_name,
            gpu_count=c.per_node,
            signals=SignalBlock.of({name: v[k] for name, v in keep.items()}, length),
            co_located_pods=1 if neighbour and k == 0 else 0,
        )
        for k in range(c.nodes)
    )
    families, coverage = families_and_coverage(pods)
    notes = ["no PROF fields"] if c.fields == "dev-only" else []
    notes.append(f"dcgm-exporter collects every {c.dcgm_collect:g}s")
    quality = DataQuality(families, coverage, c.scrape["dcgm"], tuple(notes), dict(c.layout))
    window = JobWindow(ns, job, float(at[0]), float(at[-1]), step, at, pods, quality)
    return window, tuple(scrapes), tags
