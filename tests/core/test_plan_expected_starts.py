"""`phalanx plan` says when each waiting group is expected to start (#31), from the
runtime limits of what runs: `expected_starts` in -o json, an EXPECTED-START table."""

from __future__ import annotations

import io
import json

import pytest

from phalanx.cli.main import main

# One 8-GPU node: `long` runs on it since 01:00 with a limit of 2 h; `next` waits for it.
CLUSTER = """
kind: Node
metadata: {name: n1}
status: {allocatable: {nvidia.com/gpu: "8", cpu: "32", pods: "10"}}
---
kind: PodGroup
metadata: {name: long, namespace: ns}
spec: {minMember: 1, runtimeLimitSeconds: 7200}
---
kind: Pod
metadata: {name: long-0, namespace: ns, labels: {scheduling.phalanx.io/pod-group: long}}
spec:
  schedulerName: phalanx
  nodeName: n1
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
status: {phase: Running, startTime: "2026-11-30T01:00:00Z"}
---
kind: PodGroup
metadata: {name: next, namespace: ns, creationTimestamp: "2026-11-30T01:10:00Z"}
spec: {minMember: 1, runtimeLimitSeconds: 1800}
---
kind: Pod
metadata: {name: next-0, namespace: ns, labels: {scheduling.phalanx.io/pod-group: next}}
spec:
  schedulerName: phalanx
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
"""
AN_HOUR_LATER = "1796004000"  # 2026-11-30T02:00:00Z


def plan(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
         *args: str, text: str = CLUSTER) -> str:
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main(["plan", "-f", "-", "--now", AN_HOUR_LATER, *args]) == 0
    return capsys.readouterr().out


def test_json_lists_each_waiting_groups_expected_start(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    document = json.loads(plan(capsys, monkeypatch, "-o", "json"))
    (expected,) = document["expected_starts"]
    assert expected["group"] == "ns/next"
    assert expected["at"] == "2026-11-30T03:00:00Z"  # long started at 01:00, 2 h limit
    assert expected["waits_for"] == ["ns/long"]
    assert "03:00 UTC" in expected["message"]


def test_json_says_null_when_the_work_in_the_way_has_no_limit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    unlimited = CLUSTER.replace("spec: {minMember: 1, runtimeLimitSeconds: 7200}",
                                "spec: {minMember: 1}")
    out = plan(capsys, monkeypatch, "-o", "json", text=unlimited)
    (expected,) = json.loads(out)["expected_starts"]
    assert (expected["group"], expected["at"], expected["waits_for"]) == ("ns/next", None, [])


def test_the_table_has_an_expected_start_section(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = plan(capsys, monkeypatch)
    section = out.split("\n\n")[-1].splitlines()
    assert section[0].split() == ["WAITING", "EXPECTED-START", "MESSAGE"]
    assert section[1].startswith("ns/next  2026-11-30T03:00:00Z  expected to start by 03:00 UTC")
