"""A full framebuffer is never a stall: forcing it on held-out Jobs changes no verdict.

PyTorch's caching allocator, JAX's preallocation and TensorFlow's default all keep the framebuffer
nearly full in healthy Jobs (docs/telemetry.md, "Framebuffer use"), so its fullness must move neither
the class, nor the confidence, nor the evidence.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from bottleneck_operator.analysis.classify import analyze_windows
from bottleneck_operator.analysis.features.extract import FEATURE_NAMES
from bottleneck_operator.analysis.model.classifier import BottleneckModel, load_model
from bottleneck_operator.contract.verdict import Verdict
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.simulation import generate_jobs

START = 1_700_000_000.0


def _with_framebuffer(window: JobWindow, frac: float) -> JobWindow:
    """The window with every framebuffer sample set to ``frac`` (gaps stay gaps)."""
    pods = []
    for pod in window.pods:
        fb = pod.signals["fb_used_frac"]
        pods.append(replace(pod, signals={**pod.signals, "fb_used_frac": np.where(np.isnan(fb), np.nan, frac)}))
    return replace(window, pods=tuple(pods))


def _key(v: Verdict) -> tuple[object, ...]:
    return (
        v.bottleneck,
        round(v.confidence, 6),
        tuple(e.signal for e in v.evidence),
        tuple(r.action for r in v.recommendations),
    )


@pytest.fixture(scope="module")
def held_out() -> list[JobWindow]:
    jobs = generate_jobs(31, 20, start=START, duration=1200.0, holdout=True)
    return [j.to_window(step=30.0) for j in jobs if not j.ambiguous]


def test_no_feature_reads_the_framebuffer() -> None:
    assert not [n for n in FEATURE_NAMES if n.startswith("fb_")]


@pytest.mark.parametrize("which", ["shipped", "tiny"])
def test_forcing_a_full_framebuffer_changes_no_verdict(
    which: str, held_out: list[JobWindow], tiny_model: BottleneckModel
) -> None:
    model = load_model() if which == "shipped" else tiny_model
    low = analyze_windows([_with_framebuffer(w, 0.3) for w in held_out], model)
    full = analyze_windows([_with_framebuffer(w, 0.98) for w in held_out], model)
    assert len(full) == len(held_out) > 10
    assert [_key(v) for v in full] == [_key(v) for v in low]
    assert not [e for v in full for e in v.evidence if e.signal == "fb_used_frac"]
