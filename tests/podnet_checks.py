"""The two properties of the pod's own network bytes (``sc_net_rx_bps``, ``sc_net_tx_bps``) that every
simulated world checks alike.

- They come with the collector: on exactly the pods that carry it (``sc_cpu_cores``), sample by sample
  on the window's timestamps, never infinite or negative, never NaN throughout.
- The pods on a node add up to at most the node's count (``node_net_rx_bps``, ``node_net_tx_bps``),
  which adds the neighbours', the daemons' and any other Job's traffic. Each world's exporters time
  their scrapes in their own way, so each test module picks the statistic over the window and the
  tolerance (and says why), and leaves out the windows its bound does not hold for (RDMA's bytes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from typing import Any

import numpy as np

from bottleneck_operator.contract.signals import Family
from bottleneck_operator.contract.window import FloatArray, JobWindow, PodWindow

POD_NET = ("sc_net_rx_bps", "sc_net_tx_bps")
WAYS = ("rx", "tx")

Statistic = Callable[[FloatArray], Any]
"""A statistic over a window's samples: ``np.median``, ``np.mean``, ``np.max``."""

NodeKey = Callable[[JobWindow, int, PodWindow], Hashable]
"""What groups a window's pods into nodes, from the window, the pod's index in it and the pod."""


def by_node_name(window: JobWindow, index: int, pod: PodWindow) -> Hashable:
    """The pods on the node of the same name."""
    return pod.node


def by_pod(window: JobWindow, index: int, pod: PodWindow) -> Hashable:
    """Each pod alone against its node's count."""
    return index


def assert_carried_with_the_collector(windows: Iterable[JobWindow], *, families: bool, finite: float = 0.0) -> int:
    """Check that both signals sit on exactly the pods that carry the collector, with the window's
    timestamps' shape, never infinite or negative, and finite on more than ``finite`` of the samples
    (the default: on at least one). With ``families``, the window's quality families also say where
    it ran: ``Family.SIDECAR`` and ``Family.SIDECAR_NET`` both when every pod carries the collector,
    neither when none does. Returns the pods that carry it.
    """
    pods = 0
    for w in windows:
        collector = Family.SIDECAR in w.quality.families
        if families:
            assert (Family.SIDECAR_NET in w.quality.families) == collector, w.job
        for p in w.pods:
            carried = "sc_cpu_cores" in p.signals
            if families:
                assert carried == collector, (w.job, p.pod)
            for name in POD_NET:
                assert (name in p.signals) == carried, (w.job, p.pod, name)
                if not carried:
                    continue
                v = np.asarray(p.signals[name])
                assert v.shape == w.timestamps.shape, (w.job, p.pod, name)
                assert not np.isinf(v).any() and (v[np.isfinite(v)] >= 0.0).all(), (w.job, p.pod, name)
                assert np.isfinite(v).mean() > finite, (w.job, p.pod, name)
            pods += carried
    return pods


def assert_pods_within_their_node(
    windows: Iterable[JobWindow],
    *,
    tolerance: float,
    statistic: Statistic = np.median,
    ratio: bool = False,
    slack: float = 0.0,
    key: NodeKey = by_node_name,
    min_samples: int = 1,
    skip_short: bool = False,
) -> int:
    """Check, for each way (rx, tx) and each node, the pods' own bytes summed against the node's count.

    The pods that carry both the pod's and the node's signal are grouped by ``key`` (by default the
    node's name; ``by_pod`` compares each pod alone), and compared on the timestamps where the sum and
    the node's count are both finite: ``statistic(sum) <= (1 + tolerance) * statistic(node) + slack``,
    or with ``ratio`` ``statistic(sum / node) <= 1 + tolerance``. A node with fewer than
    ``min_samples`` such timestamps fails, or with ``skip_short`` is left out. Returns the (node, way)
    pairs checked.
    """
    checked = 0
    for w in windows:
        for way in WAYS:
            own_name, node_name = f"sc_net_{way}_bps", f"node_net_{way}_bps"
            nodes: dict[Hashable, list[PodWindow]] = defaultdict(list)
            for i, p in enumerate(w.pods):
                if own_name in p.signals and node_name in p.signals:
                    nodes[key(w, i, p)].append(p)
            for node, pods in nodes.items():
                own = np.sum([np.asarray(p.signals[own_name]) for p in pods], axis=0)
                count = np.asarray(pods[0].signals[node_name])
                ok = np.isfinite(own) & np.isfinite(count)
                if ok.sum() < min_samples:
                    assert skip_short, (w.job, node, way, int(ok.sum()))
                    continue
                if ratio:
                    assert statistic(own[ok] / count[ok]) <= 1 + tolerance, (w.job, node, way)
                else:
                    assert statistic(own[ok]) <= (1 + tolerance) * statistic(count[ok]) + slack, (w.job, node, way)
                checked += 1
    return checked
