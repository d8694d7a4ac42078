"""Kubernetes name validation, PromQL escaping, and the configured extra matchers.

Every value that enters a PromQL label matcher goes through :func:`quote` (for ``=``/``!=``) or
:func:`regex_alternation` / :func:`escape_regex` (for ``=~``/``!~``), whatever its origin: user
input is validated first, but pod and node names read back from Prometheus are escaped too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence

from bottleneck_operator.settings import LabelSettings
from bottleneck_operator.telemetry.errors import InvalidName

# DNS-1123 (Kubernetes apimachinery validation): a label is <= 63 chars of [a-z0-9-], alphanumeric at
# both ends; a subdomain is dot-separated labels, <= 253 chars.
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

# Characters RE2 (Prometheus's regex engine) treats specially; a backslash before punctuation is
# always a literal in RE2, so escaping exactly these keeps the pattern a plain literal.
_RE2_META = frozenset("\\.+*?()|[]{}^$")

# Label names as the Prometheus data model allows them (used for the configurable label settings).
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")


def validate_k8s_name(kind: str, value: str) -> str:
    """Check that a value can be a Kubernetes object name before it is used in a query.

    Namespaces must be DNS-1123 labels (<= 63 chars); Jobs and pods DNS-1123 subdomains
    (<= 253 chars; Jobs are further limited by Kubernetes, which this does not need to enforce).

    Args:
        kind: what the value names ("namespace", "job", "pod", ...), used in the message and to
            pick the rule.
        value: the name.

    Returns:
        The value, unchanged.

    Raises:
        InvalidName: the value is not a valid name of that kind.
    """
    if not isinstance(value, str) or not value:
        raise InvalidName(f"invalid {kind} name {value!r}: must be a non-empty string")
    if kind == "namespace":
        ok = len(value) <= 63 and _DNS1123_LABEL.fullmatch(value) is not None
        rule = "a DNS-1123 label (lower-case letters, digits and '-', at most 63 characters)"
    else:
        ok = len(value) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(value) is not None
        rule = "a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', at most 253 characters)"
    if not ok:
        raise InvalidName(f"invalid {kind} name {value!r}: must be {rule}")
    return value


def validate_label_name(setting: str, value: str) -> str:
    """Check a configured Prometheus label name (e.g. ``dcgm_hostname_label``).

    Args:
        setting: the setting's name, for the message.
        value: the label name.

    Returns:
        The value, unchanged.

    Raises:
        InvalidName: not a valid Prometheus label name.
    """
    if _LABEL_NAME.fullmatch(value) is None:
        raise InvalidName(f"setting {setting}={value!r} is not a valid Prometheus label name")
    return value


def quote(value: str) -> str:
    """A PromQL double-quoted string literal whose content is exactly ``value``.

    PromQL strings use Go's escapes; JSON's (``\\"``, ``\\\\``, ``\\n``, ``\\uXXXX`` for control
    characters) are a subset of them, and non-ASCII characters may stay literal.

    Args:
        value: any string.

    Returns:
        The literal, quotes included, e.g. ``"a\\"b"``.
    """
    return json.dumps(value, ensure_ascii=False)


def escape_regex(value: str) -> str:
    """Escape RE2 metacharacters so that ``value`` matches only itself inside ``=~``.

    The result still has to be put in a string literal with :func:`quote`.

    Args:
        value: any string.

    Returns:
        The regex source.
    """
    return "".join("\\" + ch if ch in _RE2_META else ch for ch in value)


def regex_alternation(values: Iterable[str], *, suffix: str = "") -> str:
    """One regex matching exactly the given literals (each followed by ``suffix``, a regex).

    Prometheus anchors label regexes at both ends. Sorted and deduplicated so that the same set
    always gives the same query; a plain alternation of escaped literals lets Prometheus use its
    set-matching fast path.

    Args:
        values: the literals.
        suffix: regex text appended to every alternative, e.g. ``"-.+"`` for a name prefix.

    Returns:
        The regex source (empty set: a pattern that matches nothing).
    """
    unique = sorted(set(values))
    if not unique:
        # An empty character class never matches; "" or "$^" would match series lacking the label.
        return "[^\\x00-\\x{10FFFF}]"
    return "|".join(escape_regex(v) + suffix for v in unique)


def matcher(label: str, op: str, value: str) -> str:
    """One label matcher with a safely quoted value, e.g. ``pod=~"a|b"``."""
    return f"{label}{op}{quote(value)}"


# The metric name that ends where a selector's brace opens.
_METRIC_BEFORE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*$")

# One label matcher as PromQL writes it: a label name, an operator, a double-quoted string.
_MATCHER = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")\s*')


class ScopedMatcher(str):
    """A label matcher that :func:`add_matchers` adds only to the selectors of some metrics.

    A ``str`` (the matcher as PromQL writes it), so it travels wherever ``selector_matchers`` go;
    ``prefixes`` names the metrics it is for, by the start of their name.
    """

    prefixes: tuple[str, ...]

    def __new__(cls, matcher: str, prefixes: Iterable[str]) -> ScopedMatcher:
        obj = super().__new__(cls, matcher)
        obj.prefixes = tuple(prefixes)
        return obj

    def applies_to(self, metric: str) -> bool:
        return metric.startswith(self.prefixes)


# The metric names of each exporter family (the contract's), by the start of their names.
FAMILY_PREFIXES: Mapping[str, tuple[str, ...]] = {
    "dcgm": ("DCGM_",),
    "node": ("node_",),
    "cadvisor": ("container_",),
    "ksm": ("kube_",),
    "sidecar": ("bottleneck_sidecar_",),
}


def scrape_job_matchers(scrape_jobs: Iterable[tuple[str, Sequence[str]]]) -> tuple[ScopedMatcher, ...]:
    """``job=~"..."`` for each exporter family's series (the ``scrape_jobs`` setting).

    A family with no jobs is read from any job. Only the scrape jobs an administrator configured
    write a family's series: a tenant's own PodMonitor or ServiceMonitor (with ``honorLabels:
    true`` it keeps whatever namespace and pod labels its pods write) is never read for it.

    Args:
        scrape_jobs: (family, job label values) pairs; families are keys of :data:`FAMILY_PREFIXES`.

    Returns:
        One scoped matcher per family with jobs.
    """
    out = []
    for family, jobs in scrape_jobs:
        if jobs:
            out.append(ScopedMatcher(matcher("job", "=~", regex_alternation(jobs)), FAMILY_PREFIXES[family]))
    return tuple(out)


def validate_matchers(setting: str, values: Iterable[str]) -> tuple[str, ...]:
    """Check configured extra matchers (e.g. ``cluster="a"``) and normalise their spacing.

    Args:
        setting: the setting's name, for the message.
        values: one matcher each.

    Returns:
        The matchers as ``label<op>"value"``.

    Raises:
        InvalidName: a value is not exactly one label matcher with a double-quoted value.
    """
    out: list[str] = []
    for value in values:
        if isinstance(value, ScopedMatcher):
            out.append(value)  # built from validated settings; kept with its scope
            continue
        m = _MATCHER.fullmatch(value)
        if m is None:
            raise InvalidName(
                f'setting {setting}: {value!r} is not one label matcher such as cluster="a" or env=~"prod|stage"'
            )
        try:
            literal = json.loads(m.group(3))
        except ValueError as exc:
            raise InvalidName(f"setting {setting}: {value!r} has an invalid string literal") from exc
        out.append(matcher(m.group(1), m.group(2), str(literal)))
    return tuple(out)


def add_matchers(expr: str, matchers: Iterable[str]) -> str:
    """``expr`` with ``matchers`` added to every series selector ``name{...}``.

    String literals are skipped (a regex such as ``\\x{10FFFF}`` holds braces), so only the braces
    that open a selector get the matchers. Every selector the data layer writes has braces.

    Args:
        expr: PromQL built by the data layer.
        matchers: validated matchers (see :func:`validate_matchers`); a :class:`ScopedMatcher` goes
            only to the selectors of its metrics.

    Returns:
        The expression, unchanged when there are no matchers.
    """
    matchers = list(matchers)
    if not matchers:
        return expr
    everywhere = [m for m in matchers if not isinstance(m, ScopedMatcher)]
    scoped = [m for m in matchers if isinstance(m, ScopedMatcher)]
    out: list[str] = []
    in_string, escaped = False, False
    for i, ch in enumerate(expr):
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
            out.append(ch)
        elif ch == "{" and i > 0 and (expr[i - 1].isalnum() or expr[i - 1] in "_:"):
            metric = _METRIC_BEFORE.search(expr, 0, i)
            name = metric.group(0) if metric else ""
            extra = ",".join([*everywhere, *(m for m in scoped if m.applies_to(name))])
            closes = expr[i + 1 : i + 2] == "}"
            out.append("{" + extra + ("" if closes or not extra else ","))
        else:
            out.append(ch)
    return "".join(out)


def with_matchers(configured: LabelSettings) -> LabelSettings:
    """The mapping with its ``selector_matchers`` validated and normalised, and each exporter
    family's series restricted to its configured scrape jobs (``scrape_jobs``).

    Raises:
        InvalidName: a matcher is not one ``label<op>"value"``.
    """
    matchers = validate_matchers("selector_matchers", configured.selector_matchers)
    held = {(m, m.prefixes) for m in matchers if isinstance(m, ScopedMatcher)}  # already applied: idempotent
    scoped = [m for m in scrape_job_matchers(configured.scrape_jobs) if (m, m.prefixes) not in held]
    # model_copy, not validation: validation would turn the ScopedMatchers back into plain strings.
    return configured.model_copy(update={"selector_matchers": (*matchers, *scoped)})
