"""Synthetic cgroup v2 trees and /proc trees, laid out as a Kubernetes node shows them."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

POD_UID = "8f14e45f-ceea-467a-9575-6a8b1c2d3e4f"

# Values chosen to be distinguishable after unit conversion (usec -> s, sums over devices).
FILES: dict[str, str] = {
    "cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
    "cpu.stat": (
        "usage_usec 123456789\nuser_usec 100000000\nsystem_usec 23456789\n"
        "core_sched.force_idle_usec 0\nnr_periods 4000\nnr_throttled 1500\nthrottled_usec 98765432\n"
        "nr_bursts 0\nburst_usec 0\n"
    ),
    "cpu.max": "400000 100000\n",
    "cpu.pressure": "some avg10=12.50 avg60=10.00 avg300=8.00 total=45000000\nfull avg10=1.00 avg60=0.50 avg300=0.20 total=3000000\n",
    "io.pressure": "some avg10=40.00 avg60=35.00 avg300=30.00 total=120000000\nfull avg10=30.00 avg60=25.00 avg300=20.00 total=90000000\n",
    "memory.pressure": "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1000\n",
    "io.stat": (
        "259:0 rbytes=1000000 wbytes=2000 rios=100 wios=2 dbytes=0 dios=0\n"
        "8:16 rbytes=500000 wbytes=0 rios=50 wios=0 dbytes=0 dios=0\n"
    ),
    "memory.current": "3221225472\n",
    "memory.max": "8589934592\n",
    "memory.events": "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n",
    # pswpin: kernels >= 6.15 count swap-ins per cgroup (older ones leave the key out)
    "memory.stat": (
        "anon 2147483648\nfile 1073741824\npgfault 900000\npgmajfault 4321\ninactive_file 536870912\n"
        "pswpin 2718\npswpout 3141\n"
    ),
}


def pod_dir_name(uid: str, driver: str) -> list[str]:
    """The directories from the hierarchy's root to the pod's cgroup, per cgroup driver."""
    if driver == "systemd":
        underscored = uid.replace("-", "_")
        return ["kubepods.slice", "kubepods-burstable.slice", f"kubepods-burstable-pod{underscored}.slice"]
    if driver == "cgroupfs":
        return ["kubepods", "burstable", f"pod{uid}"]
    if driver == "kind":
        underscored = uid.replace("-", "_")
        return [
            "kubelet.slice",
            "kubelet-kubepods.slice",
            "kubelet-kubepods-besteffort.slice",
            f"kubelet-kubepods-besteffort-pod{underscored}.slice",
        ]
    raise ValueError(driver)


def build_tree(
    root: Path,
    *,
    uid: str = POD_UID,
    driver: str = "systemd",
    omit: tuple[str, ...] = (),
    overrides: dict[str, str] | None = None,
    neighbours: int = 3,
) -> Path:
    """A cgroup v2 hierarchy at ``root`` with the pod's cgroup filled in; returns the pod's directory."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(FILES["cgroup.controllers"])
    # Noise: system services and other pods, so the search has to choose.
    for name in ("system.slice/containerd.service", "user.slice/user-0.slice", "init.scope"):
        (root / name).mkdir(parents=True, exist_ok=True)
    for i in range(neighbours):
        other = f"00000000-0000-0000-0000-00000000000{i}"
        (root.joinpath(*pod_dir_name(other, driver))).mkdir(parents=True, exist_ok=True)
    pod = root.joinpath(*pod_dir_name(uid, driver))
    pod.mkdir(parents=True, exist_ok=True)
    files = {**FILES, **(overrides or {})}
    for name, text in files.items():
        if name in omit or name == "cgroup.controllers":
            continue
        (pod / name).write_text(text)
    return pod


def write_proc(root: Path, processes: dict[int, tuple[str, str]], ticks: dict[int, int] | None = None) -> Path:
    """A /proc look-alike: ``{pid: (comm, state)}`` -> ``<root>/<pid>/stat`` in the kernel's format.

    ``ticks`` gives a process's user CPU ticks (utime; stime is 3), 5 where not given; writing the
    same root again updates the files in place.
    """
    root.mkdir(parents=True, exist_ok=True)
    for pid, (comm, state) in processes.items():
        d = root / str(pid)
        d.mkdir(exist_ok=True)
        utime = (ticks or {}).get(pid, 5)
        (d / "stat").write_text(
            f"{pid} ({comm}) {state} 1 {pid} {pid} 0 -1 4194560 100 0 0 0 {utime} 3 0 0 20 0 1 0 100 1000 10\n"
        )
    (root / "self").mkdir(exist_ok=True)
    (root / "self" / "cgroup").write_text("0::/\n")
    (root / "sys").mkdir(exist_ok=True)  # non-numeric entries are ignored
    return root


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Exposition text -> {(sample name, sorted labels): value}."""
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(text: str, name: str, **labels: str) -> float | None:
    """The value of the one sample named ``name`` whose labels include ``labels``; None if absent."""
    found = [
        v
        for (n, ls), v in samples(text).items()
        if n == name and all(dict(ls).get(k) == val for k, val in labels.items())
    ]
    assert len(found) <= 1, found
    return found[0] if found else None
