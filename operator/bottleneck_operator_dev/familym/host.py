"""What the host exporters show of the step model: cAdvisor, kube-state-metrics, node-exporter, sidecar.

Readings follow the kernel's documentation: PSI ``some`` is the share of time at least one task of
the cgroup (or node) stalled on the resource, ``full`` the share all non-idle tasks did
(Documentation/accounting/psi.rst); iowait is CPU time idle while a task waits on block I/O (proc(5)),
so readers of HTTP object stores, which wait in socket receive, add none; cgroup v2 ``cpu.stat``
counts a period as throttled when the quota ran out in it (cgroup-v2.rst). Node signals include the
neighbours and the background every node carries (kubelet, image pulls, log shipping, scrapes).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familym.plans import Plan
from bottleneck_operator_dev.familym.stages import Stages, Timing

Array = npt.NDArray[np.float64]
MB = 1e6


def _cpu(rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, io_bps: Array) -> dict[str, Array]:
    step = tm.step[None, :]
    pods, length = tm.pod_step.shape
    decode_cores = s.decode / step
    main = rng.uniform(0.8, 1.3) * np.clip(tm.gpu_side / step, 0.3, 1.0)
    socket_cpu = io_bps / (400 * MB) if plan.storage.kind == "object-store" else 0.0 * io_bps
    swap_cpu = np.clip(s.swap / step, 0.0, 1.0) * rng.uniform(0.5, 2.0)
    cores = np.minimum(main + decode_cores + socket_cpu + swap_cpu, s.cores + 1.0)
    out = {"cpu_cores": cores, "sc_cpu_cores": cores * rng.uniform(0.98, 1.0)}
    if plan.cpu_limit is not None:
        demand = (main + s.decode / tm.loader.clip(1e-6)) / plan.cpu_limit
        throttled = np.clip((demand - 0.6) / 0.4, 0.0, 1.0) ** 1.5 * rng.uniform(0.85, 1.0)
        out["cpu_throttled_frac"] = throttled
        out["sc_throttled_frac"] = throttled
        out["cpu_limit_cores"] = np.full((pods, length), plan.cpu_limit)
    per_worker = decode_cores / plan.workers
    # Workers share the decoding evenly; near a full core each, jitter puts some above 0.9 and some below.
    near_full = np.clip((per_worker - 0.8) / 0.15, 0.0, 1.0)
    out["sc_procs_busy"] = np.round(near_full * plan.workers) + (main >= 0.9)
    out["sc_procs_running"] = np.round(1.0 + decode_cores + rng.uniform(0, 1, size=(pods, length)))
    contention = np.clip((decode_cores - 0.9 * s.cores) / np.maximum(s.cores, 1.0), 0.0, 1.0)
    thr = out.get("cpu_throttled_frac", np.zeros((pods, length)))
    out["sc_psi_cpu_some"] = np.clip(0.6 * thr + 2.0 * contention + rng.uniform(0, 0.03, (pods, length)), 0, 1)
    return out


def _io(rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, cold: int) -> tuple[dict[str, Array], Array]:
    """Dataset reads: bytes per second, where they show, and who waits for them."""
    st, step = plan.storage, tm.step[None, :]
    pods, length = tm.pod_step.shape
    bps = np.minimum(s.storage * st.bps / step, st.bps)
    if st.kind == "page-cache":
        warm = np.arange(length) >= cold  # after the first epoch the dataset is served from RAM
        bps = bps * np.where(warm, rng.uniform(0.0, 0.01), 1.0)[None, :]
    waiting = s.read / step  # average workers waiting on storage
    blocking = st.blocking or (st.kind == "page-cache" and cold > 0)
    some = 1.0 - np.exp(-1.5 * waiting) if blocking else np.zeros((pods, length))
    out = {
        "sc_psi_io_some": some,
        "sc_psi_io_full": some * rng.uniform(0.2, 0.6) * np.clip(1.0 - tm.kernels / step, 0.0, 1.0),
        "sc_procs_iowait": np.round(waiting) if blocking else np.zeros((pods, length)),
    }
    local = bps if st.local or st.kind == "page-cache" else 0.0 * bps
    out["fs_read_bps"] = local
    out["sc_io_read_bps"] = local
    mmap = plan.workload in ("recsys-embeddings", "llm-pretrain-fsdp") and st.local
    faults = local / 4096 * rng.uniform(0.1, 0.5) if mmap else 0.0 * local  # memory-mapped datasets read by faulting
    out["sc_majfault_ps"] = faults + rng.uniform(0, 5, (pods, length))
    return out, bps


def _memory(rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing) -> dict[str, Array]:
    pods, length = tm.pod_step.shape
    stall = np.clip(s.swap / tm.step[None, :], 0.0, 1.0)
    limit = float(rng.choice([64, 128, 256, 512])) * 2**30 * max(1, plan.gpus // 2)
    pressured = plan.mechanism == "host-memory-pressure"
    ws = limit * (rng.uniform(0.96, 0.995) if pressured else rng.uniform(0.2, 0.75))
    out = {
        "mem_working_set_bytes": ws * (1.0 + rng.normal(0.0, 0.004, (pods, length))).clip(None, 1.0 / 0.995),
        "mem_limit_bytes": np.full((pods, length), limit),
        "sc_psi_mem_some": np.clip(stall * rng.uniform(1.0, 1.6) + rng.uniform(0, 0.005, (pods, length)), 0, 1),
        # A page back from swap is 4 KiB; a stalled second is thousands of them (TELEMETRY.md's host).
        "sc_swapin_ps": stall * rng.uniform(5e3, 4e4),
        "sc_oom_kills": np.zeros((pods, length)),
    }
    out["sc_psi_mem_full"] = out["sc_psi_mem_some"] * rng.uniform(0.3, 0.7)
    out["sc_majfault_ps"] = out["sc_swapin_ps"] * rng.uniform(1.0, 1.5)
    if pressured and length > 20 and rng.random() < 0.3:
        out["sc_oom_kills"][int(rng.integers(pods)), int(rng.integers(length))] = 1.0 / 30.0  # a loader worker killed
    out["mem_working_set_bytes"] = np.minimum(out["mem_working_set_bytes"], limit)
    return out


def host_signals(rng: np.random.Generator, plan: Plan, s: Stages, tm: Timing, cold: int) -> dict[str, Array]:
    """The pod-level host signals (cAdvisor, kube-state-metrics, sidecar), true values (pods, T)."""
    io, bps = _io(rng, plan, s, tm, cold)
    out = _cpu(rng, plan, s, tm, bps)
    mem = _memory(rng, plan, s, tm)
    mem["sc_majfault_ps"] = mem["sc_majfault_ps"] + io.pop("sc_majfault_ps")
    out.update(io)
    out.update(mem)
    out["_dataset_bps"] = bps
    return out
