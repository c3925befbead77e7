"""Admission webhooks, served by the operator with Kopf's admission machinery.

- **Mutating, for pods** (`phalanx-mutating`, failurePolicy Ignore): a pod of a gang
  Phalanx manages gets `schedulerName: phalanx` (binder and both modes) or the gate
  `scheduling.phalanx.io/gang` (gate mode), so a workload written for kube-scheduler needs
  only the queue label. Which pods: `pods.py`.
- **Validating, for PodGroups and Queues** (`phalanx-validating`, failurePolicy Fail): what
  the CRD schemas cannot say, an unknown queue, a `parent` cycle, children guaranteed more
  than their parent may use (`queues.py`, `podgroups.py`).

The decisions are pure functions of the objects (unit-tested without a cluster); the shell
(`handlers.py`, `server.py`) reads a pod's owners and namespace from the API server and
returns the patch. The configurations' shape is `configurations.py`, one definition for
the static manifests (manifests/webhook/) and the local registration.
"""
