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

from bottleneck_operator.simulation import catalog as cat
from bottleneck_operator.simulation.series import Series
from bottleneck_operator.simulation.state import B, F, rounded

if TYPE_CHECKING:
    from bottleneck_operator.simulation.environment import Environment
    from bottleneck_operator.simulation.record import JobRecord

TRAINER = "trainer"
_BUS_IDS = (0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD)  # a DGX A100's GPU bus numbers

# dcgm field -> (state key, help text)
DCGM_DEV = {
    "DCGM_FI_DEV_GPU_UTIL": ("gpu_util", "GPU utilization (in %)."),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("mem_copy_util", "Memory utilization (in %)."),
    "DCGM_FI_DEV_FB_USED": ("fb_used", "Framebuffer memory used (in MiB)."),
    "DCGM_FI_DEV_FB_FREE": ("fb_free", "Framebuffer memory free (in MiB)."),
    "DCGM_FI_DEV_POWER_USAGE": ("power", "Power draw (in W)."),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock", "SM clock frequency (in MHz)."),
}
DCGM_SHIPPED = {
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": ("gr_engine_active", "Ratio of time the graphics engine is active."),
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": ("tensor_active", "Ratio of cycles the tensor (HMMA) pipe is active."),
    "DCGM_FI_PROF_DRAM_ACTIVE": ("dram_active", "Ratio of cycles the device memory interface is active."),
    "DCGM_FI_PROF_PCIE_TX_BYTES": ("pcie_tx", "The rate of data transmitted over the PCIe bus (bytes/s)."),
    "DCGM_FI_PROF_PCIE_RX_BYTES": ("pcie_rx", "The rate of data received over the PCIe bus (bytes/s)."),
}
DCGM_FULL = {
    "DCGM_FI_PROF_SM_ACTIVE": ("sm_active", "The ratio of cycles an SM has at least 1 warp assigned."),
    "DCGM_FI_PROF_SM_OCCUPANCY": ("sm_occupancy", "The ratio of number of warps resident on an SM."),
    "DCGM_FI_PROF_NVLINK_TX_BYTES": ("nvlink_tx", "The rate of data transmitted over NVLink (bytes/s)."),
    "DCGM_FI_PROF_NVLINK_RX_BYTES": ("nvlink_rx", "The rate of data received over NVLink (bytes/s)."),
}


DCGM_PIPES = {
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE": ("fp32_active", "Ratio of cycles the fp32 pipes are active."),
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE": ("fp16_active", "Ratio of cycles the fp16 pipes are active."),
}
DCGM_POWER_CLOCKS = {
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("power_limit", "Power management limit (in W)."),
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": ("clock_reasons", "Current clock event reasons (bitmask)."),
}
# The same field as releases built on a DCGM before 3.3 name it.
DCGM_POWER_CLOCKS_LEGACY = {
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("power_limit", "Power management limit (in W)."),
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": ("clock_reasons", "Current clock throttle reasons (bitmask)."),
}


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
    # Typed a counter in dcgm-exporter (its name has no _total, so OpenMetrics calls it "unknown"), yet
    # the value is an instantaneous rate: a scraper that rate()s it gets garbage.
    yield Series(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "unknown", "Total number of NVLink bandwidth counters for all lanes.",
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
    for p, pod in enumerate(job.pods):
        for g in range(pod.gpu_count):
            idx = pod.first_gpu + g
            labels = _gpu_labels(idx, pod.node, pod.gpu_model, (job.namespace, pod.pod, TRAINER))
            scrape = {"instance": f"{node_ip[pod.node]}:9400", "job": "dcgm-exporter"}
            yield from _gpu_series(fields, labels, {key: st.gpu[key][p, g] for key in st.gpu}, up, scrape)
    yield from _other_gpus_series(job, fields)


def _other_gpus_series(job: JobRecord, fields: dict[str, tuple[str, str]]) -> Iterator[Series]:
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
