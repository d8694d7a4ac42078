#!/usr/bin/env python3
"""Write a CycloneDX 1.5 SBOM (JSON) of the image's Python dependencies, read from requirements.lock.

The image installs exactly the lock (``pip install --require-hashes --no-deps -r requirements.lock``)
plus the operator's own wheel, so the lock is the bill of materials: one component per pinned
package with its purl, and the lock's accepted file hashes as the component's distribution hashes;
the dependency graph comes from the lock's ``# via`` comments. Nothing is fetched: no network, no
installed environment is inspected. The base image's Debian packages are not in it (they are the
base image's own).

    python scripts/sbom.py [--lock requirements.lock] [--pyproject pyproject.toml] [--output FILE]

``SOURCE_DATE_EPOCH`` sets the timestamp (reproducible builds); the serial number is derived from
the lock's content, so one lock always gives the same document.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import tomllib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)")
_HASH = re.compile(r"--hash=sha256:([0-9a-f]{64})")
_VIA = re.compile(r"^\s*#\s+(?:via\s+)?([A-Za-z0-9][A-Za-z0-9._-]*)(?:\s+\(.*\))?\s*$")


@dataclass
class Locked:
    """One pinned package of the lock."""

    name: str
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # the packages (or the project) that require it


def normalise(name: str) -> str:
    """PEP 503 name: what purls and pip compare."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> list[Locked]:
    """The pinned packages of a ``uv pip compile --generate-hashes`` lock, in file order."""
    out: list[Locked] = []
    in_via = False
    for line in text.splitlines():
        pin = _PIN.match(line)
        if pin:
            out.append(Locked(normalise(pin.group(1)), pin.group(3)))
            in_via = False
        elif out and "--hash=" in line:
            out[-1].hashes += _HASH.findall(line)
        elif out and line.strip().startswith("# via"):
            rest = line.strip()[len("# via") :].strip()
            in_via = not rest
            if rest:
                out[-1].via.append(normalise(rest.split()[0]))
        elif out and in_via and line.strip().startswith("#"):
            match = _VIA.match(line)
            if match:
                out[-1].via.append(normalise(match.group(1)))
        else:
            in_via = False
    return out


def purl(name: str, version: str) -> str:
    return f"pkg:pypi/{normalise(name)}@{version}"


def _component(item: Locked) -> dict[str, Any]:
    return {
        "type": "library",
        "bom-ref": purl(item.name, item.version),
        "name": item.name,
        "version": item.version,
        "purl": purl(item.name, item.version),
        "externalReferences": [
            {
                # Every file of this release the lock accepts (one per platform and Python):
                # pip installs only one whose hash is among them.
                "type": "distribution",
                "url": f"https://pypi.org/project/{item.name}/{item.version}/",
                "hashes": [{"alg": "SHA-256", "content": h} for h in sorted(item.hashes)],
            }
        ],
    }


def _dependencies(locked: list[Locked], root_ref: str) -> list[dict[str, Any]]:
    refs = {item.name: purl(item.name, item.version) for item in locked}
    needs: dict[str, set[str]] = {root_ref: set(), **{ref: set() for ref in refs.values()}}
    for item in locked:
        for parent in item.via or [""]:
            needs[refs.get(parent, root_ref)].add(refs[item.name])
    return [{"ref": ref, "dependsOn": sorted(deps)} for ref, deps in needs.items()]


def build_bom(lock_text: str, project: dict[str, Any], *, timestamp: datetime) -> dict[str, Any]:
    """The SBOM of the lock, with the project as its subject.

    Args:
        lock_text: the lock file's content.
        project: pyproject.toml's ``[project]`` table (name, version, license, description).
        timestamp: when the BOM was made.

    Returns:
        A CycloneDX 1.5 document as a JSON-ready dict.
    """
    locked = parse_lock(lock_text)
    name = normalise(project["name"])
    root_ref = purl(name, project["version"])
    digest = hashlib.sha256(lock_text.encode()).hexdigest()
    licence = project.get("license")
    subject: dict[str, Any] = {
        "type": "application",
        "bom-ref": root_ref,
        "name": name,
        "version": project["version"],
        "purl": root_ref,
        "description": project.get("description", ""),
    }
    if isinstance(licence, str):
        subject["licenses"] = [{"expression": licence}]
    return {
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": uuid.uuid5(uuid.NAMESPACE_URL, f"{root_ref}#lock-sha256={digest}").urn,
        "version": 1,
        "metadata": {
            "timestamp": timestamp.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "tools": {"components": [{"type": "application", "name": "bottleneck-operator scripts/sbom.py"}]},
            "component": subject,
            "properties": [{"name": "requirements.lock:sha256", "value": digest}],
        },
        "components": [_component(item) for item in locked],
        "dependencies": _dependencies(locked, root_ref),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lock", type=Path, default=ROOT / "requirements.lock")
    parser.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    parser.add_argument("--output", type=Path, help="the SBOM file (default: stdout)")
    args = parser.parse_args(argv)
    try:
        lock_text = args.lock.read_text()
        project = tomllib.loads(args.pyproject.read_text())["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        print(f"sbom: error: {exc}", file=sys.stderr)
        return 2
    if not parse_lock(lock_text):
        print(f"sbom: error: {args.lock} pins no package", file=sys.stderr)
        return 2
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    when = datetime.fromtimestamp(int(epoch), tz=UTC) if epoch else datetime.now(tz=UTC)
    text = json.dumps(build_bom(lock_text, project, timestamp=when), indent=2) + "\n"
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
