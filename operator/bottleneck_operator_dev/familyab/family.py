"""Family AB: training Jobs drawn the way published GPU fleets look, labelled by their physics.

Jobs come in blocks of five, one per class intent in shuffled order. Each Job draws a fleet-like
configuration; when the physics labels it with another class, it draws again (a few times from
the plain fleet distribution, then from one tilted toward the intent), up to :data:`MAX_TRIES`.
The label is always what the physics says, never the intent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bottleneck_operator.contract.verdict import CLASSES, Bottleneck
from bottleneck_operator.contract.window import JobWindow
from bottleneck_operator_dev.familyab.config import Config, Practices
from bottleneck_operator_dev.familyab.exporters import Timeline
from bottleneck_operator_dev.familyab.fleet import Rng, draw_config
from bottleneck_operator_dev.familyab.label import Label, label_of
from bottleneck_operator_dev.familyab.practices import draw_practices
from bottleneck_operator_dev.familyab.stages import Stages, compute_stages
from bottleneck_operator_dev.familyab.steer import steered_config
from bottleneck_operator_dev.familyab.window import job_window

PLAIN_TRIES = 6  # draws from the fleet distribution before steering
MAX_TRIES = 80
BLOCK_SALT = 1_000_003
NAMESPACES = {
    "cv": ("vision", "perception", "ml-research"),
    "nlp": ("language", "llm-pretrain", "ml-research"),
    "rec": ("ranking", "ads-ctr", "recsys"),
    "speech": ("speech", "asr"),
    "gnn": ("graph", "risk-graph"),
    "small": ("rl", "tabular", "ml-research"),
}


@dataclass(frozen=True)
class FamilyABJob:
    """One generated Job.

    Attributes:
        namespace: the Job's namespace.
        name: the Job's name.
        label: the class whose stages, twice as fast, would shorten its mean step the most.
        mechanism: how that class limits it (a ``Mechanism`` value of the class).
        tags: what was drawn, as ``key:value`` strings (and ``hard`` for near ties).
        window: its telemetry, as the data layer would hand it to the analysis.
    """

    namespace: str
    name: str
    label: Bottleneck
    mechanism: str
    tags: tuple[str, ...]
    window: JobWindow


@dataclass(frozen=True)
class Draw:
    """A configuration and what the physics made of it."""

    cfg: Config
    stages: Stages
    label: Label
    tries: int
    steered: bool


def intent_of(seed: int, index: int) -> Bottleneck:
    """The class Job ``index`` is steered toward: its place in its shuffled block of five."""
    order = list(CLASSES)
    np.random.default_rng((seed, BLOCK_SALT, index // len(order))).shuffle(order)
    return order[index % len(order)]


def choose(rng: Rng, intent: Bottleneck) -> Draw:
    """The first draw whose physics gives ``intent``; failing that, the one closest to it."""
    best: tuple[float, Draw] | None = None
    for attempt in range(MAX_TRIES):
        steered = attempt >= PLAIN_TRIES
        cfg = steered_config(rng, intent) if steered else draw_config(rng)
        st = compute_stages(cfg)
        lab = label_of(cfg, st)
        draw = Draw(cfg, st, lab, attempt + 1, steered)
        if lab.bottleneck is intent:
            return draw
        closeness = lab.gains[intent] / max(max(lab.gains.values()), 1e-12)
        if best is None or closeness > best[0]:
            best = (closeness, draw)
    assert best is not None
    return best[1]


def describe(draw: Draw, prac: Practices, tl: Timeline, intent: Bottleneck) -> tuple[str, ...]:
    """Tags naming what was drawn: workload, hardware, feeding, limits, practices and the draw itself."""
    cfg, lab = draw.cfg, draw.label
    tags = [
        f"intent:{intent.value}",
        f"kind:{cfg.model.kind}",
        f"model:{cfg.model.name}",
        f"batch:{cfg.batch}",
        f"gpu:{cfg.gpu.key}",
        f"gpus-per-pod:{cfg.gpus_per_pod}",
        f"pods:{cfg.pods}",
        f"nodes:{cfg.nodes}",
        f"intra:{cfg.intra}",
        f"net:{cfg.nic.tag if cfg.nic else 'none'}",
        f"gdr:{'yes' if cfg.gdr else 'no'}",
        f"arch:{cfg.arch}",
        f"storage:{cfg.storage.kind}",
        f"format:{cfg.fmt}",
        f"cached:{cfg.cached:.2f}",
        f"workers:{cfg.workers}",
        f"cpu-limit:{cfg.cpu_limit:g}" if cfg.cpu_limit else "cpu-limit:none",
        f"mem-limit:{cfg.mem_limit_gib:g}Gi" if cfg.mem_limit_gib else "mem-limit:none",
        f"precision:{cfg.precision}",
        f"dali:{'yes' if cfg.dali else 'no'}",
        f"neighbours:{cfg.neighbours}",
        f"power-cap:{cfg.power_cap:.2f}" if cfg.power_cap < 1 else "power-cap:none",
        f"swap:{'yes' if cfg.swap else 'no'}",
        f"scrape:{prac.scrape_s:g}s",
        f"dcgm-collect:{prac.dcgm_collect_s:g}s",
        f"fieldset:{prac.fieldset}",
        f"exporters:{'+'.join(sorted(prac.exporters)) or 'dcgm-only'}",
        *(f"layout:{layout}" for layout in prac.layout),
        f"draw:{'steered' if draw.steered else 'fleet'}",
        f"tries:{draw.tries}",
        f"step-ms:{lab.step_s * 1000:.1f}",
        *(f"gain:{c.value}={g:.3f}" for c, g in lab.gains.items()),
    ]
    if lab.hard:
        tags.append("hard")
    if tl.kills:
        tags += [f"oom-kills:{len(tl.kills)}", "reset:container"]
    if prac.sidecar_reset:
        tags.append("reset:sidecar")
    if prac.xid:
        tags.append(f"xid:{prac.xid}")
    return tuple(tags)


def make_job(seed: int, index: int, start: float, step: float) -> FamilyABJob:
    """Job ``index`` of the family drawn from ``seed``: the same whatever the family's size."""
    rng = np.random.default_rng((seed, index))
    intent = intent_of(seed, index)
    draw = choose(rng, intent)
    prac = draw_practices(rng, draw.cfg)
    spaces = NAMESPACES[draw.cfg.model.kind]
    namespace = spaces[int(rng.integers(len(spaces)))]
    name = f"{draw.cfg.model.name}-{index:05d}"
    window, tl = job_window(rng, draw.cfg, draw.stages, prac, namespace, name, start, step)
    lab = draw.label
    return FamilyABJob(namespace, name, lab.bottleneck, lab.mechanism.value, describe(draw, prac, tl, intent), window)


def generate_family_ab(seed: int, n: int, *, start: float, step: float = 30.0) -> list[FamilyABJob]:
    """``n`` labelled Jobs whose windows all start at ``start``, sampled every ``step`` seconds.

    Raises:
        ValueError: ``n`` is negative or ``step`` is not positive.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, not {n}")
    if not step > 0:
        raise ValueError(f"step must be > 0, not {step}")
    return [make_job(seed, i, float(start), float(step)) for i in range(n)]
