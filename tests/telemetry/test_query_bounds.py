"""Every query is bounded: a wall-clock deadline, a byte cap and a series cap, each breach its own error.

A misbehaving proxy (tests/prom_proxy.py) stands in front of the real Prometheus over the hand-made
scenario (tests/data/basic): the answers are Prometheus's own, delivered slowly, padded, multiplied
or spoiled on purpose. Each error is then read the way the operator reads it (controller.faults).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from bottleneck_operator.controller.faults import describe, local
from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, WindowRequest, fetch_windows
from bottleneck_operator.telemetry.errors import AnswerTooLarge, InvalidSeries, QueryRejected, QueryTimeout
from prom_proxy import PromProxy

pytestmark = pytest.mark.prometheus
T0 = 1767225600.0
END = T0 + 600
QUERY = 'DCGM_FI_DEV_GPU_UTIL{namespace="ml"}'


@pytest.fixture()
def proxy(basic_prometheus: Any) -> Iterator[PromProxy]:
    with PromProxy(basic_prometheus.url) as p:
        yield p


def _client(url: str, **overrides: Any) -> PrometheusClient:
    return PrometheusClient(Settings(prometheus_url=url, prometheus_retries=0, **overrides))


def test_the_proxy_passes_the_real_answers_through(proxy: PromProxy, basic_prometheus: Any) -> None:
    direct = _client(basic_prometheus.url).query_range_matrix(QUERY, T0, END, 30)
    through = _client(proxy.url).query_range_matrix(QUERY, T0, END, 30)
    assert through.labels == direct.labels and len(direct.labels) == 2
    assert (through.values == direct.values).all()


def test_a_trickling_answer_breaches_the_wall_clock_deadline(proxy: PromProxy) -> None:
    # 16 bytes every 0.2 s: each read gets data well within any per-read timeout, so only a
    # deadline on the whole answer ends the query (the whole answer would take over a minute).
    proxy.fault, proxy.delay = "trickle", 0.2
    client = _client(proxy.url, prometheus_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(QueryTimeout) as info:
        client.query_range_matrix(QUERY, T0, END, 30)
    assert time.monotonic() - started < 10.0
    assert info.value.limit == "deadline"
    assert describe(info.value)[0] == "QueryDeadlineExceeded"


def test_the_deadline_covers_the_retries(proxy: PromProxy) -> None:
    proxy.fault, proxy.delay = "slow", 1.5
    client = PrometheusClient(
        Settings(prometheus_url=proxy.url, prometheus_retries=3, prometheus_retry_backoff=0.01, prometheus_timeout=1.0)
    )
    started = time.monotonic()
    with pytest.raises(QueryTimeout):
        client.query_range_matrix(QUERY, T0, END, 30)
    # Four attempts of 1 s each would take 4 s: the deadline spent, none is retried.
    assert time.monotonic() - started < 3.5


def test_an_answer_over_the_byte_cap_is_not_read(proxy: PromProxy) -> None:
    proxy.fault, proxy.pad = "padded", 3 << 20
    with pytest.raises(AnswerTooLarge) as info:
        _client(proxy.url, max_answer_bytes=1 << 20).query_range_matrix(QUERY, T0, END, 30)
    assert info.value.limit == "bytes"
    assert describe(info.value)[0] == "AnswerBytesExceeded" and "max_answer_bytes" in str(info.value)
    # The same padded answer under a cap it fits is read (padding is valid JSON whitespace).
    assert len(_client(proxy.url, max_answer_bytes=8 << 20).query_range_matrix(QUERY, T0, END, 30).labels) == 2


def test_an_answer_over_the_series_cap_is_refused(proxy: PromProxy) -> None:
    proxy.fault, proxy.copies = "copies", 150
    with pytest.raises(AnswerTooLarge) as info:
        _client(proxy.url, max_answer_series=100).query_range_matrix(QUERY, T0, END, 30)
    assert info.value.limit == "series"
    assert "152 series" in str(info.value)
    assert describe(info.value)[0] == "AnswerSeriesExceeded"
    assert local(info.value)  # a smaller batch of Jobs may fit: the pass splits it


def test_a_series_with_a_label_no_prometheus_writes_is_named(proxy: PromProxy) -> None:
    proxy.odd_pod = "resnet-io-"
    with pytest.raises(InvalidSeries) as info:
        _client(proxy.url).query_range_matrix(QUERY, T0, END, 30)
    assert 'pod="resnet-io-7xk2p"' in info.value.series and "odd=7" in info.value.series
    assert info.value.series.startswith("DCGM_FI_DEV_GPU_UTIL{")
    reason, message = describe(info.value)
    assert reason == "DataInvalid" and info.value.series in message
    # Series of other pods stay valid: the instant query over another Job's pods is answered.
    answer = _client(proxy.url).query('kube_pod_info{pod!~"resnet-io-.*"}', T0 + 60)
    assert answer and all(isinstance(v, str) for s in answer for v in s["metric"].values())


def test_a_malformed_series_in_one_signal_is_raised_not_dropped(proxy: PromProxy) -> None:
    # A rejected signal query only loses its signal (a note); a malformed series is the Job's data
    # at fault, so it reaches the pass, which pins it on the Job.
    proxy.odd_pod, proxy.odd_in = "resnet-io-", "DCGM_FI_DEV_GPU_UTIL"
    client = _client(proxy.url)
    with pytest.raises(InvalidSeries) as info:
        fetch_windows(client, [WindowRequest("ml", "resnet-io", T0, END)], Settings().labels, step=30)
    assert 'pod="resnet-io-7xk2p"' in info.value.series
    proxy.odd_pod = None
    windows = fetch_windows(client, [WindowRequest("ml", "resnet-io", T0, END)], Settings().labels, step=30)
    assert windows[("ml", "resnet-io")].pods


def test_credentials_refused_mid_batch_fail_the_batch_not_one_signal(proxy: PromProxy) -> None:
    # A 403 on one query is the endpoint's refusal, which every other query meets too (a fault that
    # began mid-pass): it fails the batch, so no window is read from what was answered before it.
    # A refusal of the query itself (413) only loses its signal.
    proxy.fault, proxy.fault_in = "403", "DCGM_FI_DEV_GPU_UTIL"
    client = _client(proxy.url)
    with pytest.raises(QueryRejected) as info:
        fetch_windows(client, [WindowRequest("ml", "resnet-io", T0, END)], Settings().labels, step=30)
    assert info.value.status == 403 and describe(info.value)[0] == "PrometheusForbidden"
    proxy.fault = "413"
    windows = fetch_windows(client, [WindowRequest("ml", "resnet-io", T0, END)], Settings().labels, step=30)
    assert windows[("ml", "resnet-io")].pods


@pytest.mark.parametrize(
    ("fault", "status", "reason", "splits"),
    [
        ("html", 200, "NotPrometheus", False),
        ("401", 401, "PrometheusUnauthorized", False),
        ("403", 403, "PrometheusForbidden", False),
        ("413", 413, "QueryTooLarge", True),
    ],
)
def test_each_refusal_keeps_its_http_status(
    proxy: PromProxy, fault: str, status: int, reason: str, splits: bool
) -> None:
    proxy.fault = fault
    with pytest.raises(QueryRejected) as info:
        _client(proxy.url).query_range_matrix(QUERY, T0, END, 30)
    assert info.value.status == status
    got_reason, message = describe(info.value)
    assert got_reason == reason and f"HTTP {status}" in message
    assert local(info.value) is splits
