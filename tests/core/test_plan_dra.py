"""`phalanx plan` reads ResourceSlices, DeviceClasses, claim templates and pods' claims, and
shows each binding's allocation as the claim's status would hold it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from phalanx.cli.main import main
from phalanx.core.cycle import run_cycle
from phalanx.core.parse.objects import assemble_snapshot, parse_object
from phalanx.core.snapshot.picture import Snapshot

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plan" / "dra.yaml"


def _plan(capsys: pytest.CaptureFixture[str], path: Path) -> dict:
    assert main(["plan", "-f", str(path), "-o", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_dra_gang_lands_on_the_rack_with_two_h100_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    document = _plan(capsys, EXAMPLE)
    bindings = document["bindings"]
    assert sorted(b["node"] for b in bindings) == ["node-a1", "node-a2"]
    for binding in bindings:
        (claim,) = binding["claims"]
        assert claim["claim"] is None and claim["entry"] == "gpus"  # the template's, unmade
        assert claim["node"] == binding["node"]
        devices = claim["devices"]
        assert len(devices) == 8 and {d["pool"] for d in devices} == {binding["node"]}
        assert {d["driver"] for d in devices} == {"gpu.nvidia.com"}


def test_dra_gang_asking_more_than_a_node_has_waits_naming_the_devices(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    objects = yaml.safe_load(EXAMPLE.read_text())
    for item in objects["items"]:
        if item["kind"] == "ResourceClaimTemplate":
            item["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] = 9
    path = tmp_path / "nine.yaml"
    path.write_text(yaml.safe_dump(objects))
    document = _plan(capsys, path)
    assert document["bindings"] == []
    (group,) = document["groups"]
    assert "9 device(s) of class gpu.nvidia.com where" in group["message"]
    assert "NVIDIA H100 80GB HBM3" in group["message"]


def _snapshot(class_resources: dict[str, str] | None, gpus_in_quota: int) -> Snapshot:
    objects = yaml.safe_load(EXAMPLE.read_text())["items"]
    queue = {
        "apiVersion": "scheduling.phalanx.io/v1alpha1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"capability": {"nvidia.com/gpu": str(gpus_in_quota)}},
    }
    parsed = [parse_object(obj) for obj in [*objects, queue]]
    return assemble_snapshot(parsed, class_resources=class_resources)


def test_a_queues_gpu_quota_covers_dra_gpus() -> None:
    """A device of class gpu.nvidia.com counts as one nvidia.com/gpu (the setting
    dra.class_resources), so a queue's GPU capability bounds DRA gangs too."""
    within = run_cycle(_snapshot(None, 16))
    assert len(within.bindings) == 2
    over = run_cycle(_snapshot(None, 8))
    assert over.bindings == ()
    assert over.groups[0].reason == "QueueCapability"
    unmapped = run_cycle(_snapshot({}, 8))  # the class counted as nothing but itself
    assert len(unmapped.bindings) == 2
