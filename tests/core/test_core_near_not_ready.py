"""Opt-in: while a node is NotReady, new gangs keep out of its domain of the configured
level; gangs already running still get their replacements next to the rest."""

from __future__ import annotations

from dataclasses import replace

from core_builders import cycle, decision, gang, group, nodes_of, pod, racks, topology

from phalanx.core import NodeInfo, SchedulerConfig

AVOID_RACK = SchedulerConfig(avoid_not_ready_level="rack")
DEFAULT = topology("default", "block", "rack", "host")


def rack0_half_down() -> list[NodeInfo]:
    """Racks r0 and r1 of three 8-GPU hosts; n-0-0-1 (rack r0) is NotReady."""
    return [replace(n, ready=False) if n.name == "n-0-0-1" else n for n in racks(2, 3)]


def test_off_a_new_gang_takes_the_tightest_rack_next_to_the_failed_node() -> None:
    nodes = rack0_half_down()
    groups, pods = gang("new", 2, gpus=8, required="rack")
    result = cycle(nodes, DEFAULT, groups, pods)
    assert nodes_of(result, "default/new") == ["n-0-0-0", "n-0-0-2"]


def test_on_a_new_gang_keeps_out_of_the_rack_with_a_not_ready_node() -> None:
    groups, pods = gang("new", 2, gpus=8, required="rack")
    result = cycle(rack0_half_down(), DEFAULT, groups, pods, config=AVOID_RACK)
    assert {n.rsplit("-", 1)[0] for n in nodes_of(result, "default/new")} == {"n-0-1"}


def test_on_a_running_gang_still_gets_its_replacement_in_its_rack() -> None:
    running = pod("old-0", gpus=8, group="old", node_name="n-0-0-0")
    replacement = pod("old-1b", gpus=8, group="old")
    result = cycle(rack0_half_down(), DEFAULT, group("old", 2, required="rack"),
                   running, replacement, config=AVOID_RACK)
    assert nodes_of(result, "default/old") == ["n-0-0-2"]


def test_on_a_new_gang_that_fits_only_there_waits_and_says_why() -> None:
    nodes = [n for n in rack0_half_down() if "-0-0-" in n.name]  # rack r0 only
    groups, pods = gang("new", 2, gpus=8, required="rack")
    result = cycle(nodes, DEFAULT, groups, pods, config=AVOID_RACK)
    waiting = decision(result, "default/new")
    assert not waiting.scheduled and nodes_of(result, "default/new") == []
    assert "2 node(s) were in a domain with a NotReady node" in waiting.message
    assert "1 node(s) were not ready" in waiting.message


def test_a_level_the_gangs_topology_lacks_avoids_nothing() -> None:
    groups, pods = gang("new", 2, gpus=8, required="rack")
    config = SchedulerConfig(avoid_not_ready_level="row")
    result = cycle(rack0_half_down(), DEFAULT, groups, pods, config=config)
    assert nodes_of(result, "default/new") == ["n-0-0-0", "n-0-0-2"]


def test_a_lone_pod_is_a_new_gang_too() -> None:
    lone = pod("lone", gpus=8)
    assert nodes_of(cycle(rack0_half_down(), DEFAULT, lone), "default/lone") == ["n-0-0-0"]
    placed = nodes_of(cycle(rack0_half_down(), DEFAULT, lone, config=AVOID_RACK),
                      "default/lone")
    assert placed[0].startswith("n-0-1-")
