"""The CRD: structural, in sync with reports.py, and every status the operator writes validates."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import numpy as np
import pytest
import yaml

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.verdict import (
    Bottleneck,
    CapacityNeed,
    Evidence,
    Headroom,
    Mechanism,
    PodVerdict,
    Recommendation,
    Verdict,
)
from bottleneck_operator.contract.window import DataQuality, JobWindow, PodWindow
from bottleneck_operator.controller.status import analysed_status, pending_status, unavailable_status
from bottleneck_operator.reports import ClassName, Phase, ReportStatus, status_from_verdict

CRD_PATH = Path(__file__).parents[2] / "crds" / "bottleneckreports.bottleneck.dev.yaml"


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


@pytest.fixture(scope="module")
def version(crd: dict[str, Any]) -> dict[str, Any]:
    (v,) = crd["spec"]["versions"]
    version: dict[str, Any] = v
    return version


def _verdict(cls: Bottleneck) -> tuple[Verdict, JobWindow]:
    ts = np.arange(0.0, 600.0, 30.0) + 1_767_225_600.0
    pod = PodWindow(
        pod="train-0",
        node="gpu-node-1",
        gpu_model="NVIDIA A100-SXM4-80GB",
        gpu_count=8,
        signals={"gpu_util": np.full(ts.shape, 0.4)},
    )
    window = JobWindow(
        namespace="ml",
        job="train",
        start=float(ts[0]),
        end=float(ts[-1]),
        step=30.0,
        timestamps=ts,
        pods=(pod,),
        quality=DataQuality(families=frozenset(Family), coverage=0.97, scrape_interval=15.0, notes=("ok",)),
    )
    verdict = Verdict(
        bottleneck=cls,
        confidence=0.81,
        probabilities={c.value: 0.2 for c in Bottleneck if c is not Bottleneck.UNKNOWN},
        secondary=Bottleneck.CPU,
        reason="the model abstained" if cls is Bottleneck.UNKNOWN else None,
        gpu_active=0.41,
        evidence=(Evidence("gpu_util", 0.41, 0.9, "ratio", "GPUs idle 59% of the time"),),
        recommendations=(Recommendation("add DataLoader workers", "cpu_util", "decode is CPU-bound"),),
        headroom=Headroom(1.6, 2.2, "GPU idle share"),
        capacity=(CapacityNeed("storage read", 2.0e9, 0.9e9, "B/s", "needs 2 GB/s"),),
        pods=(PodVerdict("train-0", "gpu-node-1", cls, 0.8, 0.41),),
        model_version="test-1",
    )
    return verdict, window


def test_names_scope_and_subresource(crd: dict[str, Any], version: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == "bottleneckreports.bottleneck.dev"
    assert spec["group"] == "bottleneck.dev" and spec["scope"] == "Namespaced"
    assert spec["names"]["kind"] == "BottleneckReport"
    assert spec["names"]["plural"] == "bottleneckreports"
    assert spec["names"]["shortNames"] == ["bnr"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Job": ".spec.jobRef.name",
        "Bottleneck": ".status.bottleneck",
        "Mechanism": ".status.mechanism",
        "Secondary": ".status.secondary",
        "Confidence": ".status.confidence",
        "GPU": ".status.gpuActive",
        "Headroom": ".status.headroom.high",
        "Phase": ".status.phase",
        "Reason": ".status.reason",
        "Age": ".metadata.creationTimestamp",
    }


def test_reports_are_in_no_category(crd: dict[str, Any]) -> None:
    # In the "all" category, `kubectl delete all --all` would delete the reports meant to outlive Jobs.
    assert "all" not in (crd["spec"]["names"].get("categories") or [])
    chart_copy = yaml.safe_load((CRD_PATH.parents[1] / "charts/bottleneck-operator/crds" / CRD_PATH.name).read_text())
    assert "categories" not in chart_copy["spec"]["names"]


def _structural_problems(schema: dict[str, Any], path: str = "") -> list[str]:
    """A structural schema: a type everywhere, no $ref / anyOf without types, objects with properties or additionalProperties."""
    problems = []
    if "type" not in schema:
        problems.append(f"{path or '/'}: no type")
    for bad in ("$ref", "anyOf", "oneOf", "allOf"):
        if bad in schema:
            problems.append(f"{path}: {bad}")
    for name, sub in (schema.get("properties") or {}).items():
        problems += _structural_problems(sub, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        problems += _structural_problems(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        problems += _structural_problems(schema["additionalProperties"], f"{path}{{}}")
    return problems


def test_schema_is_structural(version: dict[str, Any]) -> None:
    assert _structural_problems(version["schema"]["openAPIV3Schema"]) == []


def _pydantic_shape(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """Reduce a pydantic JSON schema to {type, enum, properties, items, required} like the CRD's."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "anyOf" in schema:  # X | None: the optional wrapper
        (schema,) = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _pydantic_shape(schema, defs)
    out: dict[str, Any] = {
        "type": {"integer": "integer", "number": "number"}.get(schema.get("type", ""), schema.get("type"))
    }
    if "enum" in schema:
        out["enum"] = sorted(schema["enum"])
    if "const" in schema:
        out["enum"] = [schema["const"]]
    if schema.get("type") == "object" and "properties" in schema:
        out["properties"] = {k: _pydantic_shape(v, defs) for k, v in schema["properties"].items()}
        out["required"] = sorted(schema.get("required", []))
    if schema.get("type") == "array":
        out["items"] = _pydantic_shape(schema["items"], defs)
    return out


