"""dcgm-exporter's series: per GPU, with the exporter's field names, units and labels.

Labels gpu, UUID, pci_bus_id, device, modelName, Hostname and (pod mapping on, the Helm chart's
default) namespace, pod, container. PROF ratios 0-1, GPU_UTIL and MEM_COPY_UTIL 0-100, FB in MiB,
PCIe/NVLink PROF bytes/s. Field sets: "dev" (DEV fields only), "shipped" (+ GR_ENGINE_ACTIVE, tensor,
DRAM, PCIe: dcgm-exporter's default counters files), "full" (+ SM activity/occupancy, NVLink PROF).
Beside a field set, a counters file may turn on the FP32/FP16 pipes (with the full set) and the
enforced power limit with the clock-event reasons (named ``DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`` by
releases built on a DCGM before 3.3).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from bottleneck_operator.contract.signals import metrics_of
from bottleneck_operator_dev.simulation import catalog as cat
from bottleneck_operator_dev.simulation.series import Series
from bottleneck_operator_dev.simulation.state import B, F, rounded

if TYPE_CHECKING:
    from bottleneck_operator_dev.simulation.environment import Environment
    from bottleneck_operator_dev.simulation.record import JobRecord

TRAINER = "trainer"
_BUS_IDS = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)  # a DGX A100's GPU bus numbers


def _field(signal: str, key: str, text: str, index: int = 0) -> tuple[str, tuple[str, str]]:
    """One dcgm field: the ``index``-th metric the signal table reads ``signal`` from, its state key, its help."""
    return metrics_of(signal)[index], (key, text)


# dcgm field -> (state key, help text)
DCGM_DEV = dict(
    (
        _field("gpu_util", "gpu_util", "GPU utilization (in %)."),
        _field("mem_copy_util", "mem_copy_util", "Memory utilization (in %)."),
        _field("fb_used_frac", "fb_used", "Framebuffer memory used (in MiB).", 0),
        _field("fb_used_frac", "fb_free", "Framebuffer memory free (in MiB).", 1),
        _field("power_w", "power", "Power draw (in W)."),
        _field("sm_clock_mhz", "sm_clock", "SM clock frequency (in MHz)."),
    )
)
DCGM_SHIPPED = dict(
    (
        _field("gr_engine_active", "gr_engine_active", "Ratio of time the graphics engine is active."),
        _field("tensor_active", "tensor_active", "Ratio of cycles the tensor (HMMA) pipe is active."),
        _field("dram_active", "dram_active", "Ratio of cycles the device memory interface is active."),
        _field("pcie_tx_bps", "pcie_tx", "The rate of data transmitted over the PCIe bus (bytes/s)."),
        _field("pcie_rx_bps", "pcie_rx", "The rate of data received over the PCIe bus (bytes/s)."),
    )
)
DCGM_FULL = dict(
    (
        _field("sm_active", "sm_active", "The ratio of cycles an SM has at least 1 warp assigned."),
        _field("sm_occupancy", "sm_occupancy", "The ratio of number of warps resident on an SM."),
        _field("nvlink_tx_bps", "nvlink_tx", "The rate of data transmitted over NVLink (bytes/s)."),
        _field("nvlink_rx_bps", "nvlink_rx", "The rate of data received over NVLink (bytes/s)."),
    )
)
DCGM_PIPES = dict(
    (
        _field("fp32_active", "fp32_active", "Ratio of cycles the fp32 pipes are active."),
        _field("fp16_active", "fp16_active", "Ratio of cycles the fp16 pipes are active."),
    )
)
_POWER_LIMIT = _field("power_limit_w", "power_limit", "Power management limit (in W).")
DCGM_POWER_CLOCKS = dict(
    (_POWER_LIMIT, _field("clock_slowdown_frac", "clock_reasons", "Current clock event reasons (bitmask).", 0))
)
# The same field as releases built on a DCGM before 3.3 name it.
DCGM_POWER_CLOCKS_LEGACY = dict(
    (_POWER_LIMIT, _field("clock_slowdown_frac", "clock_reasons", "Current clock throttle reasons (bitmask).", 1))
)
# Typed a counter in dcgm-exporter, yet an instantaneous rate (see _gpu_series).
(NVLINK_TOTAL,) = metrics_of("nvlink_total_bps")
# Published where a scenario injects XID errors (state key "xid"): the last XID code per GPU.
(XID,) = metrics_of("xid_code")


def dcgm_fields(env: Environment) -> dict[str, tuple[str, str]]:
    """The dcgm fields a job's exporter publishes: its field set and extras, minus the PROF fields the part lacks."""
    fields = dict(DCGM_DEV)
    if env.dcgm_fieldset in ("shipped", "full"):
        fields.update(DCGM_SHIPPED)
    if env.dcgm_fieldset == "full":
        fields.update(DCGM_FULL)
        if env.dcgm_pipes:
            fields.update(DCGM_PIPES)
    if env.dcgm_power_clocks:
        fields.update(DCGM_POWER_CLOCKS_LEGACY if env.legacy_dcgm else DCGM_POWER_CLOCKS)
    return {k: v for k, v in fields.items() if v[0] not in env.prof_missing}


