"""The BottleneckReport CRD, generated from the pydantic models (``scripts/gen-crd.py`` writes it).

Kubernetes wants a structural schema: no ``$ref`` (definitions are inlined), no ``anyOf`` with
null (an optional field is its type with ``nullable: true``), no pydantic titles or defaults.
"""

from __future__ import annotations

from typing import Any

import yaml
from pydantic import BaseModel

from bottleneck_operator.contract.names import API_GROUP, API_VERSION, REPORT_KIND, REPORT_PLURAL
from bottleneck_operator.reports.model import ReportSpec, ReportStatus

HEADER = """\
# BottleneckReport: what limits a profiled training Job. One per Job, in the Job's namespace,
# written by bottleneck-operator. Generated from operator/bottleneck_operator/reports/model.py by
# `make crd` (a test fails when they drift); the Helm chart carries a checked copy of this file.
"""

PRINTER_COLUMNS: list[dict[str, Any]] = [
    {"name": "Job", "type": "string", "jsonPath": ".spec.jobRef.name"},
    {"name": "Bottleneck", "type": "string", "jsonPath": ".status.bottleneck"},
    {
        "name": "Mechanism",
        "type": "string",
        "priority": 1,  # `kubectl get -o wide` only: the class fits the default view, its cause is detail
        "description": "How the bottleneck limits the Job (compute, launch-bound, network-storage, ...).",
        "jsonPath": ".status.mechanism",
    },
    {
        "name": "Secondary",
        "type": "string",
        "priority": 1,
        "description": "A close runner-up class, when there is one.",
        "jsonPath": ".status.secondary",
    },
    {"name": "Confidence", "type": "number", "format": "float", "jsonPath": ".status.confidence"},
    {
        "name": "GPU",
        "type": "number",
        "format": "float",
        "description": "Mean GPU activity (0..1) over the analysed window.",
        "jsonPath": ".status.gpuActive",
    },
    {
        "name": "Headroom",
        "type": "number",
        "format": "float",
        "priority": 1,
        "description": "Up to how many times faster the Job could run without the bottleneck (the range's high end).",
        "jsonPath": ".status.headroom.high",
    },
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {
        "name": "Reason",
        "type": "string",
        "priority": 1,
        "description": "Why the verdict is Unknown, when it is.",
        "jsonPath": ".status.reason",
    },
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def openapi(model: type[BaseModel]) -> dict[str, Any]:
    """The model's schema as a structural OpenAPI v3 schema, camelCase names."""
    schema = model.model_json_schema(by_alias=True)
    return _convert(schema, schema.get("$defs", {}))


def _convert(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    nullable = False
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        nullable = len(options) < len(schema["anyOf"])
        (inner,) = options
        out = _convert(inner, defs)
    elif "$ref" in schema:
        out = _convert(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    else:
        out = _plain(schema, defs)
    if "description" in schema:
        out = _with_description(out, schema["description"])
    if nullable:
        out["nullable"] = True
    return out


def _plain(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": schema.get("type", "object")}
    for key in ("format", "enum"):
        if key in schema:
            out[key] = schema[key]
    if "const" in schema:
        out["enum"] = [schema["const"]]
    if "description" in schema:
        out["description"] = schema["description"]
    if schema.get("required"):
        out["required"] = list(schema["required"])
    if "properties" in schema:
        out["properties"] = {k: _convert(v, defs) for k, v in schema["properties"].items()}
    if "items" in schema:
        out["items"] = _convert(schema["items"], defs)
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(schema["additionalProperties"], defs)
    return out


def _with_description(schema: dict[str, Any], description: str) -> dict[str, Any]:
    # The field's description goes before the nested parts, as a reader expects it.
    head = {k: v for k, v in schema.items() if k in ("type", "format", "enum")}
    tail = {k: v for k, v in schema.items() if k not in head and k != "description"}
    return {**head, "description": description, **tail}


def _status_schema() -> dict[str, Any]:
    status = openapi(ReportStatus)
    # Every status field is optional: a report starts empty and the status subresource fills it.
    status.pop("required", None)
    return status


def crd() -> dict[str, Any]:
    """The CustomResourceDefinition."""
    root = {
        "type": "object",
        "description": "What limits a profiled training Job (IO, CPU, Interconnect, GPU, Memory or Unknown).",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": openapi(ReportSpec),
            "status": _status_schema(),
        },
    }
    # No categories: "all" would put reports in the path of `kubectl delete all`, and a report is meant
    # to outlive its Job.
    return definition(REPORT_KIND, REPORT_PLURAL, "bnr", "Namespaced", root, PRINTER_COLUMNS)


def definition(
    kind: str, plural: str, short_name: str, scope: str, root: dict[str, Any], columns: list[dict[str, Any]]
) -> dict[str, Any]:
    """A CustomResourceDefinition of this API group: one served and stored version with a status
    subresource, ``root`` its schema and ``columns`` what ``kubectl get`` shows."""
    version = {
        "name": API_VERSION,
        "served": True,
        "storage": True,
        "subresources": {"status": {}},
        "additionalPrinterColumns": columns,
        "schema": {"openAPIV3Schema": root},
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": f"{plural}.{API_GROUP}",
            "labels": {"app.kubernetes.io/name": "bottleneck-operator"},
        },
        "spec": {
            "group": API_GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short_name],
            },
            "versions": [version],
        },
    }


def render() -> str:
    """The CRD file's text."""
    return HEADER + yaml.safe_dump(crd(), sort_keys=False, width=120, allow_unicode=True)
