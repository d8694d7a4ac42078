"""Every catalog entry's PromQL for a few fixed contexts: the golden the signal table must reproduce.

Run as a module (``python -m tests.telemetry.catalog_snapshot``) to print the snapshot as JSON.
"""

from __future__ import annotations

import dataclasses
import json

from bottleneck_operator.contract.signals import EXPORTERS
from bottleneck_operator.settings_groups import LabelSettings
from bottleneck_operator.telemetry.plan import catalog
from bottleneck_operator.telemetry.plan.selectors import QueryContext

_POD_LABELS = LabelSettings(
    node_exporter_node_label="node",
    dcgm_hostname_label="Hostname",
    dcgm_pod_label="pod",
    dcgm_namespace_label="namespace",
    dcgm_container_label="container",
)
_EXPORTED = LabelSettings(
    node_exporter_node_label="",
    dcgm_hostname_label="hostname",
    dcgm_pod_label="exported_pod",
    dcgm_namespace_label="exported_namespace",
    dcgm_container_label="exported_container",
    selector_matchers=('cluster="a"',),
    node_exporter_join="pod",
)


def contexts() -> dict[str, QueryContext]:
    """Two label layouts: pod labels with a node label, and exported_* labels with the pod join."""
    common = {"namespaces": "ml|team\\.b", "pods": "a-0|a-1|b-.+", "nodes": "n1|n2"}
    return {
        "pod-labels": QueryContext(labels=_POD_LABELS, **common),
        "exported-join": QueryContext(labels=_EXPORTED, instances="10.0.0.1:9100", **common),
    }


def with_ranges(ctx: QueryContext, rate: dict[str, float], gauge: dict[str, float]) -> QueryContext:
    """``ctx`` with per-exporter ranges, given by the exporters' short names."""
    return dataclasses.replace(
        ctx,
        rate_ranges={EXPORTERS[name]: s for name, s in rate.items()},
        gauge_windows={EXPORTERS[name]: s for name, s in gauge.items()},
    )


def snapshot() -> dict[str, dict[str, str]]:
    """Context name -> entry name -> the entry's request for that context alone."""
    out: dict[str, dict[str, str]] = {}
    rate = {"dcgm": 60.0, "cadvisor": 45.0, "ksm": 120.0, "node": 31.5, "sidecar": 20.0}
    gauge = {"dcgm": 33.0, "cadvisor": 16.5, "ksm": 66.0, "node": 17.0, "sidecar": 5.5}
    for name, ctx in contexts().items():
        for variant, c in (("default", ctx), ("ranges", with_ranges(ctx, rate, gauge))):
            out[f"{name}/{variant}"] = {e.name: catalog.entry_query(e, [c]) for e in catalog.CATALOG}
    return out


if __name__ == "__main__":
    print(json.dumps(snapshot(), indent=1, sort_keys=True))