def gpu_uuid(node: str, index: int) -> str:
    """A stable, unique GPU UUID for a node's GPU."""
    h = zlib.crc32(f"{node}/{index}".encode())
    h2 = zlib.crc32(f"{index}/{node}".encode())
    return f"GPU-{h:08x}-{h2 & 0xFFFF:04x}-{(h2 >> 16) & 0xFFFF:04x}-{h & 0xFFFF:04x}-{h2:08x}{index:04x}"


def _gpu_labels(idx: int, node: str, model: str, owner: tuple[str, str, str] | None) -> dict[str, str]:
    """dcgm-exporter's labels of GPU ``idx``; ``owner`` (namespace, pod, container), or None for no pod."""
    namespace, pod, container = owner or ("", "", "")
    return {
        "gpu": str(idx),
        "UUID": gpu_uuid(node, idx),
        "pci_bus_id": f"00000000:{_BUS_IDS[idx % 8]:02X}:00.0",
        "device": f"nvidia{idx}",
        "modelName": model,
        "Hostname": node,
        "container": container,
        "namespace": namespace,
        "pod": pod,
    }


def _gpu_series(
    fields: dict[str, tuple[str, str]], labels: dict[str, str], values: dict[str, F], up: B, scrape: dict[str, str]
) -> Iterator[Series]:
    for name, (key, text) in fields.items():
        yield Series(name, "gauge", text, labels, values[key], "dcgm", up, scrape)
    if "xid" in values:
        yield Series(
            XID, "gauge", "Value of the last XID error encountered.", labels, values["xid"], "dcgm", up, scrape
        )
    # Typed a counter in dcgm-exporter (its name has no _total, so OpenMetrics calls it "unknown"), yet
    # the value is an instantaneous rate: a scraper that rate()s it gets garbage.
    yield Series(
        NVLINK_TOTAL, "unknown", "Total number of NVLink bandwidth counters for all lanes.",
        labels, values["nvlink_total"], "dcgm", up, scrape,
    )  # fmt: skip


def dcgm_series(job: JobRecord) -> Iterator[Series]:
    """dcgm-exporter's series for the job's GPUs and the other GPUs of its nodes.

    Args:
        job: the job.

    Yields:
        One series per GPU and field of the job's field set.
    """
    st = job.state
    sc = job.params
    up = st.up["dcgm"]
    node_ip = {nd.name: nd.ip for nd in job.nodes}
    fields = dcgm_fields(sc.env)
    xid = "xid" in st.gpu
    for p, pod in enumerate(job.pods):
        for g in range(pod.gpu_count):
            idx = pod.first_gpu + g
            labels = _gpu_labels(idx, pod.node, pod.gpu_model, (job.namespace, pod.pod, TRAINER))
            scrape = {"instance": f"{node_ip[pod.node]}:9400", "job": "dcgm-exporter"}
            yield from _gpu_series(fields, labels, {key: st.gpu[key][p, g] for key in st.gpu}, up, scrape)
    yield from _other_gpus_series(job, fields, xid)


