"""The grid decoder of signal answers: same values as Prometheus's own JSON, our errors on garbage."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry import PrometheusClient, QueryRejected
from bottleneck_operator.telemetry.fetch.transport import decode_matrix
from bottleneck_operator.telemetry.plan.grid import Grid

T0 = 1767225600.0
END = T0 + 600


@pytest.mark.parametrize(
    "expr",
    [
        'avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{namespace="ml"})',
        # NaN and +Inf samples, and a series that only exists on part of the range
        "DCGM_FI_DEV_GPU_UTIL / 0 - DCGM_FI_DEV_GPU_UTIL / 0",
        "max by (gpu) (DCGM_FI_DEV_POWER_USAGE) / 0",
        "DCGM_FI_DEV_GPU_UTIL and on () (vector(time()) > 1767225900)",
    ],
)
def test_matrix_equals_the_json_answer(basic_prometheus: Any, expr: str) -> None:
    client = PrometheusClient(Settings(prometheus_url=basic_prometheus.url))
    start, step = T0 + 15.0, 30.0  # a grid that does not start at index 0 of the window
    plain = client.query_range(expr, start, END, step)
    matrix = client.query_range_matrix(expr, start, END, step)
    assert plain, "the expression should select something"
    assert [dict(r["metric"]) for r in plain] == matrix.labels
    assert matrix.first == round(start / step)
    for row, series in enumerate(plain):
        expected = np.full(matrix.columns, np.nan)
        for t, v in series["values"]:
            # The k-th evaluation is column k. (Not round(t / step) - first: on a grid half a step
            # off the multiples of the step, that rounds half to even and skips every other column.)
            expected[round((float(t) - start) / step)] = float(v)
        np.testing.assert_array_equal(matrix.row(row), expected)


def test_matrix_keeps_special_values() -> None:
    body = (
        b'{"status":"success","data":{"resultType":"matrix","result":['
        b'{"metric":{"a":"1"},"values":[[60,"NaN"],[90,"+Inf"],[150,"-Inf"]]},'
        b'{"metric":{},"values":[[120,"2.5e3"]]}]}}'
    )
    m = decode_matrix(body, Grid.query(60.0, 150.0, 30.0))
    assert m.labels == [{"a": "1"}, {}]
    assert math.isnan(m.values[0, 0]) and m.values[0, 1] == math.inf and m.values[0, 3] == -math.inf
    assert math.isnan(m.values[0, 2])  # no sample at 120
    assert m.values[1].tolist()[2] == 2500.0 and np.isnan(m.values[1, [0, 1, 3]]).all()


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[60,"1"',
        b'{"status":"error","errorType":"bad_data","error":"x"}',
        b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[60,"1"]}]}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[60,"one"]]}]}}',
        b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[60]]}]}}',
        b"<html>not json</html>",
    ],
)
def test_garbage_is_rejected(body: bytes) -> None:
    with pytest.raises((ValueError, TypeError, KeyError)):
        decode_matrix(body, Grid.query(60.0, 120.0, 30.0))


@pytest.mark.parametrize("mode", ["badjson", "notprom", "html", "error400"])
def test_client_maps_garbage_to_query_failed(bad_server: Any, mode: str) -> None:
    client = PrometheusClient(Settings(prometheus_url=bad_server.url(mode), prometheus_retries=0))
    with pytest.raises(QueryRejected) as info:
        client.query_range_matrix("up", T0, END, 30.0)
    assert info.value.__cause__ is not None
