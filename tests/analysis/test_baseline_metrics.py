"""The threshold-rule baseline and the evaluation figures."""

from __future__ import annotations

import pytest

from bottleneck_operator.analysis.evaluation.baseline import rule_verdict
from bottleneck_operator.analysis.evaluation.metrics import expected_calibration_error, figures, format_confusion
from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import Bottleneck

from .synth import make_window

B = Bottleneck


def test_rules_on_their_own_textbook_cases() -> None:
    gpu = make_window(B.GPU)
    assert rule_verdict(gpu) is B.GPU
    mem = make_window(B.MEMORY)  # framebuffer 97 % full
    assert rule_verdict(mem) is B.MEMORY
    io = make_window(B.IO, noise=0.0)
    for name, v in (("node_cpu_iowait_frac", 0.6), ("gpu_util", 0.05)):
        io.pods[0].signals[name][:] = v  # type: ignore[index]
    assert rule_verdict(io) is B.IO
    cpu = make_window(B.CPU, noise=0.0)
    for name, v in (("node_cpu_busy_frac", 0.95), ("gpu_util", 0.05)):
        cpu.pods[0].signals[name][:] = v  # type: ignore[index]
    assert rule_verdict(cpu) is B.CPU


def test_rules_miss_what_they_cannot_see() -> None:
    # NCCL keeps GPU_UTIL at 97 %: utilisation rules call it GPU-bound
    assert rule_verdict(make_window(B.INTERCONNECT)) is B.GPU
    # a CFS-throttled container on an idle node: node CPU at 30 %, GPU_UTIL 40 %, so the CPU rule does not fire
    # and only the input-bound fallback guesses
    throttled = make_window(B.CPU, noise=0.0)
    throttled.pods[0].signals["node_cpu_iowait_frac"][:] = 0.35  # type: ignore[index]
    assert rule_verdict(throttled) is B.IO
    no_gpu = make_window(B.GPU, drop=[Family.DCGM_DEV])
    assert rule_verdict(no_gpu) is B.UNKNOWN


def test_figures_count_abstentions_against_recall() -> None:
    truth = ["IO", "IO", "CPU", "GPU"]
    pred = ["IO", "Unknown", "CPU", "IO"]
    f = figures(truth, pred, [0.9, 0.4, 0.8, 0.6])
    assert f.per_class["IO"].recall == pytest.approx(0.5)
    assert f.per_class["IO"].precision == pytest.approx(0.5)
    assert f.per_class["GPU"].recall == 0.0
    assert f.abstention == pytest.approx(0.25)
    assert f.accuracy == pytest.approx(0.5)
    assert f.confusion["IO"]["Unknown"] == 1
    assert f.macro_f1 == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert "Unknown" in format_confusion(f)


def test_ece() -> None:
    assert expected_calibration_error([1.0, 1.0], [True, True]) == 0.0
    assert expected_calibration_error([0.9] * 10, [True] * 5 + [False] * 5) == pytest.approx(0.4)
