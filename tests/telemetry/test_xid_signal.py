"""XID errors, a context signal, end to end: declared, queried, simulated, and in the window.

Two simulated Jobs (seeded, at the fixed simulation start every telemetry test backfills): the first
has XID errors injected into its state (its first pod's first GPU reports 79, "fallen off the bus",
from halfway on; every other GPU 0), the second none, so dcgm-exporter publishes no XID series for it.
The window read back from a real Prometheus must carry exactly what the simulator computes itself,
and the model's feature schema must not see the signal.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from tests.conftest import SIM_DURATION, SIM_SEED, SIM_START

from bottleneck_operator.analysis.features.extract import FEATURE_NAMES, feature_schema_hash
from bottleneck_operator.analysis.model.classifier import METADATA_FILE, MODEL_DIR
from bottleneck_operator.contract.signals import CONTEXT_SIGNALS, SIGNAL_NAMES, SIGNALS, Family
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.plan.catalog import ENTRIES

pytestmark = pytest.mark.prometheus
STEP = 30.0
CODE = 79.0


@pytest.fixture(scope="module")
def windows(start_prometheus: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[Any, Any, Any]]:
    from bottleneck_operator_dev.simulation import generate_jobs, write_openmetrics

    jobs = generate_jobs(SIM_SEED + 43, 2, start=SIM_START, duration=SIM_DURATION, classes=["GPU", "IO"])
    st = jobs[0].state
    xid = np.zeros_like(st.gpu["gpu_util"])
    xid[0, 0, st.t >= st.t[0] + (st.t[-1] - st.t[0]) / 2] = CODE
    st.gpu["xid"] = xid
    path = tmp_path_factory.mktemp("xid") / "sim.om"
    with path.open("w") as out:
        write_openmetrics(jobs, out)
    prom = start_prometheus(path)
    settings = Settings(prometheus_url=prom.url, step=STEP)
    reqs, sims = [], []
    for job in jobs:
        start, end = np.ceil(job.start / STEP) * STEP, np.floor(job.end / STEP) * STEP
        reqs.append(WindowRequest(job.namespace, job.name, float(start), float(end)))
        sims.append(job.to_window(STEP, float(start), float(end)))
    got = fetch_windows(PrometheusClient(settings), reqs, settings.labels, step=settings.analysis.step)
    return [(job, sim, got[(job.namespace, job.name)]) for job, sim in zip(jobs, sims, strict=True)]


def test_declared_once_as_a_dcgm_gauge() -> None:
    spec = SIGNALS["xid_code"]
    assert (spec.metrics, spec.kind.value, spec.family, spec.how) == (
        ("DCGM_FI_DEV_XID_ERRORS",),
        "gauge",
        Family.DCGM_DEV,
        "max",
    )
    # derived from the declaration, not hand-written: a gauge's latest sample, highest over the GPUs
    query = ENTRIES["xid_code"].build(_context())
    assert query.startswith("max by (namespace, pod) (last_over_time(DCGM_FI_DEV_XID_ERRORS{"), query
    assert "rate(" not in query


def test_present_in_the_window_as_simulated(windows: list[tuple[Any, Any, Any]]) -> None:
    (job, sim, got), (_, other_sim, other) = windows
    first = got.pods[0].signals["xid_code"]
    np.testing.assert_array_equal(first, sim.pods[0].signals["xid_code"])
    finite = first[np.isfinite(first)]
    assert finite[0] == 0.0 and finite[-1] == CODE, job.name  # no error at first, then 79
    for s, g in zip(sim.pods[1:], got.pods[1:], strict=True):
        np.testing.assert_array_equal(g.signals["xid_code"], s.signals["xid_code"])
        assert np.nanmax(g.signals["xid_code"]) == 0.0
    # no XID series for the other Job: no signal, on either side
    assert all("xid_code" not in p.signals for p in (*other.pods, *other_sim.pods))


def test_a_context_signal_leaves_the_feature_schema_alone() -> None:
    import json

    assert "xid_code" in CONTEXT_SIGNALS and "xid_code" not in SIGNAL_NAMES  # not among the analysis' inputs
    assert not any(name.split(".")[0] == "xid_code" for name in FEATURE_NAMES)
    shipped = json.loads((MODEL_DIR / METADATA_FILE).read_text())
    assert shipped["feature_schema"] == feature_schema_hash()


def _context() -> Any:
    from tests.telemetry.catalog_snapshot import contexts

    return contexts()["pod-labels"]
