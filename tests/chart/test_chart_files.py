"""Copies that must not drift, the generated configuration table, and NOTES.txt."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate
import yaml

from ._helpers import CHART, ROOT, render_notes

CRD = "bottleneckreports.bottleneck.dev.yaml"
SUMMARY_CRD = "clusterbottlenecksummaries.bottleneck.dev.yaml"


def _gen_chart_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_chart_docs", ROOT / "scripts" / "gen-chart-docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def test_chart_crds_are_a_copy_of_the_top_level_crds() -> None:
    source = ROOT / "crds"
    copy = CHART / "crds"
    assert (source / CRD).is_file(), f"crds/{CRD} is missing"
    assert copy.is_dir(), "charts/bottleneck-operator/crds/ is missing: run `make chart-sync`"
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in source.iterdir()), "run `make chart-sync`"
    for path in source.iterdir():
        assert (copy / path.name).read_bytes() == path.read_bytes(), f"{path.name} drifted: run `make chart-sync`"


def test_helm_installs_the_crd(chart: Any) -> None:
    crds = {c["filename"].rsplit("/", 1)[-1]: c for c in chart.crds}
    assert sorted(crds) == sorted([CRD, SUMMARY_CRD])
    docs = {name: yaml.safe_load(c["data"]) for name, c in crds.items()}
    for doc in docs.values():
        kubernetes_validate.validate(doc, "1.29.0", strict=True)
    assert docs[CRD]["spec"]["names"]["shortNames"] == ["bnr"]
    assert docs[SUMMARY_CRD]["spec"]["scope"] == "Cluster"


def test_chart_dashboard_is_a_copy_of_the_dashboard() -> None:
    source = ROOT / "dashboards" / "bottleneck-overview.json"
    assert (CHART / "files" / source.name).read_bytes() == source.read_bytes(), (
        "copy dashboards/bottleneck-overview.json to charts/bottleneck-operator/files/"
    )


def test_every_value_is_documented() -> None:
    gen = _gen_chart_docs()
    docs = gen.parse_values((CHART / "values.yaml").read_text())
    assert len(docs) > 50
    assert gen.undocumented(docs) == []


def test_undocumented_values_are_caught() -> None:
    gen = _gen_chart_docs()
    text = (
        "# -- Documented.\nimage:\n  # -- Documented.\n  repository: x\n  tag: y\n"
        "# -- Free-form labels.\nlabels:\n  team: ml\n"
    )
    assert gen.undocumented(gen.parse_values(text)) == ["image.tag"]


def test_configuration_table_is_current() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen-chart-docs.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_configuration_table_lists_the_values() -> None:
    gen = _gen_chart_docs()
    table = gen.table((CHART / "values.yaml").read_text())
    assert "| `webhook.timeoutSeconds` | int | `5` |" in table
    assert "| `watchNamespaces` | list | `[]` |" in table
    assert "| `image.tag` | string | the chart's appVersion |" in table
    assert "`webhook.certManager`" not in table.replace("`webhook.certManager.", "")  # parents are not rows


def test_notes_tell_how_to_profile_and_read_reports(chart: Any) -> None:
    notes = render_notes(chart)
    assert 'bottleneck.dev/profile: "true"' in notes
    assert "kubectl get bnr -A" in notes
    assert "kubectl -n <namespace> describe bnr" in notes
    assert "whole cluster" in notes
    namespaced = render_notes(chart, {"watchNamespaces": ["ml-team-a"]})
    assert "ml-team-a" in namespaced


def _yaml_blocks(markdown: str) -> list[Any]:
    return [yaml.safe_load(b) for b in re.findall(r"```yaml\n(.*?)```", markdown, re.S)]


def test_install_doc_wires_dcgm_exporter_to_the_counters_config_map() -> None:
    doc = (ROOT / "docs" / "install.md").read_text()
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    dcgm = next(b for b in _yaml_blocks(doc) if isinstance(b, dict) and "extraConfigMapVolumes" in b)
    (volume,) = dcgm["extraConfigMapVolumes"]
    (mount,) = dcgm["extraVolumeMounts"]
    assert volume["configMap"]["name"] == values["dcgmCounters"]["name"]
    assert mount["name"] == volume["name"]
    assert dcgm["arguments"] == ["-f", mount["mountPath"]]
    assert mount["subPath"] == "custom-counters.csv"
    # the operator reads honorLabels: false (exported_* labels): the guide never asks to flip it
    assert dcgm["serviceMonitor"].get("honorLabels", False) is False
    gpu_operator = next(b for b in _yaml_blocks(doc) if isinstance(b, dict) and "dcgmExporter" in b)
    assert gpu_operator["dcgmExporter"]["config"]["name"] == values["dcgmCounters"]["name"]
    env = {e["name"]: e["value"] for e in gpu_operator["dcgmExporter"]["env"]}
    assert env["DCGM_EXPORTER_COLLECTORS"].endswith("/dcgm-metrics.csv")
    assert env["DCGM_EXPORTER_KUBERNETES"] == "true"  # pod mapping
    stack = next(b for b in _yaml_blocks(doc) if isinstance(b, dict) and "prometheusSpec" in b.get("prometheus", {}))
    spec = stack["prometheus"]["prometheusSpec"]
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["serviceMonitorSelectorNilUsesHelmValues"] is False


def test_packaged_chart_is_the_chart(chart: Any, tmp_path: Path) -> None:
    # what `make chart-package` builds and `make chart-push` publishes: Helm's own packager
    import helm_python as helm

    from ._helpers import render_docs

    archive = Path(helm.package(CHART, destination=tmp_path))
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert archive.name == f"bottleneck-operator-{meta['version']}.tgz"
    with helm.Chart.load_archive(archive.read_bytes()) as packaged:
        assert packaged.version == meta["version"]
        assert {f["name"] for f in packaged.files} >= {"files/dcgm-counters.csv", "files/bottleneck-overview.json"}
        assert packaged.schema == chart.schema
        assert [c["filename"] for c in packaged.crds] == [c["filename"] for c in chart.crds]
        assert sorted(d["kind"] for d in render_docs(packaged)) == sorted(d["kind"] for d in render_docs(chart))
    with tarfile.open(archive) as tar:
        # nothing of the repository beyond the chart: no tests, no caches
        assert all(name.startswith("bottleneck-operator/") for name in tar.getnames())
        assert not any("__pycache__" in name or name.endswith(".pyc") for name in tar.getnames())
