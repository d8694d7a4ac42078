"""Aiming a Job at a stage: the configurations and contention that make one stage the slow one.

A Job is drawn for a mechanism the way such Jobs arise in a fleet (a heavy augmentation under a
tight CPU limit, a dataset on a busy NFS server, ZeRO offload over PCIe, a tensor-parallel model
with little compute per GPU, a small policy network dispatched kernel by kernel from Python, ...);
whether the stage really limits the step is then measured (see :mod:`.label`), never assumed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import Mechanism
from bottleneck_operator_dev.familyaj.fleet import Neighbours, Placement, draw_placement
from bottleneck_operator_dev.familyaj.hardware import GB, NODE_KINDS, STORAGES
from bottleneck_operator_dev.familyaj.workload import ARCHETYPES, Workload, draw_workload

M = Mechanism
NVLINK_KINDS = tuple(k.key for k in NODE_KINDS.values() if k.gpu in ("h100-sxm", "h200-sxm", "a100-sxm", "v100-sxm"))
PCIE_KINDS = tuple(k.key for k in NODE_KINDS.values() if k.key not in NVLINK_KINDS)

# Archetypes each mechanism arises in, with weights (the rest of ARCHETYPES get a small weight).
_ARCHS: dict[Mechanism, dict[str, float]] = {
    M.COMPUTE: {"vit": 3, "llm": 3, "diffusion": 2, "cnn": 1, "speech": 1, "video": 1},
    M.LAUNCH_BOUND: {"policy": 5, "recsys": 1, "speech": 1, "cnn": 1},
    M.HBM_BANDWIDTH: {"recsys": 2, "llm": 2, "cnn": 1, "volumetric": 1, "diffusion": 1, "speech": 1},
    M.PCIE: {"volumetric": 2, "video": 2, "llm": 2, "diffusion": 1, "cnn": 1},
    M.NVLINK: {"llm": 4, "diffusion": 2, "vit": 1},
    M.NETWORK: {"llm": 3, "diffusion": 2, "vit": 1, "recsys": 1, "speech": 1},
}
_INPUT = {"cnn": 3, "vit": 2, "video": 2, "speech": 2, "volumetric": 1, "diffusion": 1}


def _arch(rng: np.random.Generator, mech: Mechanism) -> str:
    weights = dict.fromkeys(ARCHETYPES, 0.1)
    weights.update(_ARCHS.get(mech, _INPUT))
    names = list(weights)
    w = np.array([weights[a] for a in names], dtype=np.float64)
    return names[int(rng.choice(len(names), p=w / w.sum()))]


def _lu(rng: np.random.Generator, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _nb(pl: Placement, **changes: float) -> Placement:
    """The placement with every pod's neighbours changed (fields scaled to the node kind by the caller)."""
    nbs = tuple(replace(nb, pods=max(nb.pods, 2), **changes) for nb in pl.neighbours)
    return replace(pl, neighbours=nbs)


def _ample(w: Workload) -> Workload:
    """Input side and host memory comfortable: the careful team's configuration."""
    return replace(
        w, pinned=True, workers=max(w.workers, 8), cache_hit=max(w.cache_hit, 0.6), overlap=max(w.overlap, 0.5)
    )


def _tilt(mech: Mechanism) -> Callable[[np.random.Generator, Placement, Workload, float], tuple[Placement, Workload]]:
    return _TILTS[mech]


