"""Max-min fair allocation of a Job's cluster, phase by phase, and the Job's stages from its shares.

Each phase builds the resource graph (storage, each node's CPU, PCIe, NVLink and NIC, the shared
uplink), the Job's flows and the active neighbours' flows, fills it (:mod:`.fairshare`), and turns
the Job's shares into :class:`~.step.PodStep` stages, with what the neighbours add to the node-level
counters kept beside them for the exporters.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from bottleneck_operator_dev.familyu.fairshare import Allocation, Flow, progressive_fill, resource_class
from bottleneck_operator_dev.familyu.hardware import GB, PCIE_GBS
from bottleneck_operator_dev.familyu.scenario import Scenario
from bottleneck_operator_dev.familyu.step import RESOURCES, HostMemory, PodStep, Roofline, Stage


@dataclass(frozen=True)
class Demands:
    """One pod's work per step on each resource (the workload scaled by the scenario's pressures)."""

    read: float
    decode: float
    h2d: float
    grad: float
    dev: Roofline  # at the board's peak; each pod scales it by its slowest GPU's clock


def demands(scn: Scenario) -> Demands:
    wl, g, p = scn.workload, scn.gpus_per_pod, scn.pressure
    comm_p = max(p["nvlink"], p["network"]) if scn.nvlink else max(p["pcie"], p["network"])
    # the SM pressure scales the matmul group only, the HBM pressure the memory-bound bytes only,
    # so each moves its own side of the roofline
    fa, fb = wl.flops * (1 - wl.b_frac) * p["sm"], wl.flops * wl.b_frac
    # larger matmuls (what a heavier SM demand stands for) also reuse more: a GEMM scaled by k in
    # each dimension does k^3 the FLOPs over k^2 the bytes, so intensity grows as FLOPs^(1/3)
    bytes_a = fa / (wl.intensity_a * p["sm"] ** (1.0 / 3.0))
    bytes_b = (fb / wl.intensity_b + wl.extra_hbm) * p["hbm"]
    tensor = scn.gpu.tensor_tflops * (0.5 if wl.precision == "tf32" else 1.0)
    peak = (scn.gpu.fp32_tflops if wl.precision == "fp32" else tensor) * 1e12 * scn.peak_eff
    return Demands(
        read=g * wl.read * p["storage"],
        decode=g * wl.decode * p["cpu"],
        h2d=g * wl.h2d * p["pcie"],
        grad=wl.grad * comm_p,
        dev=Roofline(fa, bytes_a, fb, bytes_b, peak, scn.gpu.hbm_gbs * GB * scn.hbm_eff),
    )


@dataclass(frozen=True)
class NodeLoad:
    """What the neighbours put on one node in one phase (their allocated rates)."""

    cores: float
    disk_bps: float
    net_bps: float
    ib_bps: float
    anon: float
    majfault_ps: float
    mem_stall: float


@dataclass(frozen=True)
class PodPhase:
    """One pod in one phase: its stages, its allocation's bounds, and the neighbours' load."""

    step: PodStep
    cpu_bound: str  # what bounds the decode flow: "cpu/limit", "cpu/workers", "cpu/node<i>"
    decode_cap: float
    neighbours: NodeLoad


def _flow_stage(alloc: Allocation, flow: Flow, work: float) -> Stage:
    # only the class that bounds the flow can speed it up when doubled
    cls = resource_class(alloc.bound_by.get(flow.name, ""))
    rate = alloc.rates[flow.name]
    doubled = alloc.doubled_rate(flow, cls) if cls in RESOURCES else rate
    return Stage(work, rate, {cls: doubled} if doubled != rate else {})


def _water_fill(capacity: float, demands: list[float]) -> list[float]:
    """Max-min fair shares of one capacity (a node's host memory): progressive filling on one resource.

    With a single resource the filling has a closed form: serve demands smallest first, each at most
    an equal split of what is left.
    """
    shares = [0.0] * len(demands)
    left, remaining = capacity, len(demands)
    for k in sorted(range(len(demands)), key=lambda j: demands[j]):
        shares[k] = min(demands[k], left / remaining)
        left -= shares[k]
        remaining -= 1
    return shares


def _shared_graph(scn: Scenario, k: int) -> tuple[dict[str, float], list[Flow]]:
    """The resources all pods share (a storage service, the uplink) and the other tenants on them."""
    cap: dict[str, float] = {}
    flows: list[Flow] = []
    if scn.storage.startswith("local:"):
        for i in range(scn.pods):
            cap[f"storage/disk{i}"] = scn.storage_bps
    else:
        cap["storage/svc"] = scn.storage_bps
        if scn.storage_bg[k] > 0:
            flows.append(Flow("bg/storage", ("storage/svc",), cap=scn.storage_bg[k] * scn.storage_bps))
    if scn.pods > 1 and scn.cross_leaf:
        cap["network/uplink"] = scn.pods * scn.nic_bps / scn.oversub
        if scn.uplink_bg[k] > 0:
            flows.append(Flow("bg/uplink", ("network/uplink",), cap=scn.uplink_bg[k] * cap["network/uplink"]))
    return cap, flows


def _node_graph(scn: Scenario, k: int, i: int, cap: dict[str, float], flows: list[Flow]) -> None:
    """Node i's resources, the Job's flows on them and the active neighbours' (added in place)."""
    g, n = scn.gpus_per_pod, scn.pods
    pcie_bps = PCIE_GBS[scn.gpu.pcie_gen] * GB * 0.85  # achievable share of x16 (judgement)
    cap[f"cpu/node{i}"] = max(1.0, scn.node_cpus - 1.0 - scn.trainer_cores)
    cap[f"pcie/node{i}"] = max(1, math.ceil(g / scn.gpus_per_switch)) * pcie_bps
    cap[f"network/nic{i}"] = scn.nic_bps
    if scn.nvlink:
        cap[f"nvlink/node{i}"] = g * scn.gpu.nvlink_gbs / 2.0 * GB * 0.8  # per direction, achievable
    disk = f"storage/disk{i}" if scn.storage.startswith("local:") else "storage/svc"
    client = "storage/client" if math.isfinite(scn.client_bps) else ""
    flows.append(Flow(f"read{i}", (disk,), cap=scn.client_bps, cap_kind=client))
    workers = float(g * scn.workers_per_gpu)  # one single-threaded decoder each
    if scn.cpu_limit is not None and scn.cpu_limit - scn.trainer_cores < workers:
        flows.append(Flow(f"decode{i}", (f"cpu/node{i}",), max(0.5, scn.cpu_limit - scn.trainer_cores), "cpu/limit"))
    else:
        flows.append(Flow(f"decode{i}", (f"cpu/node{i}",), workers, "cpu/workers"))
    flows.append(Flow(f"h2d{i}", (f"pcie/node{i}",)))
    if g > 1:
        flows.append(Flow(f"intra{i}", (f"nvlink/node{i}",) if scn.nvlink else (f"pcie/node{i}",)))
    if n > 1:
        path: tuple[str, ...] = (f"network/nic{i}",)
        path += ("network/uplink",) if scn.cross_leaf else ()
        path += (f"pcie/node{i}",) if scn.gdr else ()  # GPUDirect RDMA crosses the PCIe switch
        flows.append(Flow(f"inter{i}", path))
    for j, nb in enumerate(scn.neighbours[i]):
        a = scn.active[k][i][j]
        if a <= 0:
            continue
        flows.append(Flow(f"nb{i}.{j}/cpu", (f"cpu/node{i}",), cap=nb.cores * a))
        if nb.pcie_bps > 0:
            flows.append(Flow(f"nb{i}.{j}/pcie", (f"pcie/node{i}",), cap=nb.pcie_bps * a))
        if nb.net_bps + nb.ib_bps > 0:
            flows.append(Flow(f"nb{i}.{j}/net", (f"network/nic{i}",), cap=(nb.net_bps + nb.ib_bps) * a))
        if nb.disk_bps > 0 and scn.storage.startswith("local:"):
            flows.append(Flow(f"nb{i}.{j}/disk", (f"storage/disk{i}",), cap=nb.disk_bps * a))


def _node_load(scn: Scenario, k: int, i: int, alloc: Allocation) -> NodeLoad:
    """What the active neighbours of node i got, for the node-level counters."""
    rate = alloc.rates
    nbs = [(j, nb, scn.active[k][i][j]) for j, nb in enumerate(scn.neighbours[i])]
    net = [(rate.get(f"nb{i}.{j}/net", 0.0), nb) for j, nb, _ in nbs]
    return NodeLoad(
        cores=sum(rate.get(f"nb{i}.{j}/cpu", 0.0) for j, _, _ in nbs),
        # on a shared store the neighbours' local reads are not on the Job's path, but on its disk
        disk_bps=sum(rate.get(f"nb{i}.{j}/disk", nb.disk_bps * a) for j, nb, a in nbs if a > 0),
        net_bps=sum(r * nb.net_bps / max(nb.net_bps + nb.ib_bps, 1.0) for r, nb in net),
        ib_bps=sum(r * nb.ib_bps / max(nb.net_bps + nb.ib_bps, 1.0) for r, nb in net),
        anon=sum(nb.anon * a for _, nb, a in nbs if a > 0),
        majfault_ps=sum(nb.majfault_ps * a for _, nb, a in nbs),
        mem_stall=max((nb.mem_stall * a for _, nb, a in nbs), default=0.0),
    )


def _pod_phase(scn: Scenario, d: Demands, k: int, i: int, alloc: Allocation, by_name: dict[str, Flow]) -> PodPhase:
    g, n = scn.gpus_per_pod, scn.pods
    load = _node_load(scn, k, i, alloc)
    nb_anon = [nb.anon * scn.active[k][i][j] for j, nb in enumerate(scn.neighbours[i]) if scn.active[k][i][j] > 0]
    fair = _water_fill(scn.node_mem * 0.95, [scn.ws_per_pod, *nb_anon])[0]
    allocation = min(fair, scn.mem_limit) if scn.mem_limit is not None else fair
    clock = min(scn.board_clock[i]) * scn.clock_factor  # synchronous steps wait for the slowest board
    dev = Roofline(d.dev.flops_a, d.dev.bytes_a, d.dev.flops_b, d.dev.bytes_b, d.dev.peak_flops * clock, d.dev.peak_bw)
    zero = Stage(0.0, 1.0)
    step = PodStep(
        io=_flow_stage(alloc, by_name[f"read{i}"], d.read),
        cpu=_flow_stage(alloc, by_name[f"decode{i}"], d.decode),
        mem=HostMemory(scn.ws_per_pod, allocation, scn.touched_per_pod, scn.refault_bps),
        h2d=_flow_stage(alloc, by_name[f"h2d{i}"], d.h2d),
        dev=dev,
        # ring all-reduce: every GPU sends 2(g-1)/g of the gradient; all of them cross the pod's links
        intra=_flow_stage(alloc, by_name[f"intra{i}"], 2.0 * (g - 1) * d.grad) if g > 1 else zero,
        # hierarchical: each node sends 2(n-1)/n of the gradient over its NICs
        inter=_flow_stage(alloc, by_name[f"inter{i}"], 2.0 * (n - 1) / n * d.grad) if n > 1 else zero,
        io_cpu_overlap=scn.io_cpu_overlap,
        h2d_overlap=scn.h2d_overlap,
        comm_overlap=scn.comm_overlap,
    )
    dflow = by_name[f"decode{i}"]
    return PodPhase(step, alloc.bound_by.get(dflow.name, ""), dflow.cap, load)


def build_phases(scn: Scenario) -> list[tuple[float, list[PodPhase]]]:
    """Allocate every phase and compose the Job's stages per pod."""
    d = demands(scn)
    out: list[tuple[float, list[PodPhase]]] = []
    for k, dur in enumerate(scn.phases):
        cap, flows = _shared_graph(scn, k)
        for i in range(scn.pods):
            _node_graph(scn, k, i, cap, flows)
        alloc = progressive_fill(cap, flows)
        by_name = {f.name: f for f in flows}
        out.append((dur, [_pod_phase(scn, d, k, i, alloc, by_name) for i in range(scn.pods)]))
    return out
