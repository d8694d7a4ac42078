"""Live exporter endpoints: parseable exposition text, values that follow the clock."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bottleneck_operator_dev.simulation import LiveExporters, generate_jobs
from bottleneck_operator_dev.simulation.localprom import LocalPrometheus, binaries_available

START = 1_700_000_000.0


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


async def test_endpoints_serve_parseable_metrics() -> None:
    jobs = generate_jobs(4, 2, start=START, duration=900, dcgm_fieldset="shipped")
    now = [START + 400.0]
    live = LiveExporters(jobs, clock=lambda: now[0])
    urls = await live.start()
    try:
        nodes = {f"node-{n.name}" for j in jobs for n in j.nodes}
        assert {"dcgm", "cadvisor", "ksm", "sidecar"} | nodes >= set(urls) >= {"dcgm", "cadvisor"} | nodes
        async with aiohttp.ClientSession() as session:
            texts = {}
            for name, url in urls.items():
                async with session.get(url + "/metrics") as resp:
                    assert resp.status == 200
                    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                    texts[name] = await resp.text()
        dcgm = _samples(texts["dcgm"])
        assert {lab["pod"] for lab, _ in dcgm["DCGM_FI_DEV_GPU_UTIL"]} == {p.pod for j in jobs for p in j.pods}
        assert all("instance" not in lab for lab, _ in dcgm["DCGM_FI_DEV_GPU_UTIL"])  # left to the scraper
        node = _samples(texts[sorted(nodes)[0]])
        assert len(node["node_uname_info"]) == 1
        assert "node_cpu_seconds_total" in node
        if "ksm" in texts:
            ksm = _samples(texts["ksm"])
            assert {lab["created_by_name"] for lab, _ in ksm["kube_pod_info"]} >= {
                j.name for j in jobs if j.params.env.ksm
            }
    finally:
        await live.stop()


def test_counters_grow_with_the_clock_and_jobs_end() -> None:
    jobs = generate_jobs(4, 1, start=START, duration=900)
    live = LiveExporters(jobs)
    node = next(e for e in live.endpoints if e.startswith("node-"))

    def idle(at: float) -> float:
        rows = _samples(live.render(node, now=at))["node_cpu_seconds_total"]
        return sum(v for lab, v in rows if lab["mode"] == "idle")

    a, b = idle(START + 300.0), idle(START + 307.0)
    assert b > a  # interpolated between scrapes: grows smoothly
    assert live.render("dcgm", now=START + 2000.0) == ""  # the job has ended: its pods are gone
    assert live.render("dcgm", now=START - 10.0) == ""


@pytest.mark.prometheus
async def test_a_real_prometheus_scrapes_the_endpoints(tmp_path: Path) -> None:
    """Debian's Prometheus scrapes every live endpoint and stores the exporters' names and labels."""
    if not binaries_available():
        pytest.skip("prometheus/promtool missing: `make test` installs Debian's prometheus")
    now = time.time()
    jobs = generate_jobs(8, 1, start=now - 120, duration=3600, dcgm_fieldset="shipped")
    live = LiveExporters(jobs)
    urls = await live.start()
    targets = {
        "dcgm-exporter" if n == "dcgm" else n: [u + "/metrics"] for n, u in urls.items() if not n.startswith("node-")
    }
    targets["node-exporter"] = [u + "/metrics" for n, u in urls.items() if n.startswith("node-")]
    prom = await asyncio.to_thread(
        LocalPrometheus.from_openmetrics, None, workdir=tmp_path / "prom", scrape_targets=targets, scrape_interval=1.0
    )
    try:
        pod = jobs[0].pods[0].pod
        query = f'DCGM_FI_DEV_GPU_UTIL{{pod="{pod}"}}'
        result: list[dict[str, object]] = []
        for _ in range(100):  # wait for the first scrapes (a bounded poll, not a timing assertion)
            result = await asyncio.to_thread(_query, prom.url, query)
            if result:
                break
            await asyncio.sleep(0.2)
        assert result, "Prometheus stored no dcgm series from the live endpoint"
        labels = result[0]["metric"]
        assert isinstance(labels, dict)
        assert labels["job"] == "dcgm-exporter" and labels["namespace"] == jobs[0].namespace
        uname = []
        for _ in range(100):
            uname = await asyncio.to_thread(_query, prom.url, "node_uname_info")
            if len(uname) == len(jobs[0].nodes):
                break
            await asyncio.sleep(0.2)
        assert {r["metric"]["nodename"] for r in uname} == {n.name for n in jobs[0].nodes}  # type: ignore[index]
    finally:
        await asyncio.to_thread(prom.stop)
        await live.stop()


def _query(base: str, expr: str) -> list[dict[str, object]]:
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as resp:
        data = json.load(resp)
    return list(data["data"]["result"])