def _compute(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    return pl, replace(_ample(w), batch=max(1, round(w.batch * rng.uniform(1.0, 2.0))), thrash_bytes=0.0)


def _launch(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    w = replace(
        w,
        kernels=w.kernels * rng.uniform(1.0, 3.0) * sev,
        dispatch_s=_lu(rng, 8e-6, 30e-6),
        batch=max(1, round(w.batch / rng.uniform(1.0, 4.0 * sev))),
    )
    return pl, w


def _hbm(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    return pl, replace(w, hbm_bytes=w.hbm_bytes * rng.uniform(3.0, 10.0) * sev, mfu=min(0.6, w.mfu * 1.3))


def _host_memory(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    w = replace(w, thrash_bytes=_lu(rng, 10e6, 200e6) * sev, fault_s=_lu(rng, 1e-5, 8e-5))
    if rng.random() < 0.6:
        return pl, replace(w, mem_limit_gib=w.rss_gib * rng.uniform(0.88, 0.99))
    return _nb(pl, mem_gib=pl.kind.memory_gib * rng.uniform(0.75, 0.92) - w.rss_gib * 0.5), w


def _pcie(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    way = rng.choice(["offload", "inputs", "p2p"])
    if way == "offload":
        return pl, replace(w, offload_bytes=w.grad_bytes * rng.uniform(2.0, 4.0) * sev, workers=max(w.workers, 6))
    if way == "inputs" or pl.gpus_per_pod < 2:
        return pl, replace(
            w, dev_bytes=w.dev_bytes * rng.uniform(4.0, 12.0) * sev, pinned=False, workers=max(w.workers, 8)
        )
    return pl, replace(w, grad_bytes=w.grad_bytes * rng.uniform(1.0, 4.0) * sev, overlap=rng.uniform(0.0, 0.3))


def _nvlink(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    w = replace(w, tp_bytes=_lu(rng, 4 * GB, 60 * GB) * sev, overlap=float(rng.uniform(0.0, 0.25)))
    return pl, _ample(w)


def _network(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    w = replace(w, grad_bytes=w.grad_bytes * rng.uniform(1.0, 4.0) * sev, overlap=float(rng.uniform(0.0, 0.35)))
    if rng.random() < 0.4:
        pl = _nb(pl, rdma_bps=pl.kind.nic_bps * rng.uniform(0.3, 0.6), eth_bps=pl.kind.eth_bps * rng.uniform(0.2, 0.5))
    return pl, _ample(w)


def _local_disk(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    pl = replace(pl, storage=STORAGES["node-disk-mmap" if rng.random() < 0.25 else "node-disk"])
    if rng.random() < 0.5:
        pl = _nb(pl, disk_bps=pl.kind.disk_bps * rng.uniform(0.4, 0.9))
    w = replace(w, cache_hit=float(rng.uniform(0.0, 0.15)), read_bytes=w.read_bytes * rng.uniform(1.0, 3.0) * sev)
    return pl, replace(w, workers=max(w.workers, 8), cpu_limit=None)


def _network_storage(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    keys = ["nfs", "object-http", "gcsfuse"] + (["lustre-rdma"] if pl.kind.fabric != "tcp" else ["efs"])
    pl = replace(pl, storage=STORAGES[str(rng.choice(keys))], server_share=float(rng.uniform(0.05, 0.5)) / sev)
    w = replace(w, cache_hit=float(rng.uniform(0.0, 0.15)), samples_per_request=float(rng.choice([1.0, 1.0, 16.0])))
    return pl, replace(w, read_bytes=w.read_bytes * rng.uniform(1.0, 2.5), workers=max(w.workers, 8), cpu_limit=None)


def _heavy_cpu(rng: np.random.Generator, w: Workload, sev: float) -> Workload:
    return replace(w, cpu_s=w.cpu_s * rng.uniform(0.6, 2.0) * sev, cache_hit=max(w.cache_hit, 0.7))


def _throttled(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    g = pl.gpus_per_pod
    limit = float(np.ceil(g * rng.uniform(3.0, 12.0) / sev))
    return pl, replace(_heavy_cpu(rng, w, sev), cpu_limit=limit, workers=max(w.workers, 6))


def _saturated(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    pl = _nb(pl, cpu_cores=pl.kind.cpus * rng.uniform(0.55, 0.95))
    workers = int(rng.choice([12, 16, 24, 32]))
    return pl, replace(_heavy_cpu(rng, w, sev), cpu_limit=None, workers=workers)


def _too_few(rng: np.random.Generator, pl: Placement, w: Workload, sev: float) -> tuple[Placement, Workload]:
    workers = int(rng.choice([0, 1, 1, 2, 2, 3]))
    return pl, replace(_heavy_cpu(rng, w, sev), workers=workers, cpu_limit=None)


_TILTS: dict[Mechanism, Callable[[np.random.Generator, Placement, Workload, float], tuple[Placement, Workload]]] = {
    M.COMPUTE: _compute,
    M.LAUNCH_BOUND: _launch,
    M.HBM_BANDWIDTH: _hbm,
    M.HOST_MEMORY_PRESSURE: _host_memory,
    M.PCIE: _pcie,
    M.NVLINK: _nvlink,
    M.NETWORK: _network,
    M.LOCAL_DISK: _local_disk,
    M.NETWORK_STORAGE: _network_storage,
    M.THROTTLED: _throttled,
    M.SATURATED: _saturated,
    M.TOO_FEW_WORKERS: _too_few,
}


def draw_aimed(
    rng: np.random.Generator, mech: Mechanism, lead: float, duration: float, sev: float
) -> tuple[Placement, Workload]:
    """A placement and workload drawn for ``mech`` at severity ``sev`` (1: as drawn; more: stronger)."""
    kinds: tuple[str, ...] = ()
    multi: bool | None = None
    min_gpus = 1
    if mech is M.NVLINK:
        kinds, multi, min_gpus = NVLINK_KINDS, False, 4
    elif mech is M.NETWORK:
        multi = True
    elif mech is M.PCIE and rng.random() < 0.5:
        kinds, min_gpus = PCIE_KINDS, 2
    elif mech is not M.LAUNCH_BOUND and rng.random() < 0.15:
        multi = True
    pl = draw_placement(rng, lead, duration, kinds=kinds, multi=multi, min_gpus=min_gpus)
    w = draw_workload(rng, _arch(rng, mech), pl.gpus_per_pod)
    if rng.random() < 0.5:
        w = replace(w, mem_limit_gib=w.rss_gib * rng.uniform(1.3, 3.0))
    return _tilt(mech)(rng, pl, w, sev)


__all__ = ["Neighbours", "draw_aimed"]
