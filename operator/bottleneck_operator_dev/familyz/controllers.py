"""The node's feedback controllers, each as its documentation describes it, in closed form per tick.

Every function works on arrays of lanes (one lane per pod of every Job being simulated), so a batch
of Jobs advances in one numpy pass per tick. Only +, -, *, /, sqrt, min and max are used here:
they are correctly rounded, so a lane's numbers do not depend on which other lanes share its batch.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from bottleneck_operator_dev.familyz.hardware import CLOCK_BIN_MHZ

FloatArray = npt.NDArray[np.float64]


def cfs(demand: FloatArray, quota: FloatArray, free_cores: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The CFS bandwidth controller and the node's run queue, averaged over one tick.

    A cgroup that uses its quota inside a 100 ms period is throttled for the rest of it, so every
    thread of the pod (DataLoader workers and the launch thread alike) gets ``quota / demand`` of
    what it asks; on a node whose neighbours leave fewer free cores than the pod asks, the run
    queue shares them the same way but nothing is throttled.

    Args:
        demand: cores the pod's threads would use unhindered.
        quota: the cgroup's quota in cores (``cpu.max`` / period), huge when unlimited.
        free_cores: the node's cores that neighbours leave.

    Returns:
        ``(phi, throttled, run_wait)``: the share of its demand each thread gets; the share of CFS
        periods that end throttled; the share of time some thread of the pod waited runnable.
    """
    cap = np.minimum(quota, free_cores)
    phi = np.minimum(1.0, cap / np.maximum(demand, 1e-9))
    # Demand inside one period is bursty (workers finish batches at different times): with a spread
    # of ~10 % of the quota, periods start throttling a little before the mean demand reaches it.
    z = (demand - quota) / (0.1 * quota + 0.05)
    throttled = np.where(quota < 1e6, 0.5 * (1.0 + z / np.sqrt(1.0 + z * z)), 0.0)
    run_wait = np.minimum(1.0, (1.0 - phi) + 0.02 * np.minimum(1.0, demand / np.maximum(cap, 1e-9)))
    return phi, throttled, run_wait


def power_governor(
    clock: FloatArray,
    temp: FloatArray,
    activity: FloatArray,
    lanes: dict[str, FloatArray],
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """One tick of the GPU's power and clock governor with a first-order thermal model.

    Board power is idle power plus a dynamic part that grows with activity and, at the voltage a
    clock needs, about with the clock squared; the governor steps the SM clock (in 15 MHz bins, at
    most ``slew`` per tick) to the highest one whose power stays at the enforced limit, and steps
    further down when the die passes its slowdown temperature.

    Returns:
        ``(clock, temp, power, capped)``: the new clock (MHz), die temperature (deg C), board power
        (W, never above the enforced limit), and 1.0 where power or heat holds the clock down.
    """
    fmax, plim, pidle, pdyn = lanes["fmax"], lanes["plim"], lanes["pidle"], lanes["pdyn"]
    a = np.maximum(activity, 1e-3)
    headroom = np.maximum(plim - pidle, 1.0) / (pdyn * a)
    f_power = fmax * np.minimum(1.0, np.sqrt(headroom))
    # the die heats towards ambient + R x P with time constant tau (alpha = 1 - exp(-dt/tau) per lane)
    power_now = pidle + pdyn * a * (clock / fmax) ** 2
    temp = temp + lanes["alpha"] * (lanes["tamb"] + lanes["rth"] * power_now - temp)
    f_thermal = fmax * (1.0 - 0.03 * np.maximum(0.0, temp - lanes["tslow"]))
    target = np.maximum(np.minimum(f_power, f_thermal), 0.45 * fmax)
    step = np.clip(target - clock, -lanes["slew"], lanes["slew"])
    clock = np.minimum(np.floor((clock + step) / CLOCK_BIN_MHZ) * CLOCK_BIN_MHZ, fmax)
    power = np.minimum(pidle + pdyn * a * (clock / fmax) ** 2, plim)
    capped = np.where(target < fmax - CLOCK_BIN_MHZ, 1.0, 0.0)
    return clock, temp, power, capped


def aimd_share(link: FloatArray, own_flows: FloatArray, other_flows: FloatArray) -> FloatArray:
    """What a set of TCP flows gets of a shared link, averaged over a tick (RTTs are microseconds).

    AIMD converges to equal per-flow shares; the sum of desynchronised sawtooth flows fills the link
    to about ``1 - 1/(4 N)`` of its rate.
    """
    total = own_flows + other_flows
    return link * (own_flows / np.maximum(total, 1e-9)) * (1.0 - 1.0 / (4.0 * np.maximum(total, 1.0)))


def reclaim(
    anon: FloatArray, cache: FloatArray, filled: FloatArray, lanes: dict[str, FloatArray]
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The kernel's reclaim under the cgroup's memory limit, for one tick.

    Page cache grows with what was read and is dropped first when anonymous memory needs room
    (kswapd between the watermarks: cheap, clean pages). Anonymous memory beyond the limit lives in
    swap, and every touch of a swapped page is a major fault that swaps it back in (and pushes
    another out): the pod's tasks stall in direct reclaim and swap-in.

    Returns:
        ``(cache, swapin_per_s, over)``: page cache bytes, pages swapped in per second, anonymous
        bytes over the limit.
    """
    limit = lanes["mem_limit"]
    room = np.maximum(0.97 * limit - anon, 0.0)
    cache = np.minimum(np.minimum(cache + filled, room), lanes["dataset"])
    over = np.maximum(anon - limit, 0.0) * lanes["swap"]
    swapin = lanes["touch"] * over / np.maximum(anon, 1.0)
    return cache, swapin, over


def little_iops(outstanding: FloatArray, latency: FloatArray, iops_max: FloatArray) -> FloatArray:
    """Little's law for a block device: completions per second = requests in flight / latency, capped."""
    return np.minimum(outstanding / latency, iops_max)


def prefetch(
    queue: FloatArray, supply: FloatArray, demand: FloatArray, capacity: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Steps the training loop can take this tick from a bounded prefetch queue.

    Workers add ``supply`` batches a second while the queue has room; the loop takes ``demand`` a
    second when a batch is ready. Returns ``(steps, produced)`` for a one-second tick.
    """
    steps = np.minimum(demand, queue + supply)
    produced = np.minimum(supply, capacity - queue + steps)
    return steps, produced
