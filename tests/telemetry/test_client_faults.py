"""Faults where Prometheus should be: refused, slow, 5xx, 4xx, malformed or foreign answers.

Every public function must raise one of the data layer's own errors (never an http.client, ssl or
socket type), with the library's exception chained as the cause and the answer's HTTP status as the
error's ``status`` (None when there was no answer), and must not hang.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bottleneck_operator.errors import EXIT_PROMETHEUS_UNREACHABLE, BottleneckError
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import (
    PrometheusClient,
    PrometheusUnavailable,
    QueryRejected,
    QueryTimeout,
    WindowRequest,
    fetch_windows,
    job_lifetime,
)
from bottleneck_operator.telemetry.fetch.client import HTTPStatusError

T0 = 1767225600.0


def _client(url: str, **kw: Any) -> PrometheusClient:
    base: dict[str, Any] = {"prometheus_timeout": 0.3, "prometheus_retries": 1, "prometheus_retry_backoff": 0.01}
    return PrometheusClient(Settings(prometheus_url=url, **{**base, **kw}))


def _calls(client: PrometheusClient) -> dict[str, Callable[[], object]]:
    long_query = "vector(1) or " * 400 + "vector(1)"  # > 4 KiB: goes out as a POST
    req = [WindowRequest("ml", "resnet-io", T0, T0 + 600)]
    return {
        "query": lambda: client.query("up", T0),
        "query_range": lambda: client.query_range("up", T0, T0 + 60, 30),
        "query_range_post": lambda: client.query_range(long_query, T0, T0 + 60, 30),
        "query_range_fractional": lambda: client.query_range("up", T0 + 0.5, T0 + 60.5, 30),
        "check": client.check,
        "fetch_windows": lambda: fetch_windows(client, req, Settings().labels, step=30.0),
        "job_lifetime": lambda: job_lifetime(client, "ml", "resnet-io", now=T0 + 600, lookback=3600),
    }


def _assert_ours(exc: BaseException, expected: type[BottleneckError]) -> None:
    assert isinstance(exc, expected), repr(exc)
    assert isinstance(exc, BottleneckError)
    assert type(exc).__module__.startswith("bottleneck_operator.")
    assert exc.exit_code == EXIT_PROMETHEUS_UNREACHABLE


@pytest.mark.parametrize(
    ("mode", "expected", "status"),
    [
        ("refused", PrometheusUnavailable, None),
        ("slow", QueryTimeout, None),
        ("error500", PrometheusUnavailable, 500),
        ("error503", PrometheusUnavailable, 503),
        ("error400", QueryRejected, 400),
        ("badjson", QueryRejected, 200),  # an answer, but not usable
        ("notprom", QueryRejected, 200),
        ("html", QueryRejected, 200),
        ("nowhere", QueryRejected, 404),  # 404: not a Prometheus API at this path
    ],
)
def test_every_public_function_raises_our_error(
    bad_server: Any, mode: str, expected: type[BottleneckError], status: int | None
) -> None:
    url = bad_server.refused_url if mode == "refused" else bad_server.url(mode)
    client = _client(url)
    for name, call in _calls(client).items():
        with pytest.raises(BottleneckError) as info:
            call()
        _assert_ours(info.value, expected)
        assert info.value.__cause__ is not None, f"{name}: the library's exception must be the cause"
        assert "/api/v1/" in str(info.value) or "Prometheus" in str(info.value), name
        assert info.value.status == status, name


@pytest.mark.parametrize(
    ("code", "expected", "attempts"),
    [
        (401, QueryRejected, 1),
        (403, QueryRejected, 1),
        (422, QueryRejected, 1),
        (429, PrometheusUnavailable, 3),
        (501, PrometheusUnavailable, 3),
        (502, PrometheusUnavailable, 3),
    ],
)
def test_status_decides_the_error_and_the_retries(
    status_server: Any, code: int, expected: type[BottleneckError], attempts: int
) -> None:
    client = _client(status_server.url(code), prometheus_retries=2)
    for call in _calls(client).values():
        before = status_server.hits(code)
        with pytest.raises(BottleneckError) as info:
            call()
        _assert_ours(info.value, expected)
        assert info.value.status == code
        assert isinstance(info.value.__cause__, HTTPStatusError)
        assert f"status {code}" in str(info.value)  # Prometheus's own error text is quoted
        assert status_server.hits(code) - before == attempts


def test_credentials_refused_say_so(status_server: Any) -> None:
    with pytest.raises(QueryRejected, match=r"refused the credentials \(HTTP 401\)"):
        _client(status_server.url(401)).query("up", T0)


def test_library_exception_is_the_cause(bad_server: Any) -> None:
    with pytest.raises(PrometheusUnavailable) as info:
        _client(bad_server.refused_url).query("up", T0)
    assert isinstance(info.value.__cause__, ConnectionRefusedError)


def test_5xx_is_retried_with_a_bound(bad_server: Any) -> None:
    before = bad_server.hits("error503")
    client = _client(bad_server.url("error503"), prometheus_retries=2)
    with pytest.raises(PrometheusUnavailable, match="HTTP 503") as info:
        client.query("up", T0)
    assert info.value.status == 503
    assert bad_server.hits("error503") - before == 3  # one attempt + two retries
    assert client.queries_issued == 1  # retries are not separate queries


def test_4xx_is_not_retried_and_carries_prometheus_error(bad_server: Any) -> None:
    before = bad_server.hits("error400")
    with pytest.raises(QueryRejected, match="bad_data: parse error") as info:
        _client(bad_server.url("error400"), prometheus_retries=3).query("up", T0)
    assert info.value.status == 400
    assert bad_server.hits("error400") - before == 1


def test_slow_server_times_out_once_the_deadline_is_spent(bad_server: Any) -> None:
    # The deadline covers the query with its retries: once it has passed, no retry is started.
    before = bad_server.hits("slow")
    with pytest.raises(QueryTimeout, match=r"no whole answer within the 0\.5s deadline") as info:
        _client(bad_server.url("slow"), prometheus_retries=1, prometheus_timeout=0.5).query("up", T0)
    assert info.value.limit == "deadline"
    assert bad_server.hits("slow") - before == 1


def test_credentials_are_not_echoed(bad_server: Any) -> None:
    url = bad_server.url("error500").replace("http://", "http://user:s3cret@")
    with pytest.raises(PrometheusUnavailable) as info:
        _client(url, prometheus_retries=0).query("up", T0)
    assert "s3cret" not in str(info.value)


def test_headers_auth_and_rotating_token(bad_server: Any, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    client = _client(
        bad_server.url("ok"),
        prometheus_headers={"X-Scope-OrgID": "team-a"},
        prometheus_bearer_token_file=token,
    )
    client.query_range("up", T0, T0 + 60, 30)
    seen = bad_server.headers("ok")
    assert seen["X-Scope-OrgID"] == "team-a"
    assert seen["Authorization"] == "Bearer first"
    token.write_text("second\n")  # a rotated service-account token
    client.query_range("up" + " or up" * 1000, T0, T0 + 60, 30)  # the POST path too
    assert bad_server.headers("ok")["Authorization"] == "Bearer second"


@pytest.mark.parametrize("compression", [False, True])
def test_answers_are_compressed_only_when_asked(bad_server: Any, compression: bool) -> None:
    client = _client(bad_server.url("ok"), prometheus_compression=compression)
    expected = "gzip" if compression else "identity"
    for call in (
        lambda: client.query("up", T0),
        lambda: client.query_range("up" + " or up" * 1000, T0, T0 + 60, 30),
        lambda: client.query_range_matrix("up", T0, T0 + 60, 30),
    ):
        call()
        assert bad_server.headers("ok")["Accept-Encoding"] == expected


def test_basic_auth(bad_server: Any) -> None:
    client = _client(bad_server.url("ok"), prometheus_username="alice", prometheus_password="pw")
    client.query("up", T0)
    assert bad_server.headers("ok")["Authorization"].startswith("Basic ")


def test_missing_token_file_is_a_clear_error(bad_server: Any, tmp_path: Path) -> None:
    client = _client(bad_server.url("ok"), prometheus_bearer_token_file=tmp_path / "absent")
    with pytest.raises(PrometheusUnavailable, match="bearer token file"):
        client.query("up", T0)


def test_tls_to_a_plain_http_port_fails_cleanly(bad_server: Any) -> None:
    url = bad_server.url("ok").replace("http://", "https://")
    with pytest.raises(PrometheusUnavailable):
        _client(url, prometheus_retries=0).query("up", T0)


def test_real_prometheus_down_after_use(start_prometheus: Any) -> None:
    prom = start_prometheus(None)
    client = _client(prom.url, prometheus_timeout=5.0)
    client.check()
    prom.stop()
    with pytest.raises(PrometheusUnavailable):
        client.check()


def test_failure_in_the_middle_of_a_pass_stops_it(bad_server: Any) -> None:
    # Discovery succeeds, then every signal query gets 503: the pass must stop at the first
    # exhausted query instead of retrying all ~50 of them.
    before = bad_server.hits("midpass")
    client = _client(bad_server.url("midpass"), prometheus_retries=1)
    with pytest.raises(PrometheusUnavailable, match="503") as info:
        fetch_windows(client, [WindowRequest("ml", "resnet-io", T0, T0 + 600)], Settings().labels, step=30.0)
    assert info.value.status == 503
    sent = bad_server.hits("midpass") - before
    assert sent < 2 + 2 * 8, sent  # discovery + instant + at most a few in-flight queries, with one retry each
