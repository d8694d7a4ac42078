"""The ClusterBottleneckSummary CRD, generated from :mod:`.summary` as the report's is (``make crd``)."""

from __future__ import annotations

from typing import Any

import yaml

from bottleneck_operator.contract.names import API_GROUP
from bottleneck_operator.reports.crd import definition, openapi
from bottleneck_operator.reports.summary import (
    SUMMARY_KIND,
    SUMMARY_PLURAL,
    SUMMARY_SHORT_NAME,
    SummarySpec,
    SummaryStatus,
)

HEADER = """\
# ClusterBottleneckSummary: what limits the cluster, where, and what fixing it is worth. Cluster-scoped,
# one object ("cluster") refreshed by bottleneck-operator every pass. Generated from
# operator/bottleneck_operator/reports/summary.py by `make crd` (a test fails when they drift); the
# Helm chart carries a checked copy of this file.
"""

FILE_NAME = f"{SUMMARY_PLURAL}.{API_GROUP}.yaml"

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Jobs", "type": "integer", "jsonPath": ".status.jobs"},
    {
        "name": "GPU-Hours-Lost",
        "type": "number",
        "format": "float",
        "description": "Idle GPU-hours charged to the Jobs' bottlenecks.",
        "jsonPath": ".status.gpuHoursLost",
    },
    {
        "name": "Top",
        "type": "string",
        "description": "The class that lost the most GPU-hours.",
        "jsonPath": ".status.topBottleneck",
    },
    {"name": "Hot-Spots", "type": "integer", "jsonPath": ".status.hotSpotCount"},
    {"name": "Stragglers", "type": "integer", "jsonPath": ".status.stragglersTotal"},
    {"name": "Updated", "type": "date", "jsonPath": ".status.lastUpdateTime"},
]


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition."""
    status = openapi(SummaryStatus)
    status.pop("required", None)  # the status subresource fills it after the object is created
    root = {
        "type": "object",
        "description": "What limits the cluster's profiled Jobs: by class, namespace, node, storage and fabric.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": openapi(SummarySpec),
            "status": status,
        },
    }
    return definition(SUMMARY_KIND, SUMMARY_PLURAL, SUMMARY_SHORT_NAME, "Cluster", root, PRINTER_COLUMNS)


def render() -> str:
    """The CRD file's text."""
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=120, allow_unicode=True)
