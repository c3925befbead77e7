"""`phalanx plan` end to end, in-process through the real dispatcher."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from phalanx.cli.main import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "plan" / "cluster.yaml"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_output_on_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "-f", str(EXAMPLE), "-o", "json")
    assert code == 0 and err == ""
    document = json.loads(out)
    assert set(document) == {"bindings", "groups", "evictions", "expected_starts"}
    assert document["evictions"] == []
    groups = {g["group"]: g for g in document["groups"]}
    assert set(groups) == {"ml/llm-finetune", "ml/llm-pretrain", "ml/notebook"}
    assert all(
        set(g) == {"group", "scheduled", "placed", "reason", "message"} for g in groups.values()
    )
    assert (
        groups["ml/llm-finetune"]["scheduled"] is True and groups["ml/llm-finetune"]["placed"] == 2
    )
    pretrain = groups["ml/llm-pretrain"]
    assert (pretrain["scheduled"], pretrain["placed"], pretrain["reason"]) == (
        False,
        0,
        "NoDomainFits",
    )
    assert "within one rack" in pretrain["message"]
    finetune_nodes = {
        b["node"] for b in document["bindings"] if b["pod"].startswith("ml/llm-finetune")
    }
    assert len(finetune_nodes) == 1  # two 2-GPU pods packed on one node of one rack
    notebook = {
        "pod": "ml/notebook",
        "node": "node-a1",
        "devices": [{"index": 6, "fraction": 1.0}],
        "claims": [],  # no DRA claims (examples/plan/dra.yaml has some)
    }
    assert notebook in document["bindings"]


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "-f", str(EXAMPLE))
    assert code == 0
    header = out.splitlines()[0].split()
    assert header == ["GROUP", "SCHEDULED", "PLACED", "REASON", "MESSAGE"]
    assert "ml/llm-pretrain" in out and "NoDomainFits" in out and "POD" in out


def test_reads_stdin_and_multi_document_yaml(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = """
kind: Node
metadata: {name: n1}
status: {allocatable: {nvidia.com/gpu: "4", cpu: "8", pods: "10"}}
---
kind: Pod
metadata: {name: p, namespace: ns}
spec:
  schedulerName: phalanx
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]
"""
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "-f", "-", "-o", "json")
    assert code == 0
    devices = [{"index": 0, "fraction": 1.0}, {"index": 1, "fraction": 1.0}]
    expected = {"pod": "ns/p", "node": "n1", "devices": devices, "claims": []}
    assert json.loads(out)["bindings"] == [expected]


SHARED = """
kind: Node
metadata: {name: n1}
status: {allocatable: {nvidia.com/gpu: "2", cpu: "8", pods: "10"}}
---
kind: Pod
metadata: {name: busy, namespace: ns, annotations: {scheduling.phalanx.io/gpu-index: "1"}}
spec:
  schedulerName: phalanx
  nodeName: n1
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
status: {phase: Running}
---
kind: Pod
metadata: {name: quarter, namespace: ns, annotations: {scheduling.phalanx.io/gpu-fraction: "0.25"}}
spec:
  schedulerName: phalanx
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""


def test_plan_shows_the_gpu_devices_each_pod_takes(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(SHARED))
    code, out, _ = run(capsys, "-f", "-", "-o", "json")
    assert code == 0
    devices = [{"index": 0, "fraction": 0.25}]
    expected = {"pod": "ns/quarter", "node": "n1", "devices": devices, "claims": []}
    assert json.loads(out)["bindings"] == [expected]
    monkeypatch.setattr("sys.stdin", io.StringIO(SHARED))
    code, out, _ = run(capsys, "-f", "-")
    rows = [line.split() for line in out.splitlines()]
    assert ["ns/quarter", "n1", "0:0.25", "ns/quarter"] in rows


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("kind: Node\nmetadata: {name: n1\n", "invalid YAML"),
        (
            "kind: Pod\nmetadata: {name: p, namespace: ns}\nspec: {}\n",
            "Pod ns/p: spec.containers: missing",
        ),
        (
            "kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: lots}}\n",
            "Node n1: status.allocatable.cpu: invalid quantity 'lots'",
        ),
        (
            "kind: PodGroup\nmetadata: {name: g}\nspec: {}\n",
            "PodGroup default/g: spec.minMember: missing",
        ),
        ("- just\n- a list\n", "document 1 is not an object"),
        ("kind: List\nitems: {kind: Node}\n", "List ?: items: expected a list"),
    ],
)
def test_malformed_input_exits_2_with_a_clear_message(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    code, out, err = run(capsys, "-f", str(path))
    assert code == 2 and out == ""
    assert expected in err and "Traceback" not in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "-f", str(tmp_path / "nope.yaml"))
    assert code == 2 and "nope.yaml" in err


PREEMPTION = """
kind: PriorityClass
metadata: {name: high}
value: 1000
---
kind: Node
metadata: {name: n1}
status: {allocatable: {nvidia.com/gpu: "8", cpu: "32", pods: "10"}}
---
kind: PodGroup
metadata: {name: low, namespace: ns}
spec: {minMember: 1}
---
kind: Pod
metadata: {name: low-0, namespace: ns, labels: {scheduling.phalanx.io/pod-group: low}}
spec:
  schedulerName: phalanx
  nodeName: n1
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
status: {phase: Running, startTime: "2026-11-30T01:00:00Z"}
---
kind: PodGroup
metadata: {name: high, namespace: ns}
spec: {minMember: 1, priorityClassName: high}
---
kind: Pod
metadata: {name: high-0, namespace: ns, labels: {scheduling.phalanx.io/pod-group: high}}
spec:
  schedulerName: phalanx
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
"""


def test_evictions_are_listed_in_json_and_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(PREEMPTION))
    an_hour_later = "1796004000"  # 2026-11-30T02:00:00Z: low-0 started at 01:00
    code, out, _ = run(capsys, "-f", "-", "-o", "json", "--now", an_hour_later)
    assert code == 0
    document = json.loads(out)
    assert document["evictions"] == [
        {
            "pod": "ns/low-0", "group": "ns/low", "reason": "Preempted", "preemptor": "ns/high",
            "work_lost_gpu_hours": 8.0,  # 8 GPUs for an hour, no checkpoint
            "message": "preempted by ns/high (priority 1000) in queue default; it loses "
            "8.0 GPU-h of work, done since it started at 01:00 UTC",
        }
    ]
    assert document["bindings"] == []  # the room is still occupied by the victim
    monkeypatch.setattr("sys.stdin", io.StringIO(PREEMPTION))
    code, out, _ = run(capsys, "-f", "-")
    assert code == 0
    assert "EVICT" in out and "ns/low-0  ns/low  Preempted  ns/high" in out


def test_the_gpu_sharing_example_plans_fractions_and_a_mixed_gang(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sharing = EXAMPLE.parent.parent / "gpu-sharing.yaml"
    text = EXAMPLE.read_text() + "\n---\n" + sharing.read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    code, out, _ = run(capsys, "-f", "-", "-o", "json")
    assert code == 0
    document = json.loads(out)
    devices = {b["pod"]: b["devices"] for b in document["bindings"]}
    assert devices["default/notebook"][0]["fraction"] == 0.25
    gang = [devices[f"default/train-eval-{p}"] for p in ("trainer", "eval-0", "eval-1")]
    assert [d[0]["fraction"] for d in gang] == [1.0, 0.5, 0.5]
    assert gang[1] == gang[2]  # the two halves share one GPU
    inference = next(g for g in document["groups"] if g["group"] == "default/inference")
    assert "nvidia.com/gpu.memory label" in inference["message"]  # no node says its memory
