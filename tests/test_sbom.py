"""`make sbom`: a CycloneDX SBOM whose components are exactly requirements.lock's pins, hashes and all.

The lock is read here on its own (pins and hashes by their plain form), so the generator's parser
is checked against an independent reading, and the document against CycloneDX 1.5's required shape.
"""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock"


def _lock() -> dict[str, tuple[str, set[str]]]:
    """name -> (version, SHA-256 hashes), read from the lock's pins and --hash lines."""
    pins: dict[str, tuple[str, set[str]]] = {}
    current = ""
    for line in LOCK.read_text().splitlines():
        if match := re.match(r"^([A-Za-z0-9][\w.-]*)==(\S+)", line):
            current = re.sub(r"[-_.]+", "-", match.group(1)).lower()
            pins[current] = (match.group(2), set())
        if current:
            pins[current][1].update(re.findall(r"sha256:([0-9a-f]{64})", line))
    return pins


@pytest.fixture(scope="module")
def sbom(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("sbom") / "bom.cdx.json"
    env = {"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1700000000"}
    done = subprocess.run(
        ["make", "-s", "sbom", f"SBOM={out}"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


def test_the_document_is_cyclonedx_1_5(sbom: dict[str, Any]) -> None:
    assert sbom["bomFormat"] == "CycloneDX" and sbom["specVersion"] == "1.5" and sbom["version"] == 1
    assert uuid.UUID(sbom["serialNumber"].removeprefix("urn:uuid:")).version == 5
    assert sbom["metadata"]["timestamp"] == "2023-11-14T22:13:20Z"  # SOURCE_DATE_EPOCH
    subject = sbom["metadata"]["component"]
    assert (
        subject["name"] == "bottleneck-operator"
        and subject["purl"] == f"pkg:pypi/bottleneck-operator@{subject['version']}"
    )
    refs = [c["bom-ref"] for c in sbom["components"]]
    assert len(refs) == len(set(refs))
    for component in sbom["components"]:
        assert component["type"] == "library"
        assert component["purl"] == f"pkg:pypi/{component['name']}@{component['version']}" == component["bom-ref"]


def test_components_are_the_locks_pins_with_their_hashes(sbom: dict[str, Any]) -> None:
    lock = _lock()
    found = {
        c["name"]: (c["version"], {h["content"] for r in c["externalReferences"] for h in r["hashes"]})
        for c in sbom["components"]
    }
    assert found == lock
    assert all(h["alg"] == "SHA-256" for c in sbom["components"] for r in c["externalReferences"] for h in r["hashes"])


def test_the_dependency_graph_is_closed_and_rooted(sbom: dict[str, Any]) -> None:
    root = sbom["metadata"]["component"]["bom-ref"]
    known = {root} | {c["bom-ref"] for c in sbom["components"]}
    graph = {d["ref"]: set(d["dependsOn"]) for d in sbom["dependencies"]}
    assert set(graph) == known
    assert set().union(*graph.values()) <= known
    # Every locked package is reached from the project: nothing in the image is unaccounted for.
    reached, todo = set(), [root]
    while todo:
        ref = todo.pop()
        for dep in graph[ref] - reached:
            reached.add(dep)
            todo.append(dep)
    assert reached == known - {root}
    assert "pkg:pypi/kopf@" in " ".join(graph[root])


def test_the_same_lock_gives_the_same_document(sbom: dict[str, Any], tmp_path: Path) -> None:
    again = tmp_path / "again.json"
    env = {"PATH": "/usr/bin:/bin", "SOURCE_DATE_EPOCH": "1700000000"}
    subprocess.run(
        ["make", "-s", "sbom", f"SBOM={again}"], cwd=ROOT, env=env, check=True, capture_output=True, timeout=60
    )
    assert json.loads(again.read_text()) == sbom


def test_a_lock_without_pins_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.lock"
    empty.write_text("# nothing pinned\n")
    done = subprocess.run(
        ["python3", "scripts/sbom.py", "--lock", str(empty), "--output", str(tmp_path / "x.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "pins no package" in done.stderr and not (tmp_path / "x.json").exists()
