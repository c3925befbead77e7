"""A gang stopped at its runtime limit stops its workload too (#31).

Evicting the pods alone is not enough: the controller that made them makes them again (a
Job replaces evicted pods up to its backoffLimit), and the new pods would run a whole
limit more. So before a gang's pods are evicted for its limit (after the dry run, so a
PodDisruptionBudget that refuses leaves the workload alone too, and after each pod says
why it goes), the workload at the top of the pods' controller chain is told to stop, the
way its own API stops it:

- a **Job** gets `spec.activeDeadlineSeconds` set to the gang's limit. The Job controller
  counts it from the Job's start, which is no later than the gang's, so it is already past:
  the controller fails the Job with reason `DeadlineExceeded` and creates no pod again,
  exactly what Kubernetes does to a Job past its own deadline (and often the limit *is*
  the Job's activeDeadlineSeconds). Failed, not suspended: a Job at its time limit is over,
  as a Slurm job ends in TIMEOUT; whatever waits for the Job to finish (a CronJob, a
  workflow engine, `kubectl wait --for=condition=failed`, ttlSecondsAfterFinished) sees it
  finish, while a suspended Job would sit there looking queued until someone resumes it,
  and then run a whole limit again. (Kueue suspends at its max-exec-time because that
  works for every kind and it also deactivates its Workload, which keeps the job from being
  admitted again; Phalanx has no such object to hold it.) A Job whose own deadline is no
  longer than the limit is left to its Job controller.
- a **PyTorchJob** likewise gets `spec.runPolicy.activeDeadlineSeconds`: the training
  operator fails it as past its deadline.
- a **JobSet** is suspended (`spec.suspend`): its API has no deadline of its own, and
  failing its child Jobs would restart them all when its failurePolicy allows restarts.
  Its controller deletes the Jobs' pods and keeps the JobSet, Suspended; setting
  `spec.suspend` back to false runs it again. So is a **TrainJob** (`spec.suspend`; its
  activeDeadlineSeconds is immutable), an **MPIJob** (`spec.runPolicy.suspend`; its
  deadline reaches only a launcher Job made after it is set) and a **RayCluster**
  (`spec.suspend`).
- any other kind (LeaderWorkerSet, a RayCluster's RayJob, or a controller Phalanx does not
  watch) is not changed: a Warning Event on the gang says its workload may recreate the
  pods.

What to write is decided here, purely; `WorkloadStopper` writes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from phalanx.core.model.names import COMPONENT
from phalanx.operator.cache import Body, ClusterCache, Kind
from phalanx.operator.events import Event
from phalanx.operator.evictor import Bounded
from phalanx.operator.kube.client import MERGE_PATCH, Api, Reply, api_path
from phalanx.workloads import kind_of

STOPPED = "WorkloadStopped"
NOT_STOPPED = "WorkloadNotStopped"
FINISHED = ("Complete", "Completed", "Succeeded", "Failed")  # terminal conditions, by kind


@dataclasses.dataclass(frozen=True, slots=True)
class WorkloadStop:
    """What to do to `workload`: `patch` it (a merge patch; None: write nothing) and say
    `message` on the gang, a Warning when `stoppable` is False."""

    workload: Body
    patch: dict[str, Any] | None
    message: str
    stoppable: bool = True


def top_workload(pods: Iterable[Body], workloads: Mapping[str, Body]) -> Body | None:
    """The workload at the top of the pods' controller chain among `workloads` (by uid):
    a Job's JobSet, a JobSet's TrainJob. None when no pod has a controller; an owner
    that is not among `workloads` (a kind Phalanx does not watch) ends the chain, named as
    a body with only what its reference says."""
    for pod in pods:
        owner = _controller(pod)
        if owner is None:
            continue
        found: Body | None = None
        seen: set[str] = set()
        while owner is not None and str(owner.get("uid")) not in seen:
            seen.add(str(owner.get("uid")))
            body = workloads.get(str(owner.get("uid")))
            if body is None:
                return found or _referenced(owner, pod)
            found = body
            owner = _controller(body)
        return found
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class _Way:
    """How a kind stops: `field` (its path in the object) set to the limit (`deadline`: the
    controller fails the workload once past it) or to true (a suspension); `why` a kind
    is suspended rather than failed."""

    field: tuple[str, ...]
    deadline: bool
    why: str = ""


_WAYS: dict[tuple[str, str], _Way] = {  # (API group, kind) -> how it stops
    ("batch", "Job"): _Way(("spec", "activeDeadlineSeconds"), deadline=True),
    ("kubeflow.org", "PyTorchJob"): _Way(
        ("spec", "runPolicy", "activeDeadlineSeconds"), deadline=True),
    ("jobset.x-k8s.io", "JobSet"): _Way(
        ("spec", "suspend"), deadline=False, why="a JobSet has no deadline to fail it by"),
    ("trainer.kubeflow.org", "TrainJob"): _Way(
        ("spec", "suspend"), deadline=False, why="its activeDeadlineSeconds is immutable"),
    ("kubeflow.org", "MPIJob"): _Way(
        ("spec", "runPolicy", "suspend"), deadline=False,
        why="its deadline reaches only a launcher made after it is set"),
    ("ray.io", "RayCluster"): _Way(
        ("spec", "suspend"), deadline=False, why="a RayCluster has no deadline"),
}


def stop_for(workload: Body, limit: int) -> WorkloadStop | None:
    """How `workload` stops for a gang past its runtime limit of `limit` seconds; None
    when there is nothing to do (finished already, or it stops by itself)."""
    kind = str(workload.get("kind"))
    group = str(workload.get("apiVersion") or "").rpartition("/")[0]
    name = _name(workload)
    way = _WAYS.get((group, kind))
    if way is None:
        message = (f"{kind} {name} may recreate the pods evicted for the runtime limit: "
                   f"{COMPONENT} cannot stop a {kind} through its API; delete or scale it "
                   "down to stop it")
        return WorkloadStop(workload, None, message, stoppable=False)
    if _finished(workload):
        return None
    now = _at(workload, way.field)
    dotted = ".".join(way.field)
    if way.deadline:
        if isinstance(now, int) and not isinstance(now, bool) and now <= limit:
            return None  # its controller fails it at its own deadline
        message = (f"{kind} {name} stopped: {dotted} set to {limit} (the gang's runtime "
                   "limit), so its controller fails it as past its deadline "
                   "(DeadlineExceeded) and creates no pod again")
        return WorkloadStop(workload, _patch(way.field, limit), message)
    if now is True:
        return None
    message = (f"{kind} {name} suspended ({dotted}; {way.why}), so its controller deletes its "
               f"pods and creates none again; set {dotted} to false to run it again")
    return WorkloadStop(workload, _patch(way.field, True), message)


def workload_path(workload: Body) -> str | None:
    """The URL path of a workload Phalanx knows the API of (None: another kind)."""
    kind = kind_of(str(workload.get("kind")))
    meta: Mapping[str, Any] = workload.get("metadata") or {}
    if kind is None or not meta.get("name"):
        return None
    version = str(workload.get("apiVersion") or kind.api_version)
    return api_path(version, kind.plural, str(meta["name"]), str(meta.get("namespace") or ""))


def stopped_event(group: Body, stop: WorkloadStop, reply: Reply | None) -> Event:
    """On the gang: its workload was stopped, could not be, or may recreate its pods."""
    if reply is not None and not reply.ok:
        return Event(group, "Warning", NOT_STOPPED,
                     f"{stop.message.split(':', 1)[0]} failed ({reply.status} {reply.reason}); "
                     "its controller may recreate the pods", topic="workload-stop")
    if not stop.stoppable:
        return Event(group, "Warning", NOT_STOPPED, stop.message, topic="workload-stop")
    return Event(group, "Normal", STOPPED, stop.message, topic="workload-stop")


class WorkloadStopper:
    """Stops the workloads of gangs evicted for their runtime limit (see the module)."""

    def __init__(self, api: Api, cache: ClusterCache, post: Callable[[Event], None]) -> None:
        self._api = api
        self._cache = cache
        self._post = post

    def before_eviction(
        self, group: Body | None, pods: Iterable[Body], limit: int | None
    ) -> Callable[[Bounded], Awaitable[None]] | None:
        """What to run before the gang's pods are evicted; None when nothing is to stop
        (no limit known, pods no controller made, a workload stopping by itself)."""
        if group is None or limit is None:
            return None
        workloads = {str((w.get("metadata") or {}).get("uid")): w
                     for w in self._cache.objects(Kind.WORKLOAD)}
        workload = top_workload(pods, workloads)
        stop = stop_for(workload, limit) if workload is not None else None
        if stop is None:
            return None

        async def run(bounded: Bounded) -> None:
            await self._stop(group, stop, bounded)

        return run

    async def _stop(self, group: Body, stop: WorkloadStop, bounded: Bounded) -> None:
        path = workload_path(stop.workload)
        patch = stop.patch
        reply = None
        if patch is not None and path is not None:
            reply = await bounded(lambda: self._api.request("PATCH", path, patch, MERGE_PATCH))
        self._post(stopped_event(group, stop, reply))


def _controller(body: Body) -> Mapping[str, Any] | None:
    refs = (body.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, Mapping) and r.get("controller") is True),
                None)


def _referenced(owner: Mapping[str, Any], child: Body) -> Body:
    """A body for an owner Phalanx does not watch: what its reference says."""
    namespace = (child.get("metadata") or {}).get("namespace")
    return {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"),
            "metadata": {"name": owner.get("name"), "namespace": namespace,
                         "uid": owner.get("uid")}}


def _at(body: Body, field: tuple[str, ...]) -> Any:
    value: Any = body
    for part in field:
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _patch(field: tuple[str, ...], value: Any) -> dict[str, Any]:
    """A merge patch setting `field` to `value`."""
    patch: Any = value
    for part in reversed(field):
        patch = {part: patch}
    return dict(patch)


def _finished(workload: Body) -> bool:
    conditions = (workload.get("status") or {}).get("conditions") or []
    return any(isinstance(c, Mapping) and c.get("type") in FINISHED
               and c.get("status") == "True" for c in conditions)


def _name(workload: Body) -> str:
    meta: Mapping[str, Any] = workload.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
