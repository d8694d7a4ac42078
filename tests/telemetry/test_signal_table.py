"""The signal table (contract/signals.py) is the one place a signal is declared.

The queries derived from it are the very ones the catalog wrote by hand before (the golden file
``data/catalog_queries.json`` holds every entry's PromQL for fixed contexts, as written before the
table existed; ``python -m tests.telemetry.catalog_snapshot`` prints the current ones), every metric
a query or a simulated exporter uses comes from it, and one enum names both families and exporters.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.telemetry.catalog_snapshot import contexts, snapshot

from bottleneck_operator.contract.signals import (
    CONTEXT_SIGNALS,
    EXPORTERS,
    SIGNAL_NAMES,
    SIGNALS,
    Family,
    Kind,
    Layout,
    SignalSpec,
    signals_of,
)
from bottleneck_operator.telemetry.plan import catalog
from bottleneck_operator_dev.simulation import dcgm

GOLDEN = Path(__file__).parent / "data" / "catalog_queries.json"
# Signals added after the golden was written: context signals (outside the model's inputs) and the
# pod's own network bytes, whose plain read is checked below like any other.
ADDED = set(CONTEXT_SIGNALS) | set(signals_of(Family.SIDECAR_NET))


def test_every_query_is_the_one_written_by_hand_before() -> None:
    golden, now = json.loads(GOLDEN.read_text()), snapshot()
    assert set(golden) == set(now)
    for ctx, queries in golden.items():
        assert set(now[ctx]) - set(queries) == ADDED, ctx
        for name, query in queries.items():
            assert now[ctx][name] == query, (ctx, name)


def test_each_signal_is_read_by_its_derived_query_unless_declared_special() -> None:
    assert {s.name for s in SIGNALS.values() if s.special} == {*catalog.SPECIAL, *catalog.FROM_CPU_MODES}
    ctx = contexts()["exported-join"]
    for spec in SIGNALS.values():
        if spec.name in catalog.FROM_CPU_MODES:
            assert catalog.INTERNAL_CPU_MODES in catalog.ENTRIES and spec.metrics == ("node_cpu_seconds_total",)
            continue
        entry = catalog.ENTRIES[spec.name]
        assert entry.exporter is spec.family.exporter, spec.name
        if not spec.special:
            assert entry.build(ctx) == catalog.derived(spec)(ctx), spec.name
        query = entry.build(ctx)
        for metric in spec.metrics:  # every metric the declaration names is the one the query reads
            assert f"{metric}{{" in query, (spec.name, metric)
        assert ("rate(" in query) == (spec.kind is Kind.COUNTER), spec.name
    for signal, internal in catalog.KUBELET_PSI.items():
        (kubelet,) = SIGNALS[signal].alternates
        assert f"{kubelet}{{" in catalog.ENTRIES[internal].build(ctx)


def test_one_enum_names_families_and_their_exporters() -> None:
    assert Family.DCGM is Family.DCGM_DEV and Family.DCGM not in set(Family) - {Family.DCGM_DEV}
    assert len(list(Family)) == 14  # the alias adds no family (reports list the missing ones)
    assert list(EXPORTERS) == ["dcgm", "cadvisor", "ksm", "node", "sidecar"]
    for family in Family:
        exporter = family.exporter
        assert EXPORTERS[exporter.exporter_name] is exporter and exporter.exporter is exporter
        assert family.exporter_name == exporter.exporter_name and family.layout is exporter.layout
    assert Family.DCGM_PROF_SM.exporter is Family.DCGM and Family.NODE_PSI.exporter is Family.NODE
    assert Family.DCGM.layout is Layout.GPU and Family.CADVISOR_CFS.layout is Layout.CONTAINER
    assert Family.SIDECAR_NET.exporter is Family.SIDECAR and Family.SIDECAR_NET.layout is Layout.POD
    assert sum(len(signals_of(f, context=True)) for f in Family) == len(SIGNALS)
    assert sum(len(signals_of(f)) for f in Family) == len(SIGNAL_NAMES)


def test_the_pods_own_network_bytes_are_a_plain_rate_of_the_collectors_counters() -> None:
    ctx = contexts()["exported-join"]
    for signal, metric in (
        ("sc_net_rx_bps", "bottleneck_sidecar_network_receive_bytes_total"),
        ("sc_net_tx_bps", "bottleneck_sidecar_network_transmit_bytes_total"),
    ):
        query = catalog.ENTRIES[signal].build(ctx)
        assert query.startswith("max by (namespace, pod) (rate(" + metric + "{"), query


def test_a_counter_per_gpu_has_no_plain_read() -> None:
    spec = SignalSpec("x", Family.DCGM_PROF, "B/s", "a counter dcgm-exporter does not publish", ("X",), Kind.COUNTER)
    with pytest.raises(ValueError, match="no plain counter read for the gpu layout"):
        catalog.derived(spec)


def test_the_simulated_dcgm_exporter_names_its_fields_from_the_table() -> None:
    declared = {m for s in SIGNALS.values() if s.family.exporter is Family.DCGM for m in s.metrics}
    tables = (dcgm.DCGM_DEV, dcgm.DCGM_SHIPPED, dcgm.DCGM_FULL, dcgm.DCGM_PIPES)
    published = {name for table in tables for name in table}
    published |= {*dcgm.DCGM_POWER_CLOCKS, *dcgm.DCGM_POWER_CLOCKS_LEGACY, dcgm.NVLINK_TOTAL, dcgm.XID}
    assert published == declared


def test_node_instances_merge_as_their_signals_combine() -> None:
    # several node-exporter instances of one node: counts and byte rates add up, shares and rates of one device do not
    summed = {name for name, how in catalog.MERGE.items() if how == "sum"}
    assert summed == {
        "node_cpus", catalog.INTERNAL_CPU_MODES, "node_disk_read_bps", "node_disk_reads_ps",
        "node_net_rx_bps", "node_net_tx_bps", "ib_rx_bps", "ib_tx_bps",
    }  # fmt: skip
    assert set(catalog.MERGE.values()) == {"sum", "max"}
