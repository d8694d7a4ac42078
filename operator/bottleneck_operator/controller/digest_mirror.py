"""A finished Job's cluster digest, kept on its report so that the summary outlives the operator.

The ClusterBottleneckSummary is computed over the digests of the last week's Jobs, which the operator
holds in memory (:class:`~bottleneck_operator.analysis.cluster.ClusterBook`). A running Job's digest
comes back with its next analysis; a finished Job is never analysed again. So once a Job's report is
final and its places are known, its digest is written in the report's ``bottleneck.dev/digest``
annotation, and the retention sweep, which lists every report anyway, puts the digests of the week's
finished Jobs back into a new operator's book (a restart, an upgrade, a new leader).

Kept: the verdict, GPUs, seconds, GPU activity, throttling, the stratum, places, first action,
headroom, and the per-GPU (or per-pod) peer summaries that stragglers and suspect GPUs are judged on,
as rows of four significant digits. A Job with more than :data:`MAX_PEERS` peers keeps none (its
stragglers are still named in its report; a restarted operator's summary lists them no more).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from bottleneck_operator.analysis.cluster import JobDigest, PeerSample
from bottleneck_operator.contract.names import DIGEST_ANNOTATION
from bottleneck_operator.controller.lifecycle import annotations_of
from bottleneck_operator.controller.state import OperatorState, logger
from bottleneck_operator.kube.errors import KubeError, NotFound

# Finished Jobs waiting for their digest to be written (kept across passes until it is): at most this
# many, the oldest dropped first, so an API that refuses every write cannot grow the state.
MAX_PENDING = 10_000
_NUMBERS = ("gpus", "seconds", "gpu_active", "throttled", "headroom", "end")
_TEXTS = ("namespace", "name", "kind", "bottleneck", "workload", "action")
# Peers kept on the annotation: a 32-node Job of 8 GPUs each, about 20 KB, well inside the 256 KiB
# the API server allows for all of an object's annotations together.
MAX_PEERS = 256
_PEER_TEXTS = ("pod", "node", "gpu")
_PEER_NUMBERS = ("activity", "clock_mhz", "slowdown", "net_bps", "read_bps", "io_wait")


def encode(d: JobDigest) -> str:
    """The annotation's value: compact JSON of the digest without its peers."""
    body: dict[str, Any] = {k: getattr(d, k) for k in (*_TEXTS, *_NUMBERS) if getattr(d, k) is not None}
    body["locations"] = {dim: list(places) for dim, places in sorted(d.locations.items())}
    if 0 < len(d.peers) <= MAX_PEERS:
        body["peers"] = [_peer_row(p) for p in d.peers]
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _peer_row(p: PeerSample) -> list[str | float | None]:
    """One peer as a row: its texts, then its figures to four significant digits (None where unread)."""
    numbers = [getattr(p, k) for k in _PEER_NUMBERS]
    return [*(getattr(p, k) for k in _PEER_TEXTS), *(None if v is None else float(f"{v:.4g}") for v in numbers)]


def _peer(row: object) -> PeerSample:
    """The peer a row holds (TypeError/ValueError for anything else)."""
    if not isinstance(row, list) or len(row) != len(_PEER_TEXTS) + len(_PEER_NUMBERS) or not isinstance(row[0], str):
        raise TypeError("not a peer row")
    node, gpu = (None if v is None else str(v) for v in row[1:3])
    a, c, s, n, r, w = (None if v is None else float(v) for v in row[3:])
    return PeerSample(row[0], node, gpu, activity=a, clock_mhz=c, slowdown=s, net_bps=n, read_bps=r, io_wait=w)


def decode(text: object) -> JobDigest | None:
    """The digest an annotation holds; None for anything that is not one (hand-edited, truncated)."""
    if not isinstance(text, str):
        return None
    try:
        body = json.loads(text)
        texts = {k: str(body[k]) for k in _TEXTS if body.get(k) is not None}
        numbers = {k: float(body[k]) for k in _NUMBERS if body.get(k) is not None}
        locations = {str(k): tuple(str(p) for p in v) for k, v in (body.get("locations") or {}).items()}
        return JobDigest(
            namespace=texts["namespace"],
            name=texts["name"],
            bottleneck=texts["bottleneck"],
            kind=texts.get("kind", "Job"),
            workload=texts.get("workload", ""),
            action=texts.get("action"),
            gpus=int(numbers.get("gpus", 0)),
            seconds=numbers.get("seconds", 0.0),
            gpu_active=numbers.get("gpu_active"),
            throttled=numbers.get("throttled"),
            headroom=numbers.get("headroom"),
            end=numbers.get("end", 0.0),
            locations=locations,
            peers=tuple(_peer(row) for row in body.get("peers") or ()),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def note_finalised(state: OperatorState, key: tuple[str, str, str], namespace: str, report: str) -> None:
    """Remember that this Job's report became final: its digest is written after the pass places it."""
    pending = state.digests_to_write
    pending.pop(key, None)
    pending[key] = (namespace, report)
    while len(pending) > MAX_PENDING:
        del pending[next(iter(pending))]


async def write_pending(state: OperatorState) -> int:
    """Write the digests of the Jobs finalised since the last call on their reports; returns how many.

    One that fails for a passing reason stays pending for the next pass; one whose report or digest
    is gone is dropped.
    """
    written = 0
    for key, (namespace, report) in list(state.digests_to_write.items()):
        digest = state.cluster.get(key)
        if digest is None:
            del state.digests_to_write[key]
            continue
        patch = {"metadata": {"annotations": {DIGEST_ANNOTATION: encode(digest)}}}
        try:
            await state.api.patch(namespace, report, patch)
        except NotFound:
            pass
        except KubeError as exc:
            logger.warning("%s/%s: cannot keep the Job's digest on its report: %s", namespace, report, exc)
            continue
        else:
            written += 1
        del state.digests_to_write[key]
    return written


def restore(state: OperatorState, items: Iterable[Mapping[str, Any]]) -> int:
    """Put the digests that listed reports carry back into the book (those it lacks, of the lookback)."""
    digests = []
    for item in items:
        if (d := decode(annotations_of(item).get(DIGEST_ANNOTATION))) is not None:
            digests.append(d)
    return state.cluster.restore(digests, state.clock()) if digests else 0
