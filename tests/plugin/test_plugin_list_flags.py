"""`kubectl bottleneck list` -l/--selector, --sort-by and -w/--watch, as kubectl get's."""

from __future__ import annotations

import json
import threading
import time

import pytest
from _plugin_support import Reports, Run, io_status, unknown_status

from bottleneck_operator.kube.selectors import Requirement, SelectorError, matches, parse_selector
from bottleneck_operator.plugin.listing import field_path
from bottleneck_operator_dev.demo.cluster import REPORTS


def _names(out: str) -> list[str]:
    return [line.split()[0] for line in out.strip().splitlines()[1:]]


def _labelled(reports: Reports) -> None:
    for name, team, confidence in (("a", "vision", 0.5), ("b", "speech", 0.9), ("c", "vision", 0.7)):
        status = io_status().model_copy(update={"confidence": confidence})
        reports.add("ml", name, status)
        reports.cluster.patch(REPORTS, "ml", name, {"metadata": {"labels": {"team": team}}})
    reports.add("ml", "unlabelled", unknown_status())


def test_selector_filters_as_kubectl(reports: Reports, run: Run) -> None:
    _labelled(reports)
    code, out, err = run("list", "-n", "ml", "-l", "team=vision")
    assert code == 0, err
    assert _names(out) == ["a", "c"]
    code, out, _ = run("list", "-n", "ml", "--selector", "team!=vision")
    assert _names(out) == ["b", "unlabelled"]  # != also matches objects without the label
    code, out, _ = run("list", "-n", "ml", "-l", "team in (speech, other),team")
    assert _names(out) == ["b"]
    code, out, _ = run("list", "-n", "ml", "-l", "!team")
    assert _names(out) == ["unlabelled"]
    code, out, err = run("list", "-n", "ml", "-l", "team=nobody")
    assert code == 0 and out == "" and "No resources found in ml namespace." in err


def test_a_bad_selector_is_one_error_line(reports: Reports, run: Run) -> None:
    code, out, err = run("list", "-n", "ml", "-l", "team==")
    assert code == 0, err  # an empty value is valid: team equals ""
    code, out, err = run("list", "-n", "ml", "-l", "team in vision")
    assert code == 1 and out == ""
    assert err.startswith("error: unable to parse requirement") and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ("a=1,b", {"a": "1", "b": ""}, True),
        ("a=1,b", {"a": "1"}, False),
        ("a notin (1,2)", {"a": "3"}, True),
        ("a notin (1,2)", {"a": "2"}, False),
        ("example.com/tier==gpu", {"example.com/tier": "gpu"}, True),
    ],
)
def test_selector_semantics(text: str, labels: dict[str, str], expected: bool) -> None:
    assert matches(parse_selector(text), labels) is expected


def test_selector_parsing_keeps_set_commas_together() -> None:
    assert parse_selector("x in (a,b),y") == (Requirement("x", "in", ("a", "b")), Requirement("y", "exists"))
    with pytest.raises(SelectorError):
        parse_selector("x=(a")


def test_sort_by_numbers_and_text(reports: Reports, run: Run) -> None:
    _labelled(reports)
    code, out, err = run("list", "-n", "ml", "--sort-by", ".status.confidence")
    assert code == 0, err
    assert _names(out) == ["unlabelled", "a", "c", "b"]  # 0.0, 0.5, 0.7, 0.9
    code, out, _ = run("list", "-n", "ml", "--sort-by", "{.metadata.labels.team}")
    assert _names(out)[0] == "unlabelled" and _names(out)[1] == "b"  # no label first, then speech < vision
    code, out, _ = run("list", "-n", "ml", "-o", "json", "--sort-by", ".status.confidence")
    assert [i["metadata"]["name"] for i in json.loads(out)["items"]] == ["unlabelled", "a", "c", "b"]


def test_sort_by_errors_as_kubectl(reports: Reports, run: Run) -> None:
    _labelled(reports)
    code, _, err = run("list", "-n", "ml", "--sort-by", ".status.noSuchField")
    assert code == 1 and "couldn't find any field with path" in err
    assert field_path("{.status.pods[0]['pod']}") == ["status", "pods", 0, "pod"]


def test_watch_prints_changes_after_the_table(reports: Reports, run: Run) -> None:
    reports.add("ml", "first", io_status())

    def change() -> None:
        time.sleep(1.5)
        reports.add("ml", "second", unknown_status())
        reports.cluster.patch(REPORTS, "ml", "first", {"status": {"phase": "Failed"}}, sub="status")
        reports.add("other", "elsewhere", io_status())  # another namespace: not shown

    changer = threading.Thread(target=change)
    changer.start()
    code, out, err = run("list", "-n", "ml", "-w", "--request-timeout", "4s")
    changer.join()
    assert code == 0, err
    lines = out.strip().splitlines()
    assert lines[0].split()[:3] == ["NAME", "JOB", "BOTTLENECK"]
    assert lines[1].split()[:6] == ["first", "first", "IO", "87%", "31%", "Completed"]
    later = [line.split() for line in lines[2:]]
    # "second" is created, then its status written: two changes, as kubectl prints them. The watch's
    # replay of "first" is not printed again, and other namespaces stay out.
    assert [row[0] for row in later] == ["second", "second", "first"]
    assert later[1][:3] == ["second", "second", "Unknown"]
    assert later[2][5] == "Failed"


def test_request_timeout_takes_kubectl_durations(reports: Reports, run: Run) -> None:
    code, _, err = run("list", "-w", "--request-timeout", "soon")
    assert code == 1 and "invalid duration" in err
    started = time.monotonic()
    code, _, err = run("list", "-n", "ml", "-w", "--request-timeout", "0.02m")  # 1.2 s
    assert code == 0, err
    assert 1.0 <= time.monotonic() - started < 10
