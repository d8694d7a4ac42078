"""One RFC 3339 parser: the forms Kubernetes and users write, the ones refused, and no other parser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bottleneck_operator.contract.times import clock, parse_rfc3339, parse_rfc3339_or_none, rfc3339

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "bottleneck_operator"
# 2026-01-01T10:00:00Z as unix seconds, worked out by hand: 56 years of 365 days, 14 leap days.
NEW_YEAR_10H = (56 * 365 + 14) * 86400 + 10 * 3600


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2026-01-01T10:00:00Z", NEW_YEAR_10H),  # as Kubernetes writes times
        ("2026-01-01T10:00:00.250000Z", NEW_YEAR_10H + 0.25),  # a Lease's MicroTime
        ("2026-01-01T12:00:00+02:00", NEW_YEAR_10H),
        ("2026-01-01T05:30:00-04:30", NEW_YEAR_10H),
        ("2026-01-01t10:00:00z", NEW_YEAR_10H),  # RFC 3339 allows lower case
        (" 2026-01-01T10:00:00Z\n", NEW_YEAR_10H),
    ],
)
def test_the_forms_read(text: str, seconds: float) -> None:
    assert parse_rfc3339(text) == seconds


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2026-01-01T10:00:00", "time zone"),  # read in local time, it would shift by hours
        ("yesterday", "not an RFC 3339 time"),
        ("", "not an RFC 3339 time"),
        ("2026-13-01T10:00:00Z", "not an RFC 3339 time"),
    ],
)
def test_the_forms_refused(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_rfc3339(text)
    assert parse_rfc3339_or_none(text) is None


def test_absent_values_from_an_api_object_are_none() -> None:
    assert parse_rfc3339_or_none(None) is None and parse_rfc3339_or_none(12) is None
    assert parse_rfc3339_or_none("2026-01-01T10:00:00Z") == NEW_YEAR_10H


def test_writing_and_reading_round_trip() -> None:
    assert rfc3339(NEW_YEAR_10H) == "2026-01-01T10:00:00Z"
    assert parse_rfc3339(rfc3339(NEW_YEAR_10H + 59)) == NEW_YEAR_10H + 59
    assert clock(NEW_YEAR_10H + 61) == "10:01:01"


def test_no_other_module_parses_times() -> None:
    parsers = re.compile(r"\b(fromisoformat|strptime)\b")
    found = [
        f"{path.relative_to(PACKAGE).as_posix()}:{n}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix() != "contract/times.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if parsers.search(line)
    ]
    assert not found, "parse times with contract.times.parse_rfc3339:\n" + "\n".join(found)
