"""A discrete-event timeline of training steps: loader workers, the copy, compute and comm streams.

Each simulated pod stands for one of its ranks. Per step ``k``:

- loader worker ``k mod W`` may start batch ``k`` once batch ``k - W * prefetch`` has been taken
  (the bounded prefetch queue); it reads (its own request latencies, and the rank's share of the
  storage as a FIFO server), then decodes, then stalls on any major faults;
- the main thread takes batch ``k`` when it is ready and the previous step has ended (the loss is
  read back every step), does its host work (gathers), and the batch is copied to the GPU;
- the compute stream runs the forward and backward groups; a group cannot run kernels faster than
  the main thread issues them; collectives run on one comm stream shared by all ranks and start
  when every rank has asked for them (DDP buckets after each backward group, FSDP gathers ahead of
  each group and reduce-scatters after, all-to-all inside MoE/embedding groups);
- the optimizer runs when the last collective is done; the step ends with it.

After a warm-up the last steps are recorded as intervals with activity levels, the raw material
of every GPU signal (:mod:`.profile`); the loader's time shares feed the host signals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bottleneck_operator_dev.familyag.links import NCCL_SM_SHARE, Collective, CommCosts
from bottleneck_operator_dev.familyag.stages import Group, PodCosts, StepCosts

Interval = tuple[float, float, float]


@dataclass
class Trace:
    """What one pod's GPU did over the recorded steps: channel -> intervals (start, end, level)."""

    start: float = 0.0
    end: float = 0.0
    steps: int = 0
    spans: dict[str, list[Interval]] = field(default_factory=dict)

    def add(self, channel: str, start: float, end: float, level: float) -> None:
        if end > start and level > 0.0:
            self.spans.setdefault(channel, []).append((start, end, level))


@dataclass
class Shares:
    """Time one pod's rank spent in each host state over the recorded steps (seconds, summed)."""

    read: float = 0.0
    decode: float = 0.0
    fault: float = 0.0
    main: float = 0.0
    starved: float = 0.0


@dataclass(frozen=True)
class Run:
    """One simulated run: the mean step time and, when recorded, each pod's trace and host shares."""

    step_s: float
    traces: tuple[Trace, ...]
    shares: tuple[Shares, ...]


def _comm(traces: list[Trace] | None, op: Collective, start: float, comm: CommCosts, per_node: int) -> float:
    """Run one collective on the shared comm stream from ``start``; record it; return its end."""
    end = start + op.seconds
    if traces is not None and op.seconds > 0.0:
        dur = op.seconds
        link = "nvl" if comm.nvlink else "p2p"
        for tr in traces:
            tr.add("busy_c", start, end, 1.0)
            tr.add("sm_c", start, end, NCCL_SM_SHARE)
            tr.add(link, start, end, op.intra / dur)
            tr.add("fabric", start, end, op.node / dur)
            tr.add("gdr", start, end, op.node / per_node / dur)
    return end


def _group(pc: PodCosts, g: Group, gpu: float, cpu: float, gate: float, tr: Trace | None) -> tuple[float, float]:
    """Run a compute group on one pod: returns (gpu_end, cpu_after_issuing)."""
    issue = g.kernels * pc.launch_s
    first = issue / g.kernels if g.kernels else 0.0
    start = max(gpu, cpu + first, gate)
    end = max(start + g.busy, cpu + issue + (g.busy / g.kernels if g.kernels else 0.0))
    if tr is not None and end > start:
        share = g.busy / (end - start)
        tr.add("busy_k", start, end, share)
        tr.add("sm", start, end, share * g.sm)
        tr.add("occ", start, end, share * g.occ)
        tr.add("tensor", start, end, share * g.tensor)
        tr.add("dram", start, end, share * g.dram)
        tr.add("fp16", start, end, share * g.fp16)
        tr.add("fp32", start, end, share * g.fp32)
    return end, cpu + issue


