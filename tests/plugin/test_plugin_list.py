"""`kubectl bottleneck list`: kubectl get's table, -A, -o wide/json/yaml, the context's namespace."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from _plugin_support import Reports, Run, io_status, unknown_status

CRD = Path(__file__).resolve().parents[2] / "crds" / "bottleneckreports.bottleneck.dev.yaml"


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_list_one_namespace(reports: Reports, run: Run) -> None:
    reports.add("ml", "train-io", io_status())
    reports.add("ml", "train-new", unknown_status(), job="train-new-job")
    reports.add("other", "elsewhere", io_status())
    code, out, err = run("list", "-n", "ml")
    assert code == 0, err
    rows = _table(out)
    assert rows[0] == ["NAME", "JOB", "BOTTLENECK", "CONFIDENCE", "GPU", "PHASE", "AGE"]
    assert rows[1][:6] == ["train-io", "train-io", "IO", "87%", "31%", "Completed"]
    assert rows[2][:5] == ["train-new", "train-new-job", "Unknown", "0%", "Running"]
    assert len(rows) == 3
    assert "\x1b[" not in out  # not a terminal: no colour


def test_list_all_namespaces_wide(reports: Reports, run: Run) -> None:
    reports.add("ml", "train-io", io_status())
    reports.add("other", "pending", None)
    newer = {**unknown_status().dump(), "mechanism": "network-storage"}  # a field a newer operator may write
    reports.add("team-b", "mech", newer)
    code, out, err = run("list", "-A", "-o", "wide")
    assert code == 0, err
    lines = out.strip().splitlines()
    header = lines[0].split()
    assert header == ["NAMESPACE", "NAME", "JOB", "BOTTLENECK", "CONFIDENCE", "GPU", "PHASE", "AGE",
                      "MECHANISM", "SECONDARY", "HEADROOM", "REASON"]  # fmt: skip
    by_name = {line.split()[1]: line for line in lines[1:]}
    assert set(by_name) == {"train-io", "pending", "mech"}
    assert by_name["train-io"].split()[8:11] == ["<none>", "CPU", "2.4x"]
    assert "network-storage" in by_name["mech"].split()  # its GPU cell is empty, so columns shift under split()
    assert by_name["mech"].rstrip().endswith("no GPU samples yet")
    # a report the operator has not filled yet: name, Job and age only
    assert by_name["pending"].split()[:3] == ["other", "pending", "pending"]


def test_list_default_namespace_comes_from_the_context(reports: Reports, run: Run) -> None:
    reports.add("default", "here", io_status())
    reports.add("ml", "there", io_status())
    code, out, _ = run("list")
    assert code == 0
    assert [r[0] for r in _table(out)[1:]] == ["here"]
    config = yaml.safe_load(reports.kubeconfig.read_text())
    config["contexts"][0]["context"]["namespace"] = "ml"
    config["contexts"].append({"name": "other", "context": {"cluster": "emulator", "user": "emulator"}})
    reports.kubeconfig.write_text(yaml.safe_dump(config))
    code, out, _ = run("list")
    assert [r[0] for r in _table(out)[1:]] == ["there"]
    code, out, _ = run("list", "--context", "other")
    assert [r[0] for r in _table(out)[1:]] == ["here"]


def test_list_json_and_yaml_are_kubectl_lists(reports: Reports, run: Run) -> None:
    reports.add("ml", "train-io", io_status())
    code, out, _ = run("list", "-n", "ml", "-o", "json")
    assert code == 0
    data = json.loads(out)
    assert data["kind"] == "List" and [i["metadata"]["name"] for i in data["items"]] == ["train-io"]
    assert data["items"][0]["status"]["bottleneck"] == "IO"
    code, out, _ = run("list", "-n", "ml", "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(out)["items"][0]["status"]["headroom"]["low"] == 1.6


def test_empty_namespace_says_so_on_stderr(reports: Reports, run: Run) -> None:
    code, out, err = run("list", "-n", "empty")
    assert code == 0 and out == ""
    assert err.strip() == "No resources found in empty namespace."
    code, out, err = run("list", "-A")
    assert code == 0 and err.strip() == "No resources found."


def test_bad_flags_and_names_exit_1(reports: Reports, run: Run) -> None:
    code, _, err = run("list", "--no-such-flag")
    assert code == 1 and err.startswith("error: ") and "--help" in err
    code, _, err = run("list", "-o", "xml")
    assert code == 1 and "invalid choice" in err
    code, _, err = run("list", "-n", "Bad_NS")
    assert code == 1 and err.startswith("error: ") and "Traceback" not in err


def test_wide_headroom_is_the_printer_columns_bound_and_says_when_unmeasured(reports: Reports, run: Run) -> None:
    """HEADROOM is what `kubectl get bnr -o wide` prints from the CRD (the bound alone); a known class
    whose wait nothing measured reads `<unknown>`, a verdict of no class `<none>`."""
    column = next(c for c in yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["additionalPrinterColumns"]
                  if c["name"] == "Headroom")  # fmt: skip
    assert column["jsonPath"] == ".status.headroom.high"
    measured = io_status()
    assert measured.headroom is not None
    unmeasured = {**io_status().dump(), "bottleneck": "Interconnect", "mechanism": "network", "secondary": None}
    del unmeasured["headroom"]
    reports.add("ml", "a-measured", measured)
    reports.add("ml", "b-unmeasured", unmeasured)
    reports.add("ml", "c-unknown", unknown_status())
    code, out, err = run("list", "-n", "ml", "-o", "wide")
    assert code == 0, err
    rows = {r[0]: r for r in _table(out)[1:]}
    assert rows["a-measured"][9] == f"{measured.headroom.high:.1f}x" == "2.4x"
    assert rows["b-unmeasured"][7:10] == ["network", "<none>", "<unknown>"]
    # mechanism, secondary and headroom: nothing to name for Unknown
    assert "<unknown>" not in rows["c-unknown"] and rows["c-unknown"].count("<none>") == 3
    code, out, err = run("show", "b-unmeasured", "-n", "ml")
    assert code == 0, err
    assert "headroom  <unknown>  (no measured wait or GPU busy share bounds it)" in out
