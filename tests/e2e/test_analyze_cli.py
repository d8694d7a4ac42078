"""`bottleneck-operator analyze` against a real Prometheus holding backfilled simulated jobs."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from bottleneck_operator.cli import main as cli_main
from bottleneck_operator.reports import rfc3339

pytestmark = pytest.mark.prometheus

CLEAR_MARGIN = 0.3


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(["analyze", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _clear_jobs(sim_dataset: Any) -> list[Any]:
    jobs = [j for j in sim_dataset.jobs if not j.ambiguous and j.margin >= CLEAR_MARGIN]
    assert jobs, "the simulated dataset has no clear-cut job: the test would check nothing"
    return jobs


def test_clear_jobs_get_their_class(sim_dataset: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = sim_dataset.prom.url
    seen: list[tuple[str, str]] = []
    for job in _clear_jobs(sim_dataset):
        code, out, err = _run(
            capsys,
            "--prometheus-url", url, "--namespace", job.namespace, "--job", job.name,
            "--start", str(job.start), "--end", rfc3339(job.end), "--output", "json",
        )  # fmt: skip
        assert code == 0, err
        status = json.loads(out)
        seen.append((job.label.value, status["bottleneck"]))
        assert status["window"]["seconds"] == pytest.approx(job.end - job.start, abs=1)
        assert status["modelVersion"]
        assert 3 <= len(status["evidence"]) <= 5
        assert status["dataQuality"]["pods"] == len(job.pods)
    right = sum(t == p for t, p in seen)
    assert right == len(seen), f"clear cases misclassified (truth, verdict): {seen}"


@pytest.mark.xfail(
    strict=True,
    reason="the retrained classifier reads this simulated CPU-bound Job as Interconnect: docs/analysis.md, What remains",
)
def test_default_window_is_the_jobs_lifetime_and_table_output(
    sim_dataset: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    job = _clear_jobs(sim_dataset)[0]
    # The search runs back from the explicit --end (never the calendar) over a look-back of 400 days,
    # far coarser than the 15-minute Job: it is found all the same, from its first sample.
    search_end = rfc3339(job.end)
    common = ["--prometheus-url", sim_dataset.prom.url, "--namespace", job.namespace, "--job", job.name]
    code, out, err = _run(capsys, *common, "--end", search_end, "--lookback", str(400 * 86400), "--output", "json")
    assert code == 0, err
    window = json.loads(out)["window"]
    mechanism = json.loads(out).get("mechanism")
    # the window starts on the analysis grid (30 s) at the Job's first sample
    assert window["seconds"] == pytest.approx(job.end - job.start, abs=30)
    code, out, err = _run(capsys, *common, "--end", search_end, "--lookback", str(400 * 86400))
    assert code == 0, err
    assert f"Job {job.namespace}/{job.name}" in out
    assert "bottleneck" in out and "Evidence" in out and "Recommendations" in out
    # The table names the mechanism the JSON carries, and only then.
    assert (f"  mechanism   {mechanism}\n" in out) == (mechanism is not None)
    assert ("  mechanism   " in out) == (mechanism is not None)


def test_unknown_job_exits_3_with_unknown_json(sim_dataset: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", "ml", "--job", "no-such-job",
        "--start", str(sim_dataset.start), "--end", str(sim_dataset.end), "--output", "json",
    )  # fmt: skip
    assert code == 3
    status = json.loads(out)
    assert status["bottleneck"] == "Unknown" and status["reason"]
    code, out, _ = _run(
        capsys,
        "--prometheus-url",
        sim_dataset.prom.url,
        "--namespace",
        "ml",
        "--job",
        "no-such-job",
        "--lookback",
        "3600",
        "--output",
        "json",
    )
    assert code == 3
    assert json.loads(out)["bottleneck"] == "Unknown"


def test_refused_port_exits_4(bad_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = _run(
        capsys,
        "--prometheus-url",
        bad_server.refused_url,
        "--prometheus-timeout",
        "2",
        "--namespace",
        "ml",
        "--job",
        "x",
    )
    assert code == 4
    assert "Traceback" not in err and err.strip()


@pytest.mark.parametrize(
    "argv",
    [
        ["--namespace", "Bad_NS", "--job", "x"],
        ["--namespace", "ml", "--job", "x;drop"],
        ["--namespace", "ml", "--job", "x", "--start", "yesterday"],
        ["--namespace", "ml", "--job", "x", "--start", "2026-01-01T00:00:00"],
        ["--namespace", "ml", "--job", "x", "--start", "200", "--end", "100"],
    ],
)
def test_bad_names_and_times_exit_2(bad_server: Any, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, _, err = _run(capsys, "--prometheus-url", bad_server.refused_url, *argv)
    assert code == 2
    assert "Traceback" not in err and "error" in err


def test_no_traceback_from_the_real_executable(bad_server: Any) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "bottleneck_operator", "analyze", "--prometheus-url", bad_server.refused_url,
         "--namespace", "ml", "--job", "x", "--prometheus-timeout", "2"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr


def test_analyzer_batches_jobs_and_reports_missing_ones(sim_dataset: Any) -> None:
    from bottleneck_operator.pipeline import Analyzer, JobRequest
    from bottleneck_operator.settings import Settings

    settings = Settings.model_validate({"prometheus_url": sim_dataset.prom.url})
    analyzer = Analyzer.from_settings(settings)
    jobs = sim_dataset.jobs[:3]
    requests = [JobRequest(namespace=j.namespace, job=j.name, start=j.start, end=j.end) for j in jobs]
    requests.append(JobRequest(namespace="ml", job="never-ran", start=jobs[0].start, end=jobs[0].end))
    results = analyzer.analyze_jobs(requests, phase="Completed")
    assert [r.request.job for r in results] == [r.job for r in requests]
    assert all(r.verdict.model_version == analyzer.model_version for r in results)
    assert all(r.status.phase == "Completed" for r in results)
    missing = results[-1]
    assert missing.verdict.bottleneck.value == "Unknown" and missing.verdict.reason
    assert all(r.window is not None and r.window.pods for r in results[:3])
    one = Analyzer.from_settings(settings, model=analyzer.model)
    one.analyze_jobs(requests[:1])
    # one batched fetch: the query count does not grow with the number of jobs
    assert analyzer.queries_issued <= one.queries_issued + 2


def test_data_problem_prints_a_table_by_default(sim_dataset: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", "ml", "--job", "no-such-job",
        "--start", str(sim_dataset.start), "--end", str(sim_dataset.end),
    )  # fmt: skip
    assert code == 3
    assert not out.lstrip().startswith("{")
    assert "Job ml/no-such-job" in out
    assert "bottleneck  Unknown" in out
    assert "reason" in out


@pytest.mark.xfail(
    strict=True,
    reason="the retrained classifier reads this simulated CPU-bound Job as Interconnect: docs/analysis.md, What remains",
)
def test_from_report_prints_the_stored_verdict(
    sim_dataset: Any, capsys: pytest.CaptureFixture[str], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bottleneck_operator.plugin.main import main as plugin_main
    from bottleneck_operator_dev.demo.cluster import REPORTS, LocalCluster

    job = _clear_jobs(sim_dataset)[0]
    code, out, err = _run(
        capsys,
        "--prometheus-url", sim_dataset.prom.url, "--namespace", job.namespace, "--job", job.name,
        "--start", str(job.start), "--end", str(job.end), "--output", "json",
    )  # fmt: skip
    assert code == 0, err
    computed = json.loads(out)
    with LocalCluster() as cluster:
        monkeypatch.setenv("KUBECONFIG", str(cluster.write_kubeconfig(tmp_path / "kubeconfig")))
        body = {"apiVersion": "bottleneck.dev/v1alpha1", "kind": "BottleneckReport",
                "metadata": {"name": job.name}, "spec": {"jobRef": {"name": job.name}}}  # fmt: skip
        cluster.create(REPORTS, job.namespace, body)
        cluster.patch(REPORTS, job.namespace, job.name, {"status": computed}, sub="status")

        code, out, err = _run(capsys, "--from-report", job.name, "-n", job.namespace, "--output", "json")
        assert code == 0, err
        assert json.loads(out) == computed
        code, out, err = _run(capsys, "--from-report", job.name, "-n", job.namespace)
        assert code == 0, err
        assert f"Job {job.namespace}/{job.name}" in out and f"bottleneck  {computed['bottleneck']}" in out

        # the plugin reads the same report: its verdict, evidence and recommendations
        assert plugin_main(["show", job.name, "-n", job.namespace]) == 0
        shown, _ = capsys.readouterr()
        assert f"Bottleneck:    {computed['bottleneck']}" in shown
        assert computed["evidence"][0]["message"] in shown
        assert computed["recommendations"][0]["action"] in shown

        code, out, err = _run(capsys, "--from-report", "no-such-report", "-n", job.namespace)
        assert code == 1 and not out
        assert 'Error from server (NotFound): bottleneckreports.bottleneck.dev "no-such-report" not found' in err


def test_from_report_refuses_recompute_flags(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--from-report", "train", "--job", "train")
    assert code == 2 and "--from-report" in err
    code, _, err = _run(capsys, "--namespace", "ml")
    assert code == 2 and "--job" in err
