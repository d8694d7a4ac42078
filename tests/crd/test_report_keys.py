"""A report's and the cluster summary's camelCase keys are read in reports/ alone: everything else
reads the typed report (``read_report``) and the typed summary (``read_summary``).

The keys are the aliases of the report's and the summary's models (the CRDs' schemas are generated
from them), so a field added to either CRD joins the check by itself. The offline package (the demo,
the simulators) is scanned too. The scan reads the package's source with ``ast`` and
looks for dict reads of such a key: ``x["key"]``, ``x.get("key")`` (``pop``, ``setdefault``) and
``"key" in x``. Building an object (a dict literal, a patch) is not a read.
"""

from __future__ import annotations

import ast
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from bottleneck_operator.reports import ReportMetadata, ReportSpec, ReportStatus
from bottleneck_operator.reports.summary import SummarySpec, SummaryStatus

SOURCE = Path(__file__).resolve().parents[2] / "operator"
PACKAGE = SOURCE / "bottleneck_operator"
PACKAGES = (PACKAGE, SOURCE / "bottleneck_operator_dev")
# Names Kubernetes gives every object or condition, read on Jobs, Leases and the training
# operators' workloads as well (their conditions carry lastUpdateTime): a read of one of these says
# nothing about reports or the summary.
KUBERNETES_KEYS = frozenset(
    {"apiVersion", "creationTimestamp", "lastTransitionTime", "lastUpdateTime", "resourceVersion"}
)
READERS = frozenset({"get", "pop", "setdefault"})


def _models(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[type[BaseModel]]:
    """``model`` and every model nested in its fields, directly or in lists, dicts and optionals."""
    if model in seen:
        return seen
    seen.add(model)
    for field in model.model_fields.values():
        for nested in _nested(field.annotation):
            _models(nested, seen)
    return seen


def _nested(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (list, dict, typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _nested(arg)]
    return []


def report_keys() -> frozenset[str]:
    """The report's camelCase keys: every alias that differs from its Python name."""
    return _keys(ReportMetadata, ReportSpec, ReportStatus)


def summary_keys() -> frozenset[str]:
    """The cluster summary's camelCase keys (its metadata is read as a report's is)."""
    return _keys(SummarySpec, SummaryStatus)


def _keys(*roots: type[BaseModel]) -> frozenset[str]:
    models: set[type[BaseModel]] = set()
    for root in roots:
        _models(root, models)
    aliases = {f.alias for m in models for name, f in m.model_fields.items() if f.alias and f.alias != name}
    return frozenset(aliases - KUBERNETES_KEYS)


def _text(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def camel_reads(source: str, keys: frozenset[str]) -> list[tuple[int, str]]:
    """(line, key) of every dict read of one of ``keys`` in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = _text(node.slice)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in READERS:
            key = _text(node.args[0]) if node.args else None
        elif isinstance(node, ast.Compare) and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
            key = _text(node.left)
        if key in keys:
            found.append((node.lineno, key))
    return found


def test_the_keys_are_the_models_aliases() -> None:
    keys = report_keys()
    assert {"jobRef", "dataQuality", "gpuActive", "missingFamilies", "modelVersion", "lastAnalysisTime"} <= keys
    assert not any("_" in k for k in keys) and not keys & KUBERNETES_KEYS


def test_the_summary_keys_are_its_models_aliases() -> None:
    keys = summary_keys()
    assert {"gpuHours", "gpuHoursLost", "topBottleneck", "byClass", "lostByNamespace", "hotSpots", "pValue"} <= keys
    assert {"lookbackSeconds", "stragglersTotal", "hotSpotCount", "oddsRatio", "topRecommendations"} <= keys
    assert not any("_" in k for k in keys) and not keys & KUBERNETES_KEYS


def test_the_scan_finds_each_kind_of_read() -> None:
    keys = report_keys()
    source = (
        'a = report["spec"]["jobRef"]\n'
        'b = status.get("gpuActive", 0)\n'
        'c = "dataQuality" in status\n'
        'd = {"jobRef": {"name": "x"}}\n'  # building a patch: not a read
        'e = status.get("bottleneck")\n'  # not camelCase: the same in both spellings
    )
    assert camel_reads(source, keys) == [(1, "jobRef"), (2, "gpuActive"), (3, "dataQuality")]


def test_the_scan_finds_the_summary_read_as_a_dict() -> None:
    # How the summary's page and table read it before it was typed: the scan must catch each form.
    source = (
        'a = status.get("gpuHoursLost")\n'
        'b = status["topBottleneck"]\n'
        'c = [h.get("pValue", 1.0) for h in status.get("hotSpots") or []]\n'
        'd = "byClass" in status\n'
        'e = cond.get("lastUpdateTime")\n'  # a workload's condition: Kubernetes' name, not the summary's
    )
    assert sorted(camel_reads(source, summary_keys())) == [
        (1, "gpuHoursLost"), (2, "topBottleneck"), (3, "hotSpots"), (3, "pValue"), (4, "byClass")
    ]  # fmt: skip


def _reads_outside_reports(keys: frozenset[str]) -> list[str]:
    return [
        f"{path.relative_to(SOURCE).as_posix()}:{line}: {key}"
        for package in PACKAGES
        for path in sorted(package.rglob("*.py"))
        if path.relative_to(PACKAGE.parent).parts[:2] != ("bottleneck_operator", "reports")
        for line, key in camel_reads(path.read_text(), keys)
    ]


def test_no_camel_case_key_of_a_report_is_read_outside_reports() -> None:
    reads = _reads_outside_reports(report_keys())
    assert not reads, "read the typed report (reports.read_report) instead:\n" + "\n".join(reads)


def test_no_camel_case_key_of_the_summary_is_read_outside_reports() -> None:
    reads = _reads_outside_reports(summary_keys())
    assert not reads, "read the typed summary (reports.read_summary) instead:\n" + "\n".join(reads)
