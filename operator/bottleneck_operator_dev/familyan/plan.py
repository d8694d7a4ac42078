"""One Job's draw: its workload on its cluster, the memory limit and any neighbour, and its regimes' stage times."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import Bottleneck
from bottleneck_operator_dev.familyan.catalogue import DRAWS, draw_kind
from bottleneck_operator_dev.familyan.cluster import draw_cluster
from bottleneck_operator_dev.familyan.physics import Plan, memory_stall_share, power_clock, stage_times
from bottleneck_operator_dev.familyan.stages import StageTimes
from bottleneck_operator_dev.familyan.timeline import Regime, RunFacts, Timeline
from bottleneck_operator_dev.familyan.workloads import GB, _u


def draw_plan(rng: np.random.Generator, intent: Bottleneck) -> Plan:
    """A workload kind, its cluster, its demands, the pod's memory limit and a would-be neighbour."""
    kind = draw_kind(rng, intent)
    cluster = draw_cluster(rng, kind, intent)
    workload = DRAWS[kind](rng, cluster.board, intent, cluster.gpus, cluster.per_node)
    need = workload.host_mem * cluster.per_node
    r = rng.random()
    if intent is Bottleneck.MEMORY and r < 0.5:
        factor = _u(rng, 0.75, 0.97)  # a limit below what the run needs: reclaim, refaults, swap
    elif r < 0.05:
        factor = _u(rng, 0.95, 1.02)
    else:
        factor = _u(rng, 1.2, 3.0)
    mem_limit = need * factor
    busy_nb = intent in (Bottleneck.CPU, Bottleneck.IO)
    return Plan(
        workload=workload,
        cluster=cluster,
        mem_limit=mem_limit,
        page_cache=max(cluster.node_mem - mem_limit - 16 * GB, 0.0) * _u(rng, 0.5, 0.9),
        neighbour_cores=cluster.node_cpus * _u(rng, 0.4 if busy_nb else 0.1, 0.9 if busy_nb else 0.5),
        neighbour_io=_u(rng, 0.2, 0.7),
        neighbour_net=_u(rng, 0.2, 3.0) * GB,
        neighbour_mem=cluster.node_mem * _u(rng, 0.05, 0.4),
    )


def run_facts(plan: Plan) -> RunFacts:
    """The nominal steady step, the first epoch's length and a checkpoint's, for the timeline."""
    st = stage_times(plan, Regime("steady"), 0, 1.0)
    w, c = plan.workload, plan.cluster
    step = max(st.step, 1e-3)
    per_node = w.input_bytes * c.per_node / step
    # a first epoch is a phase of its own only when later epochs are served from the page cache
    warms = plan.hit_ratio(Regime("steady"), 1) > 0.5
    cold = w.dataset_bytes / c.nodes / per_node if per_node > 0 and warms else float("inf")
    write = c.storage.bandwidth * c.storage_share * 0.5
    ckpt = w.ckpt_bytes * c.per_node / write + 5.0
    return RunFacts(step=step, cold_epoch=cold, ckpt=ckpt, nodes=c.nodes)


@dataclass(frozen=True)
class RegimeStages:
    """Each regime's per-pod stage times, the Job's step time in it, and each pod's clock factor."""

    pods: list[list[StageTimes]]
    steps: list[float]
    clocks: list[list[float]]


def regime_stages(plan: Plan, tl: Timeline, facts: RunFacts) -> RegimeStages:
    """Stage times per regime and pod: power limits lower the clock of busy boards, a straggler's GPUs run slowed."""
    c = plan.cluster
    stall = memory_stall_share(plan)
    out = RegimeStages([], [], [])
    for regime in tl.regimes:
        pods, clocks = [], []
        for node in range(c.nodes):
            base = tl.straggler_clock if regime.straggler and node == tl.straggler_node else 1.0
            base *= 1.0 - c.clock_spread  # the slowest board of the pod sets its pace
            first = stage_times(plan, regime, node, base)
            busy = first.kernels / first.step if first.step > 0 else 0.0
            clock = base * power_clock(plan, busy) if first.pause == 0 else 1.0
            st = stage_times(plan, regime, node, clock)
            if stall > 0 and st.pause == 0:
                st = stage_times(plan, regime, node, clock, stall / (1 - stall) * st.step)
            pods.append(st)
            clocks.append(clock)
        out.pods.append(pods)
        out.clocks.append(clocks)
        pause = pods[0].pause > 0
        out.steps.append(facts.ckpt if pause else max(p.step for p in pods))
    return out
