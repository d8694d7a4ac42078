"""The DCGM side of the query catalog: dcgm-exporter's per-GPU fields combined per pod, its clock-event
reasons tested bit by bit, framebuffer and NVLink read as what dcgm-exporter really publishes.

Every metric name comes from the signal table (contract/signals.py).
"""

from __future__ import annotations

from collections.abc import Callable

from bottleneck_operator.contract.signals import CLOCK_REASONS as CLOCK_REASONS
from bottleneck_operator.contract.signals import Family, SignalSpec, metrics_of
from bottleneck_operator.telemetry.names import quote
from bottleneck_operator.telemetry.selectors import QueryContext, sel

# DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL's unit: 1000 KiB/s (see nvlink_total).
NVLINK_TOTAL_UNIT_BYTES = 1.024e6
# FB_USED exists on every GPU, MIG instances included (GPU_UTIL does not under MIG): it counts GPUs.
FB_USED, FB_FREE = metrics_of("fb_used_frac")


def dcgm_gauge(spec: SignalSpec) -> Callable[[QueryContext], str]:
    """A plain per-GPU gauge, combined over the pod's GPUs as the signal declares (mean by default)."""
    metric, how, scale = spec.metric, spec.how, spec.scale

    def build(c: QueryContext) -> str:
        expr = f"{how} by ({c.dcgm_by}) ({c.last(Family.DCGM, c.dcgmsel(metric))})"
        return f"{expr} / {scale:g}" if scale != 1.0 else expr

    return build


def slowdown_test(x: str) -> str:
    """1 where the reasons bitmask ``x`` has a bit that slows a loaded GPU, else 0 (PromQL has no bit operators).

    NVML's bits: 0x1 GPU idle, 0x2 application clocks setting, 0x4 SW power cap, 0x8 HW slowdown,
    0x10 sync boost, 0x20 SW thermal, 0x40 HW thermal, 0x80 HW power brake, 0x100 display clocks.
    ``floor(x / 4) % 4`` is bits 0x4 and 0x8, ``floor(x / 32) % 8`` bits 0x20 to 0x80.
    """
    return f"(floor({x} / 4) % 4 + floor({x} / 32) % 8 > bool 0)"


def clock_slowdown(c: QueryContext) -> str:
    # One series per GPU after the test (arithmetic drops the metric name): where a GPU carries both
    # names (an exporter upgraded mid-window), ``or`` keeps the newer name's sample.
    tests = [slowdown_test(c.last(Family.DCGM, c.dcgmsel(name))) for name in metrics_of("clock_slowdown_frac")]
    return f"avg by ({c.dcgm_by}) ({' or '.join(tests)})"


def fb_used_frac(c: QueryContext) -> str:
    used = c.last(Family.DCGM, c.dcgmsel(FB_USED))
    free = c.last(Family.DCGM, c.dcgmsel(FB_FREE))
    return f"max by ({c.dcgm_by}) ({used} / ({used} + {free}))"


def nvlink_total(c: QueryContext) -> str:
    # Typed a counter, but DCGM publishes an instantaneous TX+RX rate in units of 1000 KiB/s (its cache
    # manager divides the NVML KiB delta by the interval, then by 1000): read it as a gauge, never rate().
    (metric,) = metrics_of("nvlink_total_bps")
    gauge = c.last(Family.DCGM, c.dcgmsel(metric))
    return f"avg by ({c.dcgm_by}) ({gauge}) * {NVLINK_TOTAL_UNIT_BYTES:g}"


def gpus(c: QueryContext) -> str:
    per_gpu = f"group by ({c.dcgm_by}, modelName, gpu, UUID, GPU_I_ID) ({c.last(Family.DCGM, c.dcgmsel(FB_USED))})"
    return f"count by ({c.dcgm_by}, modelName) ({per_gpu})"


def unmapped_gpus(c: QueryContext) -> str:
    host = c.dcgm_hostname_label
    series = sel(FB_USED, f"{host}=~{quote(c.nodes)}", f'{c.dcgm_pod_label}=""')
    return f"count by ({host}) ({c.last(Family.DCGM, series)})"
