"""Rack locality is judged among the gangs that could be in one rack: at 12,500 nodes a rack
holds 80 GPUs, and a 128-GPU gang spans two racks under any scheduler."""

from __future__ import annotations

from bench.e2e.report import locality


def test_gangs_too_large_for_a_rack_are_left_out_of_the_fitting_share() -> None:
    gangs = {"small": ["s0", "s1"], "split": ["t0", "t1"], "big": ["b0", "b1"]}
    node_of = {"s0": "n1", "s1": "n2", "t0": "n1", "t1": "n3", "b0": "n1", "b1": "n3"}
    rack_of = {"n1": "r1", "n2": "r1", "n3": "r2"}
    found = locality(gangs, node_of, rack_of, {"small": True, "split": True, "big": False})
    assert found["multi_node_gangs_in_one_rack_pct"] == 33.3
    assert found["multi_node_gangs_fitting_a_rack"] == 2
    assert found["of_those_in_one_rack_pct"] == 50.0
    assert "of_those_in_one_rack_pct" not in locality(gangs, node_of, rack_of)