def _other_gpus_series(job: JobRecord, fields: dict[str, tuple[str, str]], xid: bool) -> Iterator[Series]:
    """The GPUs of the job's nodes that the job does not use.

    dcgm-exporter reports every GPU of the node: the rest belong to neighbours' pods or to no pod
    (then the pod labels are empty), and a data layer must not mistake them for the job's.
    """
    st = job.state
    sc = job.params
    kind = cat.GPU_KINDS[sc.gpu]
    for j, nd in enumerate(job.nodes):
        used = {p.first_gpu + g for p in job.pods if p.node == nd.name for g in range(p.gpu_count)}
        neighbours = job.neighbours[j] if job.neighbours else ()
        scrape = {"instance": f"{nd.ip}:9400", "job": "dcgm-exporter"}
        for idx in sorted(set(range(nd.gpus)) - used):
            rng = np.random.default_rng([sc.seed, 13, j, idx])
            owner = neighbours[idx % len(neighbours)] if neighbours and rng.random() < 0.7 else None
            busy = float(rng.uniform(0.3, 1.0)) if owner else 0.0
            values = _other_gpu(kind, busy, st.t.size, rng, kind.tdp_w * sc.env.power_cap)
            if xid:  # the neighbours' GPUs had no XID error
                values["xid"] = np.zeros(st.t.size)
            labels = _gpu_labels(idx, nd.name, kind.model_name, (owner[0], owner[1], "worker") if owner else None)
            yield from _gpu_series(fields, labels, values, st.up["dcgm"], scrape)


def _other_gpu(kind: cat.GpuKind, busy: float, n: int, rng: np.random.Generator, limit: float) -> dict[str, F]:
    """Plausible values of a GPU the job does not use: a neighbour's busy one, or an idle one (``limit``:
    the power limit its board enforces, the same on every GPU of the node)."""
    level = np.clip(busy * np.exp(rng.normal(0, 0.05, n)), 0, 1)
    fb_total = kind.spec.memory_gb * 1e9 / cat.MIB
    fb_used = np.full(n, float(np.round(fb_total * (rng.uniform(0.3, 0.9) if busy else 0.001))))
    sm = level * rng.uniform(0.5, 0.9)
    return {
        "gpu_util": rounded(level * 100),
        "mem_copy_util": rounded(level * rng.uniform(10, 50)),
        "fb_used": fb_used,
        "fb_free": rounded(fb_total * 0.995 - fb_used),
        "power": np.minimum(kind.idle_w + (kind.tdp_w - kind.idle_w) * sm, limit * 0.99),
        "sm_clock": np.full(n, kind.boost_mhz if busy else 210.0),
        "gr_engine_active": level * 0.97,
        "tensor_active": sm * rng.uniform(0.1, 0.5),
        "dram_active": sm * rng.uniform(0.2, 0.6),
        "pcie_tx": level * 5e7,
        "pcie_rx": level * rng.uniform(1e8, 2e9),
        "sm_active": sm,
        "sm_occupancy": sm * rng.uniform(0.2, 0.5),
        "nvlink_tx": np.zeros(n),
        "nvlink_rx": np.zeros(n),
        "nvlink_total": np.zeros(n),
        "fp32_active": sm * rng.uniform(0.005, 0.06),
        "fp16_active": np.zeros(n),
        "power_limit": np.full(n, limit),
        "clock_reasons": np.full(n, 0.0 if busy else float(cat.CLOCK_REASON_IDLE)),
    }
