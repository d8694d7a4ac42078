"""The closed loop: one-second ticks of every pod's controllers and its training loop.

The lanes of a batch are the pods of several Jobs, grouped by Job (``groups``: the first lane of
each Job). Pods of a Job run synchronous data parallel: each step ends with an all-reduce, so the
Job moves at the pace of its slowest pod each tick, and the others wait for it in the collective.

Besides the telemetry truth, every tick records where each pod's main thread spent its second,
in the categories of :data:`CATEGORIES`; the label reads them (see :mod:`.label`).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import numpy.typing as npt

from bottleneck_operator.contract.verdict import Bottleneck, Mechanism
from bottleneck_operator_dev.familyz.controllers import aimd_share, cfs, power_governor, prefetch, reclaim

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

B, M = Bottleneck, Mechanism
# Where the main thread's time goes, one column each.
CATEGORIES: tuple[tuple[Bottleneck, Mechanism], ...] = (
    (B.GPU, M.COMPUTE),
    (B.GPU, M.LAUNCH_BOUND),
    (B.MEMORY, M.HBM_BANDWIDTH),
    (B.MEMORY, M.HOST_MEMORY_PRESSURE),
    (B.INTERCONNECT, M.PCIE),
    (B.INTERCONNECT, M.NVLINK),
    (B.INTERCONNECT, M.NETWORK),
    (B.IO, M.LOCAL_DISK),
    (B.IO, M.NETWORK_STORAGE),
    (B.CPU, M.THROTTLED),
    (B.CPU, M.SATURATED),
    (B.CPU, M.TOO_FEW_WORKERS),
)
_CAT = {c: i for i, c in enumerate(CATEGORIES)}


_NAMES = ("steps", "clock", "power", "capped", "phi", "throttled", "run_wait", "demand", "produced", "swapin",
          "oom", "anon", "cache", "over", "mem_stall", "io_limited", "t_c", "t_k", "t_l", "read", "util")  # fmt: skip


def simulate(
    lanes: dict[str, FloatArray], noise: dict[str, FloatArray], groups: IntArray, ticks: int, window: IntArray
) -> tuple[dict[str, npt.NDArray[np.float32]], FloatArray]:
    """Run ``ticks`` one-second ticks.

    Args:
        lanes: per-lane constants, each shape (P,).
        noise: per-tick exogenous inputs (neighbours, jitter, pauses, memory growth), each (ticks, P).
        groups: index of each Job's first lane, increasing.
        ticks: how many ticks.
        window: per lane, the first and one-past-last tick of its Job's window, shape (2, P).

    Returns:
        ``(state, blocked)``: the loop's state per tick, each (ticks, P) in float32 (rates, shares
        and levels; :func:`telemetry` turns a Job's slice into the exporters' truth); seconds per
        category over the window, counted on the lane that held its Job back each tick, shape
        (P, len(CATEGORIES)).
    """
    p = lanes
    x = _exogenous(p, noise, groups, ticks, window)
    n_lanes = x.lane.size
    st = SimpleNamespace(
        clock=p["fmax"].copy(),
        temp=p["tamb"] + 20.0,
        queue=p["prefetch"].copy(),
        cache=p["dataset"] * p["cache0"],
        activity=np.full(n_lanes, 0.5),
        worker_busy=np.full(n_lanes, 0.5),
        rate_prev=np.full(n_lanes, 1.0),
        read_prev=np.zeros(n_lanes),
        restart_left=np.zeros(n_lanes),
    )
    store = np.zeros((len(_NAMES), ticks, n_lanes), dtype=np.float32)
    blocked = np.zeros((n_lanes, len(CATEGORIES)))
    for t in range(ticks):
        v = _tick(t, st, x, p, noise)
        # where the main thread's second went, counted on the first pod holding its Job back
        lowest = v.own <= v.job_steps
        seen = np.cumsum(lowest)
        first = lowest & ((seen - (seen - lowest)[groups][x.job_of]) == 1) & x.in_window[t]
        if first.any():
            blocked += _account(t, v, x, p) * first[:, None]
        for i, name in enumerate(_NAMES):
            store[i, t] = getattr(v, name)
    state = dict(zip(_NAMES, store, strict=True))
    state["t_comm"] = x.t_comm.astype(np.float32)
    return state, blocked


def _exogenous(
    p: dict[str, FloatArray], noise: dict[str, FloatArray], groups: IntArray, ticks: int, window: IntArray
) -> SimpleNamespace:
    """What does not depend on the loop's state, for all ticks at once.

    The network's AIMD shares (neighbour flows come and go), the free cores, the all-reduce's time,
    the window's ticks, and constants of the lanes.
    """
    n_lanes = p["fmax"].shape[0]
    ticks_in = np.arange(ticks)[:, None]
    nbr_flows = noise["nbr_flows"]
    net_bw = np.where(p["rdma"] > 0, p["nic"] * 0.92, aimd_share(p["nic"], p["flows"], nbr_flows))
    t_net = p["inter"] / net_bw
    t_intra = p["intra"] / p["intra_bw"]
    store_flows = np.where(p["store_net"] > 0, 4.0, 1e-9)
    nic_for_store = aimd_share(p["nic"], store_flows, nbr_flows + p["flows"] * 0.5)
    return SimpleNamespace(
        lane=np.arange(n_lanes),
        groups=groups,
        job_of=np.cumsum(np.isin(np.arange(n_lanes), groups)) - 1,
        t_net=t_net,
        t_intra=t_intra,
        t_comm=t_net + t_intra + p["buckets"] * 30e-6,
        store_bw=np.where(p["store_net"] > 0, np.minimum(p["store_bw"], nic_for_store), p["store_bw"]),
        free=np.maximum(p["ncores"] - noise["nbr_cpu"], 1.0),
        in_window=(ticks_in >= window[0]) & (ticks_in < window[1]) & (noise["pause"] <= 0),
        t_m=p["hbm_bytes"] / p["hbm_bw"],
        t_l0=p["kernels"] * p["launch_s"],
        exp_h=p["h2d"] / p["pcie_bw"] * (1.0 - p["h2d_overlap"]),
        multi=p["ranks"] > 1,
        workers=p["workers"] * p["gpus"],
        disk_col=np.where(p["store_net"] > 0, _CAT[B.IO, M.NETWORK_STORAGE], _CAT[B.IO, M.LOCAL_DISK]),
    )


def _tick(
    t: int, st: SimpleNamespace, x: SimpleNamespace, p: dict[str, FloatArray], noise: dict[str, FloatArray]
) -> SimpleNamespace:
    """One tick of every controller; updates the state ``st`` and returns the tick's values."""
    v = SimpleNamespace(t_comm=x.t_comm[t], free=x.free[t])
    jit, g = noise["jitter"][t], p["gpus"]
    v.anon = p["anon"] + noise["anon_extra"][t]
    # memory: reclaim under the limit; no swap and over the limit is an OOM kill
    st.cache, v.swapin, v.over = reclaim(v.anon, st.cache, st.read_prev, p)
    v.oom = (p["swap"] < 0.5) & (v.anon > p["mem_limit"]) & (st.restart_left <= 0.0)
    st.restart_left = np.where(v.oom, p["restart_s"], np.maximum(st.restart_left - 1.0, 0.0))
    v.restarting = st.restart_left > 0
    v.mem_stall = np.minimum(0.9, v.swapin * p["fault_s"] * p["main_touch"])
    v.cache = st.cache
    # CPU: workers + launch thread + the kernel's swap work against quota and free cores
    launch_cpu = np.minimum(1.0, st.rate_prev * (x.t_l0 + p["py_s"]))
    v.demand = x.workers * st.worker_busy + launch_cpu * g + v.swapin * p["fault_s"] * 0.5 + 0.1
    v.phi, v.throttled, v.run_wait = cfs(v.demand, p["quota"], v.free)
    # input pipeline supply, per GPU's loader
    v.cpu_rate = p["workers"] * v.phi / (p["batch"] * p["decode_s"])
    miss_bytes = np.maximum(p["batch"] * p["sample_b"] * (1.0 - st.cache / np.maximum(p["dataset"], 1.0)), 1.0)
    v.io_rate = x.store_bw[t] / g / miss_bytes
    v.io_limited = v.io_rate < v.cpu_rate
    supply = np.minimum(v.cpu_rate, v.io_rate) * jit
    # GPU: power governor, roofline, launch
    st.clock, st.temp, v.power, v.capped = power_governor(st.clock, st.temp, st.activity, p)
    v.clock = st.clock
    v.t_c = p["flops"] / (p["peak"] * (st.clock / p["fmax"])) * jit
    v.t_k = np.maximum(v.t_c, x.t_m) + 0.1 * np.minimum(v.t_c, x.t_m)
    v.t_l = x.t_l0 / v.phi
    # NCCL: what of the all-reduce the backward pass (2/3 of the kernels) does not hide
    tc = v.t_comm
    v.exp_c = np.where(x.multi, np.maximum(tc - p["comm_overlap"] * 0.66 * v.t_k, tc / p["buckets"]), 0.0)
    v.t_step = np.maximum(v.t_k, v.t_l) + x.exp_h + v.exp_c + p["py_s"] / v.phi
    v.t_eff = v.t_step / (1.0 - v.mem_stall)
    # the prefetch queue and the synchronous Job
    own, _ = prefetch(st.queue, supply, 1.0 / v.t_eff, p["prefetch"])
    v.own = np.where((noise["pause"][t] > 0) | v.restarting, 0.0, own)
    v.job_steps = np.minimum.reduceat(v.own, x.groups)[x.job_of]
    v.steps, v.produced = prefetch(st.queue, supply, v.job_steps, p["prefetch"])
    st.queue = np.clip(st.queue + v.produced - v.steps, 0.0, p["prefetch"])
    busy = v.produced * p["batch"] * p["decode_s"] / np.maximum(p["workers"] * v.phi, 1e-9)
    st.worker_busy = np.minimum(1.0, busy)
    st.rate_prev = np.maximum(v.steps, 0.05)
    st.read_prev = v.read = v.produced * miss_bytes * g
    v.util = v.read / np.maximum(x.store_bw[t], 1.0)
    st.activity = np.maximum(v.steps * (np.minimum(v.t_c, v.t_k) + np.maximum(v.t_k - v.t_c, 0.0) * 0.6), 0.02)
    return v


