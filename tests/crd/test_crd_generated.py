"""The CRD file is generated from the report models: it fails here when one changes without the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from bottleneck_operator.reports.crd import openapi, render
from bottleneck_operator.reports.model import ReportStatus

CRD_PATH = Path(__file__).parents[2] / "crds" / "bottleneckreports.bottleneck.dev.yaml"


def test_crd_file_is_what_the_models_generate() -> None:
    assert CRD_PATH.read_text() == render(), "the CRD drifted from reports/model.py: run `make crd`"


def _walk(schema: Any) -> list[dict[str, Any]]:
    if isinstance(schema, dict):
        return [schema, *(n for v in schema.values() for n in _walk(v))]
    if isinstance(schema, list):
        return [n for v in schema for n in _walk(v)]
    return []


def test_generated_schema_is_structural_without_refs_or_null_unions() -> None:
    nodes = _walk(yaml.safe_load(render()))
    assert not [n for n in nodes if "$ref" in n or "anyOf" in n or "allOf" in n or "$defs" in n]
    assert not [n for n in nodes if n.get("type") == "null" or "title" in n or "default" in n]


def test_optional_fields_are_nullable_and_camel_case() -> None:
    status = openapi(ReportStatus)["properties"]
    assert status["gpuActive"] == {
        "type": "number",
        "description": "Mean GPU activity 0..1 over the window.",
        "nullable": True,
    }
    assert status["abstention"]["enum"] == [
        "NoPods",
        "ShortWindow",
        "LowCoverage",
        "LowConfidence",
        "OutOfDistribution",
    ]
    assert status["lastAnalysisTime"]["format"] == "date-time"
    assert "gpu_active" not in status
