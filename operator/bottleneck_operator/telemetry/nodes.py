"""node-exporter answers by instance, attached to nodes through node_uname_info, step by step.

Without a node label on node-exporter's series (``node_exporter_node_label``), only
``node_uname_info`` says which ``instance`` is which node. The node queries return one series per
instance and the pass reads ``max by (instance, nodename) (node_uname_info{...})`` once; here each
instance series counts for a node at the steps where node_uname_info pairs them, as the PromQL
join ``* on (instance) group_left (nodename)`` would, and a node's instances (normally one) are
combined with the entry's aggregation. Doing this in PromQL cost Prometheus a new label set per
series and step: most of the time of the node queries on a large cluster.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from bottleneck_operator.contract.window import FloatArray
from bottleneck_operator.telemetry import alignment as al
from bottleneck_operator.telemetry import catalog as cat
from bottleneck_operator.telemetry.store import MODE_PREFIX, Store


def attach_instances(store: Store) -> None:
    """Move the instance-keyed series of one segment into ``store.node_signals``.

    Args:
        store: the pass's store; its ``instance_signals`` and ``uname`` are emptied.
    """
    parts: dict[tuple[str, str], list[FloatArray]] = defaultdict(list)
    grids: dict[tuple[str, str], al.Chunk] = {}
    for instance, node, presence in store.uname:
        signals = store.instance_signals.get(instance)
        if not signals or not len(presence.idx):
            continue
        paired = np.isfinite(presence.val)
        always = bool(paired.all())  # the usual case: the instance is the node's for the whole segment
        lo, hi = int(presence.idx[0]), int(presence.idx[-1])
        for name, chunks in signals.items():
            for chunk in chunks:
                # Answers of one segment share its grid: the presence row then masks the samples as
                # they are; scatter() lines up anything else.
                same = chunk.idx is presence.idx or np.array_equal(chunk.idx, presence.idx)
                values = chunk.val if same else al.scatter([chunk], lo, hi)
                parts[(node, name)].append(values if always else np.where(paired, values, np.nan))
                grids[(node, name)] = presence
    for (node, name), rows in parts.items():
        how = "sum" if name.startswith(MODE_PREFIX) else cat.MERGE.get(name, "max")
        value = rows[0] if len(rows) == 1 else _combine(rows, how)
        store.node_signals[node][name].append(al.Chunk(grids[(node, name)].idx, value))
    store.uname.clear()
    store.instance_signals.clear()


def _combine(rows: list[FloatArray], how: str) -> FloatArray:
    """A node's instances at each step: their sum or max; NaN where none has a sample."""
    stacked = np.vstack(rows)
    empty = np.isnan(stacked).all(axis=0)
    combined = np.nansum(stacked, axis=0) if how == "sum" else np.fmax.reduce(stacked, axis=0)
    return np.asarray(np.where(empty, np.nan, combined), dtype=np.float64)
