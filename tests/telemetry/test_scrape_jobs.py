"""The scrape-job restriction: each family's selectors, and only theirs, name its jobs."""

from __future__ import annotations

import pytest

from bottleneck_operator.settings import Settings
from bottleneck_operator.telemetry.plan.names import ScopedMatcher, add_matchers, scrape_job_matchers, with_matchers

EXPR = (
    'max by (pod) (kube_pod_info{namespace=~"ml"}) * on (pod) DCGM_FI_DEV_GPU_UTIL{pod=~"a{1}"} '
    "+ on () rate(node_cpu_seconds_total{}[1m]) + bottleneck_sidecar_info{} + container_memory_rss{} + up{}"
)


def test_each_family_gets_its_own_jobs_and_other_metrics_none() -> None:
    labels = with_matchers(Settings(selector_matchers=['cluster="a"']).labels)
    out = add_matchers(EXPR, labels.selector_matchers)
    assert 'kube_pod_info{cluster="a",job=~"kube-state-metrics",namespace=~"ml"}' in out
    # A brace inside a string literal is not a selector.
    assert 'DCGM_FI_DEV_GPU_UTIL{cluster="a",job=~"dcgm-exporter|nvidia-dcgm-exporter",pod=~"a{1}"}' in out
    assert 'node_cpu_seconds_total{cluster="a",job=~"node-exporter"}' in out
    assert 'bottleneck_sidecar_info{cluster="a",job=~"bottleneck-collector"}' in out
    assert 'container_memory_rss{cluster="a",job=~"kubelet"}' in out
    assert 'up{cluster="a"}' in out  # no family's metric: no job


def test_the_restriction_can_be_lifted_per_family_and_is_applied_once() -> None:
    labels = Settings(scrape_jobs={"dcgm": [], "node": ["node-exporter", "ne.v2"]}).labels
    once = with_matchers(labels)
    assert with_matchers(once).selector_matchers == once.selector_matchers
    out = add_matchers("DCGM_FI_DEV_FB_USED{} + node_load1{}", once.selector_matchers)
    assert out == 'DCGM_FI_DEV_FB_USED{} + node_load1{job=~"ne\\\\.v2|node-exporter"}'
    assert add_matchers("up{}", ()) == "up{}"


def test_a_scoped_matcher_only_applies_to_its_prefixes() -> None:
    (dcgm,) = scrape_job_matchers([("dcgm", ["dcgm-exporter"])])
    assert isinstance(dcgm, ScopedMatcher) and dcgm == 'job=~"dcgm-exporter"'
    assert dcgm.applies_to("DCGM_FI_DEV_GPU_UTIL") and not dcgm.applies_to("node_load1")
    with pytest.raises(KeyError):
        scrape_job_matchers([("elsewhere", ["x"])])
