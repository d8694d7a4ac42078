"""When a Job ran, as kube-state-metrics saw it: the first and last ``kube_pod_info`` sample of its pods.

The search must not miss a Job however long the look-back. Sampling an expression at instant points
(every ``lookback / 10000`` seconds) misses a Job that lived between two points, so the search reads
counts over whole intervals instead:

1. one range query of ``count_over_time(kube_pod_info{…}[S])`` at step ``S``, aligned so that the
   evaluation intervals tile the look-back with no gap: every raw sample falls in some interval;
2. the raw samples of the first and of the last interval that held any (instant queries of a range
   selector, which return samples with their own timestamps), so both ends are exact to the sample.

Range functions over raw samples and range-selector instant queries behave alike on Prometheus,
Thanos, Mimir and VictoriaMetrics; no subquery is needed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

from bottleneck_operator.telemetry.errors import InvalidWindow
from bottleneck_operator.telemetry.fetch.client import PrometheusClient
from bottleneck_operator.telemetry.fetch.store import to_float
from bottleneck_operator.telemetry.plan.names import add_matchers, quote, regex_alternation, validate_k8s_name
from bottleneck_operator.telemetry.plan.selectors import duration, sel

__all__ = ["DEFAULT_LOOKBACK", "MAX_INTERVALS", "coarse_step", "job_lifetime"]

DEFAULT_LOOKBACK = 7 * 86400.0
# Below Prometheus's limit of 11,000 points per series in one range query.
MAX_INTERVALS = 10_000


def coarse_step(lookback: float) -> int:
    """Seconds per counting interval of the first search query (whole seconds, at least one)."""
    return max(1, math.ceil(lookback / MAX_INTERVALS))


def job_lifetime(
    client: PrometheusClient,
    namespace: str,
    job: str,
    *,
    lookback: float = DEFAULT_LOOKBACK,
    now: float | None = None,
    matchers: Sequence[str] = (),
) -> tuple[float, float] | None:
    """First and last time kube_pod_info shows the Job's pods (owner labels, else the name prefix).

    Args:
        client: the Prometheus client.
        namespace: the Job's namespace.
        job: the Job's name.
        lookback: how far back from ``now`` to search, seconds.
        now: the search's end (default: the current time).
        matchers: validated extra matchers on every selector (``selector_matchers``).

    Returns:
        (first, last) raw sample times, or None when Prometheus holds no sample of the Job's pods
        in the look-back.

    Raises:
        InvalidName: invalid namespace or Job name.
        InvalidWindow: a look-back or time that is not a positive finite number.
        PrometheusUnavailable / QueryRejected: as for any query.
    """
    validate_k8s_name("namespace", namespace)
    validate_k8s_name("job", job)
    end = time.time() if now is None else float(now)
    if not (math.isfinite(lookback) and lookback > 0 and math.isfinite(end)):
        raise InvalidWindow(f"invalid lookback {lookback} or time {end}")
    selectors = lifetime_selectors(namespace, job, matchers)
    step = coarse_step(lookback)
    count = math.ceil(lookback / step)
    # Evaluation times end, end - S, …: each counts the samples of the S seconds before it, so the
    # intervals tile [end - count·S, end] and every sample of the look-back is counted somewhere.
    first_point = end - (count - 1) * step
    presence = " or ".join(f"count_over_time({s}[{duration(step)}])" for s in selectors)
    hits = [t for row in client.query_range(presence, first_point, end, step) for t in _times_with_samples(row)]
    if not hits:
        return None
    earliest, latest = min(hits), max(hits)
    low = end - count * step
    first = _sample_times(client, selectors, earliest, step)
    last = first if latest == earliest else _sample_times(client, selectors, latest, step)
    inside = [t for t in first if t >= low]
    if not inside or not last:
        return None  # the samples went between the two queries (retention ran out): nothing to say
    return min(inside), max(last)


def _times_with_samples(row: object) -> Iterable[float]:
    values = row.get("values", []) if isinstance(row, dict) else []
    for point in values:
        if isinstance(point, list | tuple) and len(point) == 2 and to_float(point[1]) > 0:
            yield float(point[0])


def _sample_times(client: PrometheusClient, selectors: Iterable[str], at: float, step: int) -> list[float]:
    """Timestamps of every raw sample in the ``step`` seconds up to ``at``, over all the selectors."""
    times: list[float] = []
    for selector in selectors:
        for row in client.query(f"{selector}[{duration(step)}]", at):
            values = row.get("values", []) if isinstance(row, dict) else []
            times += [float(p[0]) for p in values if isinstance(p, list | tuple) and len(p) == 2]
    return times


def lifetime_selectors(namespace: str, job: str, matchers: Sequence[str] = ()) -> tuple[str, str]:
    """The two selectors of one Job's kube_pod_info series: by owner labels, and by name prefix.

    kube-state-metrics writes "<none>" for an ownerless pod; relabelling may drop the label (= "").
    """
    owned = sel(
        "kube_pod_info", f"namespace={quote(namespace)}", 'created_by_kind="Job"', f"created_by_name={quote(job)}"
    )
    orphan = sel(
        "kube_pod_info",
        f"namespace={quote(namespace)}",
        f"pod=~{quote(regex_alternation([job], suffix='-.+'))}",
        'created_by_name=~"|<none>"',
    )
    return add_matchers(owned, matchers), add_matchers(orphan, matchers)