class _Step:
    """One step's GPU side for all pods, given when each took its batch."""

    def __init__(self, costs: StepCosts, per_node: int, traces: list[Trace] | None) -> None:
        self.costs, self.per_node, self.traces = costs, per_node, traces
        self.comm_free = 0.0

    def _trace(self, p: int) -> Trace | None:
        return self.traces[p] if self.traces is not None else None

    def _collect(self, op: Collective, ready: float) -> float:
        start = max(self.comm_free, ready)
        self.comm_free = _comm(self.traces, op, start, self.costs.comm, self.per_node)
        return self.comm_free

    def _pass(self, groups: tuple[int, ...], forward: bool, gpu: list[float], cpu: list[float]) -> None:
        comm, pods = self.costs.comm, self.costs.pods
        last = len(groups) - 1
        for i, gi in enumerate(groups):
            gate = self._collect(comm.gather, max(cpu)) if comm.kind == "fsdp" else 0.0
            inner = comm.kind == "moe" or (
                comm.kind == "embed" and ((forward and i == 0) or (not forward and i == last))
            )
            for p, pc in enumerate(pods):
                g = pc.fwd[gi] if forward else pc.bwd[gi]
                part = _half(g) if inner else g
                gpu[p], cpu[p] = _group(pc, part, gpu[p], cpu[p], gate, self._trace(p))
            if inner:
                done = self._collect(comm.a2a, max(gpu))
                for p, pc in enumerate(pods):
                    g = pc.fwd[gi] if forward else pc.bwd[gi]
                    gpu[p], cpu[p] = _group(pc, _half(g), gpu[p], cpu[p], done, self._trace(p))
            if not forward:
                op = comm.scatter if comm.kind == "fsdp" else comm.bucket
                self._collect(op, max(gpu))

    def run(self, taken: list[float]) -> list[float]:
        """Simulate the step; ``taken[p]`` is when pod ``p``'s main thread took its batch; returns step ends."""
        pods = self.costs.pods
        cpu = [t + pc.host.host_s + pc.host.copy_cpu for t, pc in zip(taken, pods, strict=True)]
        gpu = [t + pc.host.host_s + pc.host.copy_s for t, pc in zip(taken, pods, strict=True)]
        for p, pc in enumerate(pods):
            tr = self._trace(p)
            if tr is not None and pc.host.copy_s > 0.0:
                t0 = taken[p] + pc.host.host_s
                tr.add("h2d", t0, gpu[p], pc.host.h2d_bytes / pc.host.copy_s)
        self.comm_free = max(self.comm_free, min(taken))
        self._pass((0, 1), True, gpu, cpu)
        self._pass((2, 1, 0), False, gpu, cpu)
        ends = []
        for p, pc in enumerate(pods):
            end, _ = _group(pc, pc.opt, max(gpu[p], self.comm_free), cpu[p], 0.0, self._trace(p))
            ends.append(end)
        return ends


def _half(g: Group) -> Group:
    return Group(g.kernels / 2.0, g.busy / 2.0, g.tensor, g.dram, g.sm, g.occ, g.fp16, g.fp32)


def _loader_step(pc: PodCosts, k: int, state: tuple[list[float], list[float], list[float]], sh: Shares | None) -> float:
    """Produce batch ``k`` on one pod's loader; returns when it is ready. ``state``: worker free, server free, taken."""
    free, server, taken = state
    hc = pc.host
    w = k % hc.workers
    depth = hc.workers * hc.prefetch
    start = max(free[w], taken[k - depth] if k >= depth else 0.0)
    served = max(start, server[0]) + hc.server_s
    server[0] = served
    read_end = max(served, start + hc.read_s)
    done = read_end + hc.decode_s + hc.fault_s
    free[w] = done
    if sh is not None:
        sh.read += read_end - start
        sh.decode += hc.decode_s
        sh.fault += hc.fault_s
    return done


class _Steady:
    """Notices when an unrecorded run has settled: the last ``workers + 1`` steps took the same time.

    A loader whose workers finish together delivers bursts of ``workers`` batches, so a settled
    run must show one duration over more than a burst; then that duration is the mean step time.
    """

    def __init__(self, workers: int) -> None:
        self.need, self.count, self.last, self.prev_end = workers + 1, 0, -1.0, 0.0

    def settled(self, end: float) -> bool:
        step, self.prev_end = end - self.prev_end, end
        same = abs(step - self.last) <= 1e-9 * max(step, 1e-12)
        self.count = self.count + 1 if same else 0
        self.last = step
        return self.count >= self.need


def simulate(costs: StepCosts, per_node: int, record: bool = False) -> Run:
    """Run the steps; the mean step time comes from the recorded (last) steps.

    Args:
        costs: the stage costs of every simulated pod.
        per_node: GPUs per pod (a node's share of fabric traffic per GPU).
        record: keep the traces and host shares of the recorded steps (an unrecorded run may stop
            early, once it has settled).

    Returns:
        The run.
    """
    pods = costs.pods
    hc = pods[0].host
    warm, kept = min(hc.workers * hc.prefetch, 32) + 4, max(hc.workers, 4)
    states: list[tuple[list[float], list[float], list[float]]] = [([0.0] * hc.workers, [0.0], []) for _ in pods]
    traces = [Trace() for _ in pods] if record else None
    shares = [Shares() for _ in pods]
    stepper, watch = _Step(costs, per_node, None), _Steady(hc.workers)
    ends = [0.0] * len(pods)
    mark = 0.0
    for k in range(warm + kept):
        if k == warm:
            mark = max(ends)
            stepper.traces = traces
        on = k >= warm
        ready = [_loader_step(pc, k, states[p], shares[p] if on else None) for p, pc in enumerate(pods)]
        taken = [max(e, r) for e, r in zip(ends, ready, strict=True)]
        for p, st in enumerate(states):
            st[2].append(taken[p])
            if on:
                shares[p].starved += taken[p] - ends[p]
                shares[p].main += _main_busy(pods[p])
        ends = stepper.run(taken)
        if not record and watch.settled(max(ends)):
            return Run(watch.last, (), ())
    period = max(ends) - mark
    if traces is not None:
        for tr in traces:
            tr.start, tr.end, tr.steps = mark, max(ends), kept
    return Run(period / kept, tuple(traces or ()), tuple(shares) if record else ())


def _main_busy(pc: PodCosts) -> float:
    """Main-thread seconds of one step: host work, a pageable copy, issuing every kernel."""
    kernels = sum(g.kernels for g in pc.fwd) + sum(g.kernels for g in pc.bwd) + pc.opt.kernels
    return pc.host.host_s + pc.host.copy_cpu + kernels * pc.launch_s
