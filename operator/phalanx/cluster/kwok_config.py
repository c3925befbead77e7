"""The kwok configuration: which nodes it manages and the lifecycle stages it plays.

kwok run standalone has no built-in stages, so all of them are given here:

- node-initialize: a kwok node becomes Ready (conditions, addresses, nodeInfo), keeping the
  capacity and allocatable it was created with;
- node-heartbeat: node status refreshed every ~10 minutes; liveness is carried by node
  Leases (renewed every lease-duration/4), which is cheap enough for ~1,000 nodes;
- pod-ready: a pod bound to a kwok node becomes Running and Ready;
- pod-complete / pod-fail: a Running pod annotated `sim.phalanx.io/complete-after-seconds: "N"`
  (or `sim.phalanx.io/fail-after-seconds`) becomes Succeeded (Failed, exit code 1) N seconds
  after kwok saw it running;
- pod-delete: a pod being deleted (deletionTimestamp set) is removed at once, unless it is
  annotated `sim.phalanx.io/hold-termination` (then once the annotation is removed).

Pods without the annotations run until deleted. The module is pure: it returns text.
"""

from __future__ import annotations

from typing import Any

import yaml

from phalanx.cluster import labels

DEFAULT_LEASE_SECONDS = 120
HEARTBEAT_MILLISECONDS = 600_000

_NODE_READY = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
addresses:
- address: {{ NodeIP | Quote }}
  type: InternalIP
- address: {{ NodeName | Quote }}
  type: Hostname
{{ with .status.allocatable }}
allocatable:
{{ YAML . 1 }}
{{ end }}
{{ with .status.capacity }}
capacity:
{{ YAML . 1 }}
{{ end }}
nodeInfo:
  architecture: amd64
  operatingSystem: linux
  kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
  kubeProxyVersion: {{ printf "kwok-%s" Version | Quote }}
  containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
  kernelVersion: {{ printf "kwok-%s" Version | Quote }}
  osImage: kwok
  machineID: ""
  systemUUID: ""
  bootID: ""
phase: Running
"""

_NODE_HEARTBEAT = """\
{{ $now := Now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ or $.metadata.creationTimestamp $now | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}
"""

_POD_RUNNING = """\
{{ $now := Now }}
conditions:
- {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "True", lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: true
  started: true
  restartCount: 0
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
{{ with NodeIPWith .spec.nodeName }}
hostIP: {{ . | Quote }}
hostIPs:
- ip: {{ . | Quote }}
{{ end }}
{{ with PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) \
( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
podIP: {{ . | Quote }}
podIPs:
- ip: {{ . | Quote }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""

_POD_FINISHED = """\
{{ $now := Now }}
conditions:
- {type: PodScheduled, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: Initialized, status: "True", lastTransitionTime: {{ $now | Quote }}}
- {type: ContainersReady, status: "False", reason: PodCompleted, \
lastTransitionTime: {{ $now | Quote }}}
- {type: Ready, status: "False", reason: PodCompleted, lastTransitionTime: {{ $now | Quote }}}
containerStatuses:
{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
  ready: false
  started: false
  restartCount: 0
  state:
    terminated:
      exitCode: EXIT_CODE
      reason: REASON
      finishedAt: {{ $now | Quote }}
{{ end }}
phase: PHASE
"""


def kwok_config_documents(
    lease_seconds: int = DEFAULT_LEASE_SECONDS, pod_cidr: str = "10.0.0.1/16"
) -> list[dict[str, Any]]:
    """KwokConfiguration plus every Stage, as dicts (one YAML document each)."""
    options: dict[str, Any] = {
        "manageAllNodes": False,
        "manageNodesWithAnnotationSelector": (
            f"{labels.KWOK_NODE_ANNOTATION}={labels.KWOK_NODE_VALUE}"
        ),
        "cidr": pod_cidr,
        "nodeIP": "10.255.0.1",
        "nodeLeaseDurationSeconds": lease_seconds,
        "nodeLeaseParallelism": 4,
        "nodePlayStageParallelism": 8,
        "podPlayStageParallelism": 8,
    }
    return [
        {
            "apiVersion": "config.kwok.x-k8s.io/v1alpha1",
            "kind": "KwokConfiguration",
            "metadata": {"name": "phalanx"},
            "options": options,
        },
        _node_initialize(),
        _node_heartbeat(),
        _pod_ready(),
        _pod_finish("pod-complete", labels.COMPLETE_AFTER_ANNOTATION, "Succeeded", 0),
        _pod_finish("pod-fail", labels.FAIL_AFTER_ANNOTATION, "Failed", 1),
        _pod_delete(),
    ]


def kwok_config_yaml(lease_seconds: int = DEFAULT_LEASE_SECONDS) -> str:
    return yaml.safe_dump_all(kwok_config_documents(lease_seconds), sort_keys=False)


def _stage(name: str, kind: str, expressions: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": kind},
            "selector": {"matchExpressions": expressions},
            **spec,
        },
    }


def _expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


_READY_STATUS = '.status.conditions.[] | select( .type == "Ready" ) | .status'
_NOT_DELETING = _expr(".metadata.deletionTimestamp", "DoesNotExist")


def _node_initialize() -> dict[str, Any]:
    return _stage(
        "node-initialize",
        "Node",
        [_expr(_READY_STATUS, "NotIn", "True")],
        next={"statusTemplate": _NODE_READY},
    )


def _node_heartbeat() -> dict[str, Any]:
    return _stage(
        "node-heartbeat",
        "Node",
        [_expr(".status.phase", "In", "Running"), _expr(_READY_STATUS, "In", "True")],
        delay={
            "durationMilliseconds": HEARTBEAT_MILLISECONDS,
            "jitterDurationMilliseconds": HEARTBEAT_MILLISECONDS + HEARTBEAT_MILLISECONDS // 10,
        },
        next={"statusTemplate": _NODE_HEARTBEAT},
    )


def _pod_ready() -> dict[str, Any]:
    return _stage(
        "pod-ready",
        "Pod",
        [_NOT_DELETING, _expr(".status.phase", "In", "Pending")],
        next={"statusTemplate": _POD_RUNNING},
    )


def _pod_finish(name: str, annotation: str, phase: str, exit_code: int) -> dict[str, Any]:
    key = f'.metadata.annotations["{annotation}"]'
    template = (
        _POD_FINISHED.replace("EXIT_CODE", str(exit_code))
        .replace("REASON", "Completed" if exit_code == 0 else "Error")
        .replace("PHASE", phase)
    )
    return _stage(
        name,
        "Pod",
        [_NOT_DELETING, _expr(".status.phase", "In", "Running"), _expr(key, "Exists")],
        delay={"durationMilliseconds": 0, "durationFrom": {"jq": {"expression": f'{key} + "s"'}}},
        next={"statusTemplate": template},
    )


def _pod_delete() -> dict[str, Any]:
    return _stage(
        "pod-delete",
        "Pod",
        [_expr(".metadata.deletionTimestamp", "Exists"),
         _expr(f'.metadata.annotations["{labels.HOLD_TERMINATION_ANNOTATION}"]', "DoesNotExist")],
        next={"delete": True, "finalizers": {"empty": True}},
    )