def _account(t: int, v: SimpleNamespace, x: SimpleNamespace, p: dict[str, FloatArray]) -> FloatArray:
    """Seconds of the tick per category, for every lane (the caller keeps the lanes that count)."""
    cat = np.zeros((x.lane.size, len(CATEGORIES)))
    steps, tc = v.steps, v.t_comm
    launching = v.t_l > v.t_k
    busy_k = steps * np.where(launching, 0.0, v.t_k)
    compute_bound = v.t_c >= x.t_m
    cat[:, _CAT[B.GPU, M.COMPUTE]] = np.where(compute_bound, busy_k, 0.0)
    cat[:, _CAT[B.MEMORY, M.HBM_BANDWIDTH]] = np.where(compute_bound, 0.0, busy_k)
    launch_time = steps * np.where(launching, v.t_l, 0.0)
    cat[:, _CAT[B.GPU, M.LAUNCH_BOUND]] = launch_time * v.phi
    intra_pcie = p["intra_pcie"] > 0
    intra_part = steps * v.exp_c * x.t_intra / tc
    cat[:, _CAT[B.INTERCONNECT, M.PCIE]] = steps * x.exp_h + np.where(intra_pcie, intra_part, 0.0)
    cat[:, _CAT[B.INTERCONNECT, M.NVLINK]] = np.where(intra_pcie, 0.0, intra_part)
    cat[:, _CAT[B.INTERCONNECT, M.NETWORK]] = steps * v.exp_c * x.t_net[t] / tc
    cat[:, _CAT[B.MEMORY, M.HOST_MEMORY_PRESSURE]] = steps * (v.t_eff - v.t_step) + v.restarting
    data_wait = np.where(v.restarting, 0.0, np.maximum(0.0, 1.0 - v.own * v.t_eff))
    # a quota below the free cores throttles; otherwise the neighbours left too few cores
    quota_col = np.where(p["quota"] < v.free, _CAT[B.CPU, M.THROTTLED], _CAT[B.CPU, M.SATURATED])
    cpu_col = np.where(v.phi < 0.999, quota_col, _CAT[B.CPU, M.TOO_FEW_WORKERS])
    cat[x.lane, np.where(v.io_limited, x.disk_col, cpu_col)] += data_wait
    lost = launch_time * (1.0 - v.phi) + steps * p["py_s"] * (1.0 / v.phi - 1.0)
    cat[:, _CAT[B.CPU, M.THROTTLED]] += lost
    return cat


