"""One error tree by what the caller does: every error class under one branch, exit codes by branch.

The classes are found by importing the whole package and walking ``BottleneckError``'s subclasses,
so a class added anywhere is checked without being named here.
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
import socket
from pathlib import Path

import kopf
import pytest

import bottleneck_operator
from bottleneck_operator import cli
from bottleneck_operator.errors import (
    BRANCHES,
    EXIT_INTERNAL,
    EXIT_NO_DATA,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    BottleneckError,
    ModelError,
    NoData,
    Rejected,
    Unavailable,
    UsageError,
    branch,
)
from bottleneck_operator.handlers.operator import RETRY_DELAY, kopf_error
from bottleneck_operator.httpclient import retryable
from bottleneck_operator.kube import Credentials, KubeClient, Resource
from bottleneck_operator.kube.errors import ApiUnavailable, CredentialsError, KubeError, Unauthorized, for_status
from bottleneck_operator.telemetry.errors import InvalidName, PrometheusUnavailable, QueryRejected, QueryTimeout

PACKAGE = Path(bottleneck_operator.__file__).parent
EXIT_BY_BRANCH = {Unavailable: EXIT_UNAVAILABLE, Rejected: EXIT_UNAVAILABLE, UsageError: EXIT_USAGE}
# Classes outside the branches, each for a stated reason: they are the project's own failures (exit 1).
UNBRANCHED = {
    "KubeError": "the Kubernetes boundary's base: groups its errors by where, never raised itself",
    "KubectlError": "worded as kubectl words it, and exits 1 as kubectl does",
    "LocalPrometheusError": "a local runner (tests, demo, benchmarks) that could not start",
}


def _all_error_classes() -> list[type[BottleneckError]]:
    for module in pkgutil.walk_packages([str(PACKAGE)], prefix="bottleneck_operator."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    found: list[type[BottleneckError]] = []
    todo: list[type[BottleneckError]] = [BottleneckError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in found and sub.__module__.startswith("bottleneck_operator."):
                found.append(sub)
                todo.append(sub)
    return found


def test_every_error_class_has_exactly_one_branch_or_a_stated_reason() -> None:
    classes = _all_error_classes()
    assert {QueryTimeout, ApiUnavailable, CredentialsError, NoData, ModelError} <= set(classes)
    for cls in classes:
        under = [b for b in BRANCHES if issubclass(cls, b)]
        assert len(under) <= 1, f"{cls.__name__} is under {[b.__name__ for b in under]}"
        if not under:
            assert cls.__name__ in UNBRANCHED, f"{cls.__module__}.{cls.__name__} lies under no branch"
        assert branch(cls) is (under[0] if under else None)


def test_exit_codes_follow_the_branch() -> None:
    for cls in _all_error_classes():
        home = branch(cls)
        if home is None:
            assert cls.exit_code == EXIT_INTERNAL, cls.__name__
        elif cls is not NoData:  # the one refinement: "nothing to analyse" has its own code
            assert cls.exit_code == EXIT_BY_BRANCH[home], cls.__name__
    assert NoData.exit_code == EXIT_NO_DATA and branch(NoData) is Rejected
    assert branch(ModelError) is UsageError and ModelError.exit_code == EXIT_USAGE


def test_the_boundary_base_is_never_raised_itself() -> None:
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                name = node.exc.func
                assert not (isinstance(name, ast.Name) and name.id == "KubeError"), f"{path}:{node.lineno}"


@pytest.mark.parametrize("status", range(400, 600))
def test_the_api_server_statuses_land_on_the_branch_the_shared_policy_retries(status: int) -> None:
    error = for_status(status, f"HTTP {status}")
    assert isinstance(error, KubeError)
    assert isinstance(error, Unavailable) is retryable(status)
    assert isinstance(error, Rejected) is not retryable(status)
    assert error.status == status


def _refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def test_an_unreachable_api_server_is_an_unavailable_that_kopf_retries() -> None:
    creds = Credentials(server=f"https://127.0.0.1:{_refused_port()}", token="t")

    async def scenario() -> None:
        client = KubeClient(lambda: creds, timeout=2.0)
        try:
            await client.get(Resource("", "v1", "ConfigMap", "configmaps"), "default", "x")
        finally:
            await client.close()

    with pytest.raises(ApiUnavailable) as info:
        asyncio.run(scenario())
    assert isinstance(info.value, Unavailable) and info.value.exit_code == EXIT_UNAVAILABLE
    assert not type(info.value.__cause__).__module__.startswith("bottleneck_operator")
    retried = kopf_error(info.value, "cannot create the report")
    assert isinstance(retried, kopf.TemporaryError) and retried.delay == RETRY_DELAY
    assert "cannot create the report" in str(retried)


@pytest.mark.parametrize(
    "error",
    [
        Unauthorized("forbidden", status=403),
        QueryRejected("rejected", status=400),
        CredentialsError("no kubeconfig"),
        ModelError("untrusted model file"),
        InvalidName("bad name"),
    ],
)
def test_refusals_and_usage_errors_are_permanent_for_kopf(error: BottleneckError) -> None:
    assert isinstance(kopf_error(error, "at startup"), kopf.PermanentError)
    assert not isinstance(kopf_error(error, "at startup"), kopf.TemporaryError)


def test_unavailable_prometheus_is_temporary_for_kopf() -> None:
    for error in (PrometheusUnavailable("down", status=503), QueryTimeout("slow")):
        assert isinstance(kopf_error(error, "at startup"), kopf.TemporaryError)


def test_the_cli_exits_with_the_branch_code(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{_refused_port()}"
    base = ["analyze", "--prometheus-url", url, "--start", "1767225600", "--end", "1767229200"]
    assert cli.main([*base, "--namespace", "ml", "--job", "train"]) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "error:" in err
    assert cli.main([*base, "--namespace", "Not A Namespace", "--job", "train"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
