"""`kubectl phalanx`: the text a user reads, from objects served by a fake kubectl."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from phalanx.core.cycle import run_cycle
from phalanx.core.parse import snapshot_from_objects
from phalanx.kubectl import main as plugin
from phalanx.kubectl.drawing import draw_png, layered_positions
from phalanx.kubectl.explain import explain_group
from phalanx.kubectl.queues import format_queues, queue_rows
from phalanx.kubectl.topology import (
    TopologyNotFound,
    default_depth,
    domain_rows,
    format_tree,
    level_depth,
)

from .objects import GROUP, Obj, node, pod, pod_group, pods, queue, topology

KINDS = {
    "nodes": "Node",
    "pods": "Pod",
    "podgroups.scheduling.phalanx.io": "PodGroup",
    "queues.scheduling.phalanx.io": "Queue",
    "networktopologies.scheduling.phalanx.io": "NetworkTopology",
    "priorityclasses.scheduling.k8s.io": "PriorityClass",
    "resourceslices.resource.k8s.io": "ResourceSlice",
    "deviceclasses.resource.k8s.io": "DeviceClass",
    "resourceclaims.resource.k8s.io": "ResourceClaim",
    "resourceclaimtemplates.resource.k8s.io": "ResourceClaimTemplate",
}


class FakeKubectl:
    """Answers `kubectl get KINDS [NAME] ... -o json` from a list of objects."""

    def __init__(self, objects: list[Obj]) -> None:
        self.objects = objects
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        args = list(args)
        self.calls.append(args)
        at = args.index("get")
        kinds = {KINDS[k] for k in args[at + 1].split(",")}
        found = [o for o in self.objects if o["kind"] in kinds]
        name = args[at + 2] if not args[at + 2].startswith("-") else None
        if name is not None:
            found = [o for o in found if o["metadata"]["name"] == name]
            if not found:
                return subprocess.CompletedProcess(args, 1, "", f'Error: "{name}" not found')
            return subprocess.CompletedProcess(args, 0, json.dumps(found[0]), "")
        return subprocess.CompletedProcess(
            args, 0, json.dumps({"kind": "List", "items": found}), ""
        )


def racks(count: int = 2, per_rack: int = 2) -> list[Obj]:
    return [node(f"r{r}-n{n}", f"r{r}") for r in range(count) for n in range(per_rack)]


def run(objects: list[Obj], argv: list[str]) -> tuple[int, str, FakeKubectl]:
    fake = FakeKubectl(objects)
    out = io.StringIO()
    return plugin.main(argv, out=out, runner=fake), out.getvalue(), fake


# -- queues ------------------------------------------------------------------------------------


def test_queue_table_shows_usage_against_guarantee_and_capability() -> None:
    objects = [
        *racks(),
        queue("research", capability=32),
        queue("team-a", capability=16, guarantee=8, parent="research"),
        pod_group("train", 2, queue="team-a"),
        pod("train-0", 4, node_name="r0-n0", group="train"),
        pod("train-1", 4, node_name="r0-n1", group="train"),
        pod_group("wait", 2, queue="team-a"),
        *pods("wait", 2, 8, "wait"),
    ]
    rows = queue_rows(snapshot_from_objects(objects))
    text = format_queues(rows)
    lines = {line.split()[0]: line for line in text.splitlines()[1:]}
    assert "GPUS USED/GUAR/CAP" in text.splitlines()[0]
    assert "8/8/16" in lines["team-a"]
    assert "8/-/32" in lines["research"]  # a parent's usage includes its children
    assert lines["team-a"].split()[-2:] == ["1", "1"]  # one group running, one waiting
    order = [row.name for row in rows]
    assert order.index("research") < order.index("team-a")
    assert "  team-a" in text  # indented under its parent


def test_queues_command_reads_the_cluster_through_kubectl() -> None:
    status, out, fake = run(
        [*racks(), queue("team-a", capability=16)], ["--kubeconfig", "/k", "queues"]
    )
    assert status == 0
    assert "team-a" in out and "0/-/16" in out
    assert all(call[:3] == ["kubectl", "--kubeconfig", "/k"] for call in fake.calls)
    assert any("--all-namespaces" in call for call in fake.calls)


def test_kubectl_failure_is_one_line_and_exit_status_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def refuse(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(list(args), 1, "", "error: You must be logged in")

    assert plugin.main(["queues"], out=io.StringIO(), runner=refuse) == 1
    assert capsys.readouterr().err.strip() == "error: error: You must be logged in"


# -- explain -----------------------------------------------------------------------------------


def test_explain_names_the_numbers_of_a_gang_too_big_for_a_rack() -> None:
    group = pod_group(
        "big",
        3,
        required="rack",
        status={
            "phase": "Pending",
            "conditions": [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NoDomainFits",
                    "message": "written by the operator",
                    "lastTransitionTime": "2025-01-01T00:01:00Z",
                }
            ],
        },
    )
    objects = [*racks(), topology(), group, *pods("big", 3, 8, "big")]
    snapshot = snapshot_from_objects(objects)
    text = explain_group(group, snapshot, run_cycle(snapshot))
    assert "PodGroup ml/big: queue default, minMember 3" in text
    assert "topology required rack" in text
    assert "3 waiting (3 needed together, requesting 24 GPUs in total)" in text
    assert "Unschedulable=True NoDomainFits: written by the operator" in text
    assert "Now: waits, NoDomainFits: needs 24 GPUs (3 pods) within one rack" in text
    assert "16 GPUs free" in text
    assert "Cluster: 32 GPUs free, 0 allocated" in text


def quarter(name: str, node_name: str, device: int) -> Obj:
    """A running pod holding a quarter of device `device` (as the operator writes it)."""
    obj = pod(name, 0, node_name=node_name)
    del obj["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]
    obj["metadata"]["annotations"] = {f"{GROUP}/gpu-fraction": "0.25",
                                      f"{GROUP}/gpu-index": str(device)}
    return obj


def test_explain_says_when_shared_gpus_are_why_a_gang_waits() -> None:
    """Each node has 3 GPUs free, but as quarters of 4 shared GPUs: none whole."""
    held = [quarter(f"q-{n}-{d}", f"r0-n{n}", d) for n in range(2) for d in range(4)]
    group = pod_group("two", 1)
    objects = [*(node(f"r0-n{n}", "r0", gpus=4) for n in range(2)), *held, group,
               *pods("two", 1, 2, "two")]
    snapshot = snapshot_from_objects(objects)
    text = explain_group(group, snapshot, run_cycle(snapshot))
    assert ("2 node(s) have 6 GPUs free but only 0 whole: the rest are parts of GPUs "
            "shared by fractional pods (each pod needs 2 whole)") in text


def test_explain_counts_the_groups_ahead_in_the_queue() -> None:
    objects = [
        node("only", "r0"),
        queue("team-a", capability=64),
        pod_group("first", 2, queue="team-a", created="2025-01-01T00:00:00Z"),
        *pods("first", 2, 8, "first", created="2025-01-01T00:00:00Z"),
        pod_group("second", 2, queue="team-a", created="2025-01-01T00:05:00Z"),
        *pods("second", 2, 8, "second", created="2025-01-01T00:05:00Z"),
        pod_group("third", 2, queue="team-a", created="2025-01-01T00:09:00Z"),
        *pods("third", 2, 8, "third", created="2025-01-01T00:09:00Z"),
    ]
    snapshot = snapshot_from_objects(objects)
    third = next(o for o in objects if o["metadata"]["name"] == "third")
    text = explain_group(third, snapshot, run_cycle(snapshot))
    assert "2 groups ahead of it in the queue: ml/first, ml/second" in text
    assert "Status: none written yet" in text
    assert "Queue team-a: GPUs used/guarantee/capability 0/-/64" in text


def test_explain_of_a_group_that_fits_says_where_it_would_go() -> None:
    group = pod_group("small", 2, required="rack")
    objects = [*racks(), topology(), group, *pods("small", 2, 8, "small")]
    snapshot = snapshot_from_objects(objects)
    text = explain_group(group, snapshot, run_cycle(snapshot))
    assert "Now: would place 2 pods" in text
    assert "in rack r0" in text or "in rack r1" in text


def test_explain_command_fetches_the_group_and_plans() -> None:
    objects = [
        *racks(),
        topology(),
        pod_group("big", 3, required="rack"),
        *pods("big", 3, 8, "big"),
    ]
    status, out, fake = run(objects, ["explain", "pg", "big", "-n", "ml"])
    assert status == 0
    assert "needs 24 GPUs (3 pods) within one rack" in out
    assert next(c for c in fake.calls if "big" in c)[-4:-2] == ["--namespace", "ml"]


def test_explain_accepts_the_kind_slash_name_form() -> None:
    objects = [*racks(), pod_group("g", 1), pod("g-0", 1, group="g")]
    status, out, _ = run(objects, ["explain", "podgroup/g"])
    assert status == 0 and "PodGroup ml/g" in out


def test_explain_of_another_kind_is_a_usage_error() -> None:
    status, _, _ = run([], ["explain", "deployment", "x"])
    assert status == 1


# -- topology ----------------------------------------------------------------------------------


def cluster_with_load() -> list[Obj]:
    return [*racks(), topology(), pod("busy", 2, node_name="r0-n0")]


def test_topology_tree_shows_free_and_total_gpus_per_domain() -> None:
    snapshot = snapshot_from_objects(cluster_with_load())
    rows = domain_rows(snapshot, "default")
    by_name = {row.name: row for row in rows}
    assert (by_name["default"].free_gpus, by_name["default"].gpus) == (30, 32)
    assert (by_name["r0"].free_gpus, by_name["r0"].whole_free_nodes) == (14, 1)
    assert (by_name["r1"].free_gpus, by_name["r1"].whole_free_nodes) == (16, 2)
    text = format_tree(rows)
    assert text.splitlines()[0].startswith("cluster default")
    assert "├─ rack r0" in text and "└─ rack r1" in text
    assert "│  ├─ host r0-n0" in text
    assert "   └─ host r1-n1" in text
    line = next(line for line in text.splitlines() if "rack r0" in line)
    assert "14/16 GPUs free" in line and "1/2 nodes whole-free" in line


def test_topology_depth_defaults_to_above_the_host_level() -> None:
    snapshot = snapshot_from_objects(cluster_with_load())
    depth = default_depth(snapshot, "default")
    assert depth == level_depth(snapshot, "default", "rack") == 0
    rows = domain_rows(snapshot, "default", depth)
    assert [row.level for row in rows] == ["cluster", "rack", "rack"]


def test_unknown_topology_or_level_is_reported() -> None:
    snapshot = snapshot_from_objects(cluster_with_load())
    with pytest.raises(TopologyNotFound, match="known: default"):
        domain_rows(snapshot, "missing")
    with pytest.raises(TopologyNotFound, match="level spine"):
        level_depth(snapshot, "default", "spine")


def test_topology_command_draws_a_png(tmp_path: Path) -> None:
    target = tmp_path / "tree.png"
    status, out, _ = run(cluster_with_load(), ["topology", "--png", str(target)])
    assert status == 0
    assert "rack r0" in out and "host" not in out
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_topology_command_fails_cleanly_without_the_topology() -> None:
    status, _, _ = run(racks(), ["topology"])
    assert status == 1


def test_layout_centres_parents_over_their_children() -> None:
    rows = domain_rows(snapshot_from_objects(cluster_with_load()), "default")
    positions = layered_positions(rows)
    by_name = {row.name: row.domain for row in rows}
    r0_children = [positions[by_name[n]][0] for n in ("r0-n0", "r0-n1")]
    assert positions[by_name["r0"]][0] == sum(r0_children) / 2
    assert positions[by_name["default"]][1] > positions[by_name["r0"]][1]
    assert sorted(x for x, y in positions.values() if y == -2.0) == [0.0, 1.0, 2.0, 3.0]


def test_draw_png_writes_an_image(tmp_path: Path) -> None:
    rows = domain_rows(snapshot_from_objects(cluster_with_load()), "default")
    draw_png(rows, tmp_path / "t.png", "test")
    assert (tmp_path / "t.png").stat().st_size > 1000