def _crd_shape(schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": schema["type"]}
    if "enum" in schema:
        out["enum"] = sorted(schema["enum"])
    if "properties" in schema:
        out["properties"] = {k: _crd_shape(v) for k, v in schema["properties"].items()}
        out["required"] = sorted(schema.get("required", []))
    if schema["type"] == "array":
        out["items"] = _crd_shape(schema["items"])
    return out


def test_status_schema_mirrors_reports_py(version: dict[str, Any]) -> None:
    pyd = ReportStatus.model_json_schema(by_alias=True)
    expected = _pydantic_shape(pyd, pyd.get("$defs", {}))
    actual = _crd_shape(version["schema"]["openAPIV3Schema"]["properties"]["status"])
    expected["required"] = []  # every status field is optional in the CRD (the report starts empty)
    # pydantic marks fields with defaults as not required; the CRD keeps the same lists
    assert actual == expected


def test_class_and_phase_enums_match_the_code(version: dict[str, Any]) -> None:
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
    classes = sorted(typing.get_args(ClassName))
    assert classes == sorted(b.value for b in Bottleneck)
    assert sorted(status["bottleneck"]["enum"]) == classes
    assert sorted(status["timeline"]["items"]["properties"]["bottleneck"]["enum"]) == classes
    assert sorted(status["phase"]["enum"]) == sorted(typing.get_args(Phase))


def _validator(version: dict[str, Any]) -> jsonschema.Draft4Validator:
    return jsonschema.Draft4Validator(version["schema"]["openAPIV3Schema"])


def _report(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "bottleneck.dev/v1alpha1",
        "kind": "BottleneckReport",
        "metadata": {"name": "train", "namespace": "ml"},
        "spec": {"jobRef": {"name": "train", "uid": "0b0c"}},
        "status": status,
    }


@pytest.mark.parametrize("cls", list(Bottleneck))
def test_statuses_validate(version: dict[str, Any], cls: Bottleneck) -> None:
    validator = _validator(version)
    verdict, window = _verdict(cls)
    status = status_from_verdict(verdict, window, phase="Running")
    validator.validate(_report(status.dump()))
    now = window.end + 5
    running = analysed_status(pending_status(now), status, phase="Running", now=now, timeline_length=3)
    validator.validate(_report(running.dump()))
    down = unavailable_status(running, "connection refused", now=now + 60, phase="Completed")
    validator.validate(_report(down.dump()))
    final = analysed_status(down, status, phase="Failed", now=now + 120, timeline_length=3)
    validator.validate(_report(final.dump()))
    assert {c.type for c in final.conditions or []} == {"Ready", "MetricsAvailable"}


def test_schema_rejects_what_it_should(version: dict[str, Any]) -> None:
    validator = _validator(version)
    verdict, window = _verdict(Bottleneck.IO)
    status = status_from_verdict(verdict, window).dump()
    assert not validator.is_valid(_report({**status, "bottleneck": "Disk"}))
    assert not validator.is_valid(_report({**status, "phase": "Done"}))
    assert not validator.is_valid({**_report(status), "spec": {}})


WIDE = {"Mechanism", "Secondary", "Headroom", "Reason"}


def test_detail_columns_show_only_in_wide_output(version: dict[str, Any]) -> None:
    priority = {c["name"]: c.get("priority", 0) for c in version["additionalPrinterColumns"]}
    # kubectl shows priority > 0 columns only with -o wide; the default view stays as DESIGN.md lists it.
    assert {name for name, p in priority.items() if p == 1} == WIDE
    assert all(p == 0 for name, p in priority.items() if name not in WIDE)
    names = [c["name"] for c in version["additionalPrinterColumns"]]
    assert names.index("Mechanism") == names.index("Bottleneck") + 1
    assert names[-1] == "Age"


def _schema_at(root: dict[str, Any], json_path: str) -> dict[str, Any] | None:
    node: dict[str, Any] | None = root
    for part in json_path.lstrip(".").split("."):
        node = (node or {}).get("properties", {}).get(part)
    return node


def test_every_column_reads_a_field_of_the_schema(version: dict[str, Any]) -> None:
    root = version["schema"]["openAPIV3Schema"]
    root = {**root, "properties": {**root["properties"], "metadata": {"properties": {"creationTimestamp": {}}}}}
    for column in version["additionalPrinterColumns"]:
        field = _schema_at(root, column["jsonPath"])
        assert field is not None, column
        if column["type"] in ("string", "number"):
            assert field["type"] == column["type"], column


def test_wide_columns_are_filled_by_a_verdict(version: dict[str, Any]) -> None:
    verdict, window = _verdict(Bottleneck.UNKNOWN)
    status = status_from_verdict(verdict, window).dump()
    _validator(version).validate(_report(status))
    assert (status["secondary"], status["headroom"]["high"], status["reason"]) == ("CPU", 2.2, "the model abstained")


def test_status_carries_the_mechanism(version: dict[str, Any]) -> None:
    validator = _validator(version)
    verdict, window = _verdict(Bottleneck.GPU)
    verdict = dataclasses.replace(verdict, mechanism=Mechanism.LAUNCH_BOUND)
    status = status_from_verdict(verdict, window)
    assert status.dump()["mechanism"] == "launch-bound"
    now = window.end + 5
    running = analysed_status(pending_status(now), status, phase="Running", now=now, timeline_length=3)
    assert running.dump()["mechanism"] == "launch-bound"
    validator.validate(_report(running.dump()))
    schema = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["mechanism"]
    assert sorted(schema["enum"]) == sorted(m.value for m in Mechanism)
    assert not validator.is_valid(_report({**status.dump(), "mechanism": "slow-disk"}))
    # A verdict without a mechanism (Unknown) leaves the field out.
    bare, _ = _verdict(Bottleneck.UNKNOWN)
    assert "mechanism" not in status_from_verdict(bare, window).dump()
