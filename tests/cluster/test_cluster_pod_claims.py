"""The claims a workload's pod templates mount, for every profiled kind, read where each keeps them."""

from __future__ import annotations

from typing import Any

import pytest

from bottleneck_operator.controller.pod_templates import NO_CLAIMS, VolumeClaims, volume_claims


def _pod(*volumes: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "train", "image": "trainer"}], "volumes": list(volumes)}}


def _claim(name: str, claim: str) -> dict[str, Any]:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}


def _ephemeral(name: str, storage_class: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Ti"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"name": name, "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}


DATA, SCRATCH = _claim("data", "imagenet"), _claim("ckpt", "checkpoints")
CASES: dict[str, dict[str, Any]] = {
    "Job": {"template": _pod(DATA, {"name": "shm", "emptyDir": {"medium": "Memory"}})},
    "PyTorchJob": {
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": _pod(DATA)},
            "Worker": {"replicas": 3, "template": _pod(DATA, SCRATCH)},
        }
    },
    "MPIJob": {"mpiReplicaSpecs": {"Launcher": {"template": _pod()}, "Worker": {"template": _pod(DATA, SCRATCH)}}},
    "JobSet": {
        "replicatedJobs": [
            {"name": "leader", "template": {"spec": {"template": _pod(DATA)}}},
            {"name": "workers", "template": {"spec": {"template": _pod(SCRATCH)}}},
        ]
    },
    "RayJob": {
        "rayClusterSpec": {
            "headGroupSpec": {"template": _pod()},
            "workerGroupSpecs": [{"groupName": "gpu", "template": _pod(DATA, SCRATCH)}],
        }
    },
    "LeaderWorkerSet": {"leaderWorkerTemplate": {"leaderTemplate": _pod(DATA), "workerTemplate": _pod(SCRATCH)}},
    # Trainer's pods come from a runtime: only the overrides name what the TrainJob adds.
    "TrainJob": {
        "runtimeRef": {"name": "torch-distributed"},
        "podTemplateOverrides": [{"targetJobs": [{"name": "node"}], "spec": {"volumes": [DATA, SCRATCH]}}],
    },
}


@pytest.mark.parametrize("kind", list(CASES))
def test_every_kind_names_the_claims_its_templates_mount(kind: str) -> None:
    got = volume_claims(kind, {"kind": kind, "spec": CASES[kind]})
    expected = {"imagenet"} if kind == "Job" else {"imagenet", "checkpoints"}
    assert got == VolumeClaims(claims=frozenset(expected))


def test_ephemeral_claims_give_their_class_and_a_default_class_is_not_guessed() -> None:
    spec = {"template": _pod(_ephemeral("cache", "local-nvme"), _ephemeral("tmp", None), DATA)}
    got = volume_claims("Job", {"spec": spec})
    assert got.classes == {"local-nvme"} and got.claims == {"imagenet"}


@pytest.mark.parametrize(
    "spec",
    [
        None,
        {"template": None},
        {"template": {"spec": {"volumes": "data"}}},
        {"template": {"spec": {"volumes": [None, {"persistentVolumeClaim": {"claimName": ""}}, {"ephemeral": []}]}}},
        {"template": _pod({"name": "cfg", "configMap": {"name": "settings"}})},
    ],
)
def test_a_spec_without_claims_or_malformed_has_none(spec: Any) -> None:
    got = volume_claims("Job", {"spec": spec})
    assert got == NO_CLAIMS and not got


def test_an_unknown_kind_has_no_claims() -> None:
    assert volume_claims("Deployment", {"spec": {"template": _pod(DATA)}}) == NO_CLAIMS
