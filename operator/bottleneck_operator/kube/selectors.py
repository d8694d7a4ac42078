"""Label selectors written as kubectl takes them (``-l app=x,tier!=db,env in (a,b),!legacy``).

A selector is parsed once into requirements: they are sent to the API server (lightkube encodes
them back into ``labelSelector``) and can match objects locally too, so a list that an older or
partial API server did not filter is still filtered as kubectl's user expects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lightkube import operators

from bottleneck_operator.kube.errors import ApiRejected

# A label key: an optional DNS-subdomain prefix and a name of up to 63 characters.
_KEY = r"(?:[a-z0-9](?:[-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_VALUE = r"(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?"
_SET = re.compile(rf"^({_KEY})\s+(in|notin)\s+\(\s*({_VALUE}(?:\s*,\s*{_VALUE})*)\s*\)$")
_EQUALITY = re.compile(rf"^({_KEY})\s*(==|=|!=)\s*({_VALUE})$")
_EXISTS = re.compile(rf"^(!?)\s*({_KEY})$")


class SelectorError(ApiRejected):
    """The selector is not valid kubectl syntax (kubectl refuses it before any request)."""


@dataclass(frozen=True)
class Requirement:
    """One requirement: ``op`` is one of ``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, Any]) -> bool:
        """Whether an object with these labels meets the requirement (Kubernetes' semantics)."""
        present = self.key in labels
        value = str(labels.get(self.key, ""))
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        return not present or value not in self.values  # != and notin match objects without the key


def _split(text: str) -> list[str]:
    """Comma-separated terms, keeping the commas inside ``in (a,b)`` with their term."""
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t.strip() for t in terms]


def parse_selector(text: str) -> tuple[Requirement, ...]:
    """Parse a selector; :class:`SelectorError` with kubectl's wording when it is not valid."""
    if not text.strip():
        return ()
    out: list[Requirement] = []
    for term in _split(text):
        if m := _SET.match(term):
            values = tuple(v.strip() for v in m.group(3).split(","))
            out.append(Requirement(m.group(1), m.group(2), values))
        elif m := _EQUALITY.match(term):
            out.append(Requirement(m.group(1), "!=" if m.group(2) == "!=" else "=", (m.group(3),)))
        elif m := _EXISTS.match(term):
            out.append(Requirement(m.group(2), "!" if m.group(1) else "exists"))
        else:
            raise SelectorError(f'unable to parse requirement: "{term}" in the selector "{text}"')
    return tuple(out)


def matches(requirements: tuple[Requirement, ...], labels: Mapping[str, Any] | None) -> bool:
    """Whether labels meet every requirement."""
    return all(r.matches(labels or {}) for r in requirements)


def _operator(r: Requirement) -> Any:
    if r.op == "=":
        return operators.equal(r.values[0])
    if r.op == "!=":
        return operators.not_equal(r.values[0])
    if r.op == "in":
        return operators.in_(list(r.values))
    if r.op == "notin":
        return operators.not_in(list(r.values))
    return operators.exists() if r.op == "exists" else operators.not_exists()


def lightkube_labels(requirements: tuple[Requirement, ...]) -> dict[str, Any]:
    """The requirements as lightkube's ``labels=`` argument (kept inside this package).

    lightkube takes one requirement per key: a second one on the same key (``a!=x,a!=y``) is left
    to the local match.
    """
    out: dict[str, Any] = {}
    for r in requirements:
        out.setdefault(r.key, _operator(r))
    return out
