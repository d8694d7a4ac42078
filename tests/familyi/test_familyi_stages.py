"""The step model that labels family I: overlap, removal and the label it gives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck, Mechanism
from bottleneck_operator_dev.familyi.job import draft
from bottleneck_operator_dev.familyi.stages import Stages, label_of, mechanism_of, savings

QUIET = Stages(
    read=0.1, decode=0.2, launch=0.02, h2d=0.01, math=1.0, hbm=0.2, intra=0.1, inter=0.1,
    bubble=0.0, host_stall=0.0, overlap=0.8, pinned=True,
)  # fmt: skip


def test_a_compute_heavy_step_is_gpu_bound_with_its_collectives_hidden() -> None:
    assert QUIET.exposed_comm() == 0.0 and QUIET.exposed_h2d() == 0.0
    assert QUIET.step() == QUIET.gpu_time() == 0.02 + 1.0 + 0.2
    assert label_of(QUIET)[0] is Bottleneck.GPU


def test_a_slow_reader_makes_the_gpu_wait_and_the_job_io_bound() -> None:
    slow = replace(QUIET, read=2.0)
    assert slow.step() == slow.input_time() == 2.0
    assert label_of(slow) == (Bottleneck.IO, (2.0 - 1.22 - 0.0) / 2.0)


def test_decode_beyond_the_gpu_is_cpu_bound() -> None:
    assert label_of(replace(QUIET, decode=1.6))[0] is Bottleneck.CPU


def test_exposed_collectives_and_pageable_copies_are_interconnect() -> None:
    fabric = replace(QUIET, inter=3.0)
    assert fabric.exposed_comm() > 2.0 and label_of(fabric)[0] is Bottleneck.INTERCONNECT
    assert (
        mechanism_of(fabric, Bottleneck.INTERCONNECT, cpu_cause=Mechanism.SATURATED, nvlink=True) is Mechanism.NETWORK
    )
    copies = replace(QUIET, h2d=1.5, pinned=False)
    assert copies.exposed_h2d() == 1.5 and label_of(copies)[0] is Bottleneck.INTERCONNECT
    assert replace(copies, pinned=True).exposed_h2d() == 1.5 - 1.2


def test_memory_has_two_mechanisms_told_apart_by_their_stage() -> None:
    hbm = replace(QUIET, hbm=1.5)
    host = replace(QUIET, host_stall=1.5)
    assert label_of(hbm)[0] is label_of(host)[0] is Bottleneck.MEMORY
    cause = Mechanism.SATURATED
    assert mechanism_of(hbm, Bottleneck.MEMORY, cpu_cause=cause, nvlink=True) is Mechanism.HBM_BANDWIDTH
    assert mechanism_of(host, Bottleneck.MEMORY, cpu_cause=cause, nvlink=True) is Mechanism.HOST_MEMORY_PRESSURE
    assert host.input_time() > QUIET.input_time()  # host stalls slow the loader workers too


def test_a_pipeline_bubble_is_no_class_s_stage() -> None:
    bubbly = replace(QUIET, bubble=0.5)
    assert all(abs(a - b) < 1e-12 for a, b in zip(savings(bubbly).values(), savings(QUIET).values(), strict=True))


def test_the_label_is_always_the_largest_saving() -> None:
    rng = np.random.default_rng(4)
    for k in range(200):
        target = CLASSES[k % 5]
        d = draft(rng, target, Mechanism.HBM_BANDWIDTH.value if k % 2 else Mechanism.HOST_MEMORY_PRESSURE.value)
        saved = savings(d.stages)
        assert d.label is max(saved, key=lambda c: saved[c]) is target
        assert all(v >= -1e-12 for v in saved.values())
        assert 0.005 < d.margin <= 1.0
