"""Writes metrics.om: a small hand-made scenario with the real exporters' names and labels.

One Job ``resnet-io`` (namespace ``ml``, one pod with two A100s on ``gpu-node-1``, a collector
sidecar), a neighbour pod of another Job on the same node, and a Job ``legacy-job`` whose pod lacks
kube-state-metrics' created_by labels (found by the pod-name prefix). 10 minutes at a 30 s scrape
interval from 2026-01-01T00:00:00Z. Regenerate with ``python tests/data/basic/make_basic.py``.
"""

from __future__ import annotations

from pathlib import Path

T0 = 1767225600
STEP = 30
N = 21
NODE_INST = "10.0.1.5:9100"
KUBELET = "10.0.1.5:10250"
DCGM = "10.0.1.5:9400"
KSM = "10.1.0.9:8080"


def lab(**kw: str) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in kw.items()) + "}"


def main() -> None:
    out: list[str] = []

    def family(name: str, kind: str, series: list[tuple[str, list[float]]]) -> None:
        base = name.removesuffix("_total") if kind == "counter" else name
        out.append(f"# TYPE {base} {kind}")
        for labels, values in series:
            for i, v in enumerate(values):
                out.append(f"{name}{labels} {v:g} {T0 + i * STEP}")

    ts = range(N)
    # kube-state-metrics
    ksm = dict(job="kube-state-metrics", instance=KSM)
    family(
        "kube_pod_info",
        "gauge",
        [
            (
                lab(
                    namespace="ml",
                    pod="resnet-io-7xk2p",
                    uid="0b4f",
                    node="gpu-node-1",
                    host_ip="10.0.1.5",
                    created_by_kind="Job",
                    created_by_name="resnet-io",
                    **ksm,
                ),
                [1] * N,
            ),
            (
                lab(
                    namespace="ml",
                    pod="other-train-abcde",
                    uid="9c1d",
                    node="gpu-node-1",
                    host_ip="10.0.1.5",
                    created_by_kind="Job",
                    created_by_name="other-train",
                    **ksm,
                ),
                [1] * N,
            ),
            (
                lab(
                    namespace="ml",
                    pod="legacy-job-q8v7z",
                    uid="77aa",
                    node="gpu-node-1",
                    host_ip="10.0.1.5",
                    created_by_kind="<none>",
                    created_by_name="<none>",
                    **ksm,
                ),
                [1] * N,
            ),
        ],
    )
    family(
        "kube_pod_container_resource_limits",
        "gauge",
        [
            (
                lab(
                    namespace="ml",
                    pod="resnet-io-7xk2p",
                    container="trainer",
                    node="gpu-node-1",
                    resource="cpu",
                    unit="core",
                    **ksm,
                ),
                [8] * N,
            )
        ],
    )
    # node-exporter (kube-prometheus-stack adds the exporter pod's own labels)
    ne = dict(
        job="node-exporter",
        instance=NODE_INST,
        namespace="monitoring",
        pod="node-exporter-x1",
        container="node-exporter",
    )
    family("node_uname_info", "gauge", [(lab(nodename="gpu-node-1", sysname="Linux", machine="x86_64", **ne), [1] * N)])
    cpu = []
    for c in range(4):
        for mode, per_s in (("idle", 0.5), ("iowait", 0.3), ("user", 0.15), ("system", 0.05)):
            cpu.append((lab(cpu=str(c), mode=mode, **ne), [1000 + per_s * STEP * i for i in ts]))
    family("node_cpu_seconds_total", "counter", cpu)
    family(
        "node_disk_read_bytes_total",
        "counter",
        [
            (lab(device="nvme0n1", **ne), [5e9 + 2e8 * STEP * i for i in ts]),
            (lab(device="sda", **ne), [1e9 + 1e6 * STEP * i for i in ts]),
        ],
    )
    family(
        "node_disk_reads_completed_total",
        "counter",
        [(lab(device="nvme0n1", **ne), [1e6 + 1500 * STEP * i for i in ts])],
    )
    family(
        "node_disk_io_time_seconds_total",
        "counter",
        [
            (lab(device="nvme0n1", **ne), [100 + 0.9 * STEP * i for i in ts]),
            (lab(device="sda", **ne), [50 + 0.1 * STEP * i for i in ts]),
        ],
    )
    family("node_memory_MemAvailable_bytes", "gauge", [(lab(**ne), [96e9] * N)])
    family("node_memory_MemTotal_bytes", "gauge", [(lab(**ne), [128e9] * N)])
    family("node_memory_SwapTotal_bytes", "gauge", [(lab(**ne), [0] * N)])
    family("node_memory_SwapFree_bytes", "gauge", [(lab(**ne), [0] * N)])
    family("node_vmstat_pgmajfault", "unknown", [(lab(**ne), [500 + 2 * STEP * i for i in ts])])
    family(
        "node_network_receive_bytes_total",
        "counter",
        [
            (lab(device="eth0", **ne), [1e9 + 1e7 * STEP * i for i in ts]),
            (lab(device="lo", **ne), [1e9 + 9e9 * STEP * i for i in ts]),
        ],
    )
    family(
        "node_network_transmit_bytes_total", "counter", [(lab(device="eth0", **ne), [1e9 + 2e6 * STEP * i for i in ts])]
    )
    family("node_pressure_cpu_waiting_seconds_total", "counter", [(lab(**ne), [10 + 0.05 * STEP * i for i in ts])])
    family("node_pressure_io_waiting_seconds_total", "counter", [(lab(**ne), [10 + 0.6 * STEP * i for i in ts])])
    family("node_pressure_io_stalled_seconds_total", "counter", [(lab(**ne), [10 + 0.4 * STEP * i for i in ts])])
    family("node_pressure_memory_waiting_seconds_total", "counter", [(lab(**ne), [1 + 0.0 * i for i in ts])])
    family("node_pressure_memory_stalled_seconds_total", "counter", [(lab(**ne), [1 + 0.0 * i for i in ts])])
    # cAdvisor via the kubelet
    kb = dict(job="kubelet", instance=KUBELET, metrics_path="/metrics/cadvisor", node="gpu-node-1")
    cad = []
    for pod, container, cores in (
        ("resnet-io-7xk2p", "trainer", 3.0),
        ("resnet-io-7xk2p", "bottleneck-collector", 0.02),
        ("resnet-io-7xk2p", "", 3.02),
        ("resnet-io-7xk2p", "POD", 0.0),
        ("other-train-abcde", "main", 1.0),
    ):
        cad.append(
            (
                lab(namespace="ml", pod=pod, container=container, id=f"/kubepods/{pod}/{container}", **kb),
                [100 + cores * STEP * i for i in ts],
            )
        )
    family("container_cpu_usage_seconds_total", "counter", cad)
    family(
        "container_cpu_cfs_periods_total",
        "counter",
        [(lab(namespace="ml", pod="resnet-io-7xk2p", container="trainer", **kb), [1000 + 10 * STEP * i for i in ts])],
    )
    family(
        "container_cpu_cfs_throttled_periods_total",
        "counter",
        [(lab(namespace="ml", pod="resnet-io-7xk2p", container="trainer", **kb), [100 + 1 * STEP * i for i in ts])],
    )
    family(
        "container_memory_working_set_bytes",
        "gauge",
        [
            (lab(namespace="ml", pod="legacy-job-q8v7z", container="main", **kb), [2e9] * N),
            (lab(namespace="ml", pod="resnet-io-7xk2p", container="trainer", **kb), [20e9] * N),
            (lab(namespace="ml", pod="resnet-io-7xk2p", container="bottleneck-collector", **kb), [30e6] * N),
            (lab(namespace="ml", pod="resnet-io-7xk2p", container="", **kb), [20.03e9] * N),
        ],
    )
    family(
        "container_spec_memory_limit_bytes",
        "gauge",
        [(lab(namespace="ml", pod="resnet-io-7xk2p", container="trainer", **kb), [64e9] * N)],
    )
    family(
        "container_fs_reads_bytes_total",
        "counter",
        [
            (
                lab(namespace="ml", pod="resnet-io-7xk2p", container="trainer", device="/dev/nvme0n1", **kb),
                [1e9 + 1.5e8 * STEP * i for i in ts],
            )
        ],
    )
    # dcgm-exporter with Kubernetes pod mapping
    dc = dict(
        job="dcgm-exporter",
        instance=DCGM,
        Hostname="gpu-node-1",
        modelName="NVIDIA A100-SXM4-80GB",
        namespace="ml",
        pod="resnet-io-7xk2p",
        container="trainer",
        DCGM_FI_DRIVER_VERSION="535.104.05",
    )
    gpus = [
        dict(gpu=str(g), UUID=f"GPU-0000000{g}", device=f"nvidia{g}", pci_bus_id=f"00000000:0{g}:00.0") for g in (0, 1)
    ]

    def per_gpu(vals: tuple[float, float]) -> list[tuple[str, list[float]]]:
        return [(lab(**g, **dc), [v] * N) for g, v in zip(gpus, vals, strict=True)]

    family("DCGM_FI_DEV_GPU_UTIL", "gauge", per_gpu((40, 50)))
    family("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", per_gpu((10, 20)))
    family("DCGM_FI_DEV_FB_USED", "gauge", per_gpu((30000, 60000)))
    family("DCGM_FI_DEV_FB_FREE", "gauge", per_gpu((51920, 21920)))
    family("DCGM_FI_DEV_POWER_USAGE", "gauge", per_gpu((150, 170)))
    family("DCGM_FI_DEV_SM_CLOCK", "gauge", per_gpu((1410, 1410)))
    family("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", per_gpu((0.35, 0.45)))
    family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", per_gpu((0.1, 0.2)))
    family("DCGM_FI_PROF_DRAM_ACTIVE", "gauge", per_gpu((0.2, 0.3)))
    family("DCGM_FI_PROF_PCIE_TX_BYTES", "gauge", per_gpu((1e8, 3e8)))
    family("DCGM_FI_PROF_PCIE_RX_BYTES", "gauge", per_gpu((2e9, 4e9)))
    family(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "counter",
        # an instantaneous rate despite the type: 5e5 B/s in DCGM's units of 1000 KiB/s
        [(lab(**g, **dc), [5e5 / 1.024e6 for _ in ts]) for g in gpus],
    )
    # the collector sidecar
    sc = dict(namespace="ml", pod="resnet-io-7xk2p", node="gpu-node-1", job="bottleneck-collector")
    family("bottleneck_sidecar_cpu_usage_seconds_total", "counter", [(lab(**sc), [10 + 3.0 * STEP * i for i in ts])])
    family("bottleneck_sidecar_cpu_periods_total", "counter", [(lab(**sc), [1000 + 10 * STEP * i for i in ts])])
    family("bottleneck_sidecar_cpu_throttled_periods_total", "counter", [(lab(**sc), [100 + 1 * STEP * i for i in ts])])
    family(
        "bottleneck_sidecar_pressure_waiting_seconds_total",
        "counter",
        [
            (lab(resource=r, **sc), [1 + f * STEP * i for i in ts])
            for r, f in (("cpu", 0.05), ("io", 0.7), ("memory", 0.0))
        ],
    )
    family(
        "bottleneck_sidecar_pressure_stalled_seconds_total",
        "counter",
        [
            (lab(resource=r, **sc), [1 + f * STEP * i for i in ts])
            for r, f in (("cpu", 0.0), ("io", 0.5), ("memory", 0.0))
        ],
    )
    family("bottleneck_sidecar_io_read_bytes_total", "counter", [(lab(**sc), [1e9 + 1.5e8 * STEP * i for i in ts])])
    family("bottleneck_sidecar_memory_major_faults_total", "counter", [(lab(**sc), [5 + 1 * STEP * i for i in ts])])
    family(
        "bottleneck_sidecar_processes",
        "gauge",
        [(lab(state=s, **sc), [v] * N) for s, v in (("running", 2), ("iowait", 6), ("sleeping", 4))],
    )
    family("bottleneck_sidecar_info", "gauge", [(lab(source="cgroup2", version="0.1.0", **sc), [1] * N)])
    # the legacy job's pod (no created_by labels): cAdvisor only
    family(
        "container_memory_rss",
        "gauge",
        [(lab(namespace="ml", pod="legacy-job-q8v7z", container="main", **kb), [1e9] * N)],
    )
    out.append("# EOF")
    Path(__file__).with_name("metrics.om").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