def telemetry(s: dict[str, npt.NDArray[np.float32]], p: dict[str, FloatArray]) -> dict[str, FloatArray]:
    """The telemetry truth per tick, from the loop's recorded state (all ticks at once).

    Args:
        s: the state :func:`simulate` recorded, each (ticks, pods), for one Job's lanes.
        p: the same lanes' constants.
    """
    f = {k: v.astype(np.float64) for k, v in s.items()}
    t_comm = f["t_comm"]
    steps, t_c, t_k, t_l = f["steps"], f["t_c"], f["t_k"], f["t_l"]
    g = p["gpus"]
    k_share = np.minimum(1.0, steps * t_k)
    comm = np.minimum(1.0 - k_share, steps * t_comm * (p["ranks"] > 1))
    io_limited = f["io_limited"] > 0
    workers = p["workers"] * g
    worker_busy = np.minimum(
        1.0, f["produced"] * p["batch"] * p["decode_s"] / np.maximum(p["workers"] * f["phi"], 1e-9)
    )
    return {
        "gpu_busy": np.minimum(1.0, np.maximum(steps * t_l * 0.9, k_share) + comm),
        "kernel": k_share,
        "comm": comm,
        "tensor": np.minimum(1.0, steps * np.minimum(t_c, t_k) * p["tensor_share"] * 0.75),
        "fp32": np.minimum(1.0, steps * np.minimum(t_c, t_k) * (1.0 - p["tensor_share"]) * 0.6),
        "dram": np.minimum(0.95, steps * p["hbm_bytes"] / p["hbm_peak"] + comm * 0.05),
        "power": f["power"],
        "clock": np.where(k_share + comm > 0.03, f["clock"], p["idle_clock"]),
        "capped": f["capped"] * (k_share > 0.05),
        "pcie_rx": steps * (p["h2d"] + p["inter"] * p["rdma"] / g),
        "pcie_tx": steps * (p["h2d"] * 0.01 + p["inter"] * p["rdma"] / g),
        "nvlink": steps * p["intra"] * (1.0 - p["intra_pcie"]),
        "cpu": f["phi"] * f["demand"],
        "throttled": f["throttled"],
        "run_wait": f["run_wait"],
        "read": np.where(p["store_net"] > 0, 0.0, f["read"]),
        "net_store": np.where(p["store_net"] > 0, f["read"], 0.0),
        "net_comm": steps * p["inter"] * (1.0 - p["rdma"]),
        "ib": steps * p["inter"] * p["rdma"],
        "swapin": f["swapin"],
        "oom": f["oom"],
        "anon": f["anon"],
        "cache": f["cache"],
        "over": f["over"],
        "mem_stall": f["mem_stall"],
        # PSI io "some": a reader waits on a block device or NFS (D state); HTTP readers wait in S
        "io_wait": np.minimum(1.0, f["util"]) * p["dstate"] * np.where(io_limited, 0.95, 0.6),
        "workers_busy": worker_busy * workers,
        "workers_io": np.where(io_limited, workers * (1.0 - worker_busy), 0.0),
    }
