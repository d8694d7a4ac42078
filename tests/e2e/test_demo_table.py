"""The demo's closing summary: kubectl-like table and per-report lines, honest about misses."""

from __future__ import annotations

from typing import Any

from bottleneck_operator_dev.demo.table import format_details, format_table


def _report(ns: str, name: str, bottleneck: str, **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"namespace": ns, "name": name, "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"jobRef": {"name": name}},
        "status": {"bottleneck": bottleneck, "confidence": 0.9, "gpuActive": 0.3, "phase": "Running", **status},
    }


def test_details_compare_verdicts_with_the_simulated_truth() -> None:
    reports = [
        _report(
            "ml",
            "a",
            "IO",
            evidence=[
                {
                    "signal": "sm_active",
                    "observed": 0.3,
                    "unit": "ratio",
                    "message": "GPUs were active 30 % of the time.",
                },
                {
                    "signal": "node_psi_io_some",
                    "observed": 0.62,
                    "unit": "ratio",
                    "message": "Tasks waited on I/O 62 % of the time.",
                },
            ],
            recommendations=[
                {"action": "Cache the dataset on local NVMe.", "signal": "node_psi_io_some", "detail": "x"}
            ],
            headroom={"low": 2.0, "high": 3.0, "basis": "GPU idle share"},
        ),
        _report("ml", "b", "CPU"),
        _report("ml", "c", "Unknown", reason="only 20 % of the window has GPU samples"),
    ]
    text = format_details(reports, truth={"ml/a": "IO", "ml/b": "Memory", "ml/c": "GPU"})
    lines = text.splitlines()
    assert "simulated IO: match" in lines[0]
    assert "Tasks waited on I/O 62 % of the time" in lines[0]  # the specific item, not the GPU summary
    assert "headroom x2.0-3.0" in lines[0]
    assert "simulated Memory: MISS" in lines[1]
    assert "only 20 % of the window" in lines[2]
    assert lines[-1] == "1 of 3 verdicts match the bottleneck the simulator built in."


def test_table_has_kubectl_columns_in_order() -> None:
    table = format_table([_report("ml", "a", "GPU")], now=1767225600.0 + 90)
    header, row = table.splitlines()
    assert header.split() == ["NAMESPACE", "NAME", "JOB", "BOTTLENECK", "CONFIDENCE", "GPU", "PHASE", "AGE"]
    assert row.split() == ["ml", "a", "a", "GPU", "0.9", "0.3", "Running", "90s"]


def test_wide_table_adds_the_mechanism_after_the_class() -> None:
    reports = [_report("ml", "a", "IO", mechanism="network-storage"), _report("ml", "b", "Unknown")]
    header, first, second = format_table(reports, now=1767225600.0 + 90, wide=True).splitlines()
    assert header.split() == [
        "NAMESPACE", "NAME", "JOB", "BOTTLENECK", "MECHANISM", "CONFIDENCE", "GPU", "PHASE", "AGE",
    ]  # fmt: skip
    assert first.split() == ["ml", "a", "a", "IO", "network-storage", "0.9", "0.3", "Running", "90s"]
    assert second.split()[3:5] == ["Unknown", "<none>"]  # kubectl's placeholder for an absent field


def test_details_check_the_mechanism_against_the_simulated_one() -> None:
    reports = [
        _report("ml", "a", "IO", mechanism="network-storage"),
        _report("ml", "b", "CPU", mechanism="saturated"),
        _report("ml", "c", "Unknown"),
    ]
    truth = {"ml/a": "IO", "ml/b": "CPU", "ml/c": "GPU"}
    mechanisms = {"ml/a": "network-storage", "ml/b": "too-few-workers", "ml/c": "compute"}
    lines = format_details(reports, truth=truth, mechanisms=mechanisms).splitlines()
    assert "mechanism network-storage (match)" in lines[0]
    assert "mechanism saturated (simulated too-few-workers: MISS)" in lines[1]
    assert "mechanism" not in lines[2]
    assert lines[-2] == "2 of 3 verdicts match the bottleneck the simulator built in."
    assert lines[-1] == "1 of 2 named mechanisms match the one the simulator built in."
