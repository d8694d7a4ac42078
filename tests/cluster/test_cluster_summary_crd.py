"""The ClusterBottleneckSummary CRD: generated from its models, valid, and what the operator writes fits it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from bottleneck_operator.analysis.cluster import summarise
from bottleneck_operator.reports.summary import status_from_summary
from bottleneck_operator.reports.summary_crd import FILE_NAME, render
from bottleneck_operator_dev.simulation.cluster import draw_cluster

ROOT = Path(__file__).parents[2]


def _crd() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((ROOT / "crds" / FILE_NAME).read_text())
    return doc


def test_the_crd_file_is_what_the_models_generate() -> None:
    assert (ROOT / "crds" / FILE_NAME).read_text() == render(), (
        "the CRD drifted from reports/summary.py: run `make crd`"
    )


def test_the_crd_is_valid_cluster_scoped_and_shows_the_summary_in_kubectl_get() -> None:
    crd = _crd()
    kubernetes_validate.validate(crd, "1.29.0", strict=True)
    assert crd["spec"]["scope"] == "Cluster" and crd["spec"]["names"]["shortNames"] == ["cbs"]
    (version,) = crd["spec"]["versions"]
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns["GPU-Hours-Lost"] == ".status.gpuHoursLost" and columns["Hot-Spots"] == ".status.hotSpotCount"
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    for column in columns.values():
        assert column.removeprefix(".status.") in status, column


def test_a_written_status_fits_the_schema() -> None:
    cluster = draw_cluster(5100, jobs=600, nodes=100, pattern="degraded-nic")
    status = status_from_summary(summarise(cluster.jobs), now=1.8e9).dump()
    assert status["hotSpots"] or status["suspects"]
    assert status["stragglers"] and status["topRecommendations"] and status["lostByNamespace"]
    schema = _crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    jsonschema.validate(status, schema)
    broken = {**status, "hotSpots": [{**status["stragglers"][0]}]}
    try:
        jsonschema.validate(broken, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise AssertionError("a straggler passed for a hot spot")
