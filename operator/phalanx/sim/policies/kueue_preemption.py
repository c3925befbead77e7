"""Kueue's quota bookkeeping and Classic Preemption, for the `kueue-like` model.

Quota (https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/, "Cohort",
"BorrowingLimit"): a ClusterQueue may use its `nominalQuota` plus what the cohort leaves
unused, up to `nominalQuota + borrowingLimit`; it *borrows* while its usage is above its
nominal quota. An admitted workload holds its whole request against the quota.

Preemption (https://kueue.sigs.k8s.io/docs/concepts/preemption/, "Classic Preemption";
cluster_queue/, "Preemption"), with `withinClusterQueue: LowerPriority`,
`reclaimWithinCohort: Any` and `borrowWithinCohort: {policy: LowerPriority}`:
- Candidates: workloads of the preemptor's ClusterQueue of lower priority; workloads of
  other ClusterQueues of the cohort only while those *borrow* (usage above nominal), of
  any priority when the preemptor fits within its own nominal quota (reclaim), else only
  of lower priority (preemption while borrowing).
- Order: other (borrowing) ClusterQueues first, then the lowest priority, then the most
  recently admitted.
- Targets: greedily taken in that order until the preemptor fits (quota, and a
  placement: Kueue's TAS simulates the removal too), skipping a candidate of another
  ClusterQueue once the targets taken so far bring that queue down to its nominal quota;
  when all candidates are of the preemptor's own queue, or none of the others helps, only
  its own queue's. Last, the targets are walked in reverse and every one the preemptor
  still fits without is dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from phalanx.sim.state import ClusterState

Shape = tuple[int, int, int]
"""GPU milli, millicores, MiB of one pod."""


@dataclass(frozen=True, slots=True)
class Workload:
    """An admitted workload, as preemption sees it: its queue, priority, when it was
    admitted, and the pods it holds (node, devices)."""

    job: str
    queue: str
    priority: int
    admitted: float
    shape: Shape
    pods: tuple[tuple[int, tuple[int, ...]], ...]

    @property
    def milli(self) -> int:
        return self.shape[0] * len(self.pods)


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The pending workload that does not fit: its queue, priority and whole request."""

    queue: str
    priority: int
    milli: int


@dataclass(slots=True)
class Quota:
    """GPU milli of each ClusterQueue of the one cohort: nominal quota, the most it may use
    (None: no borrowing limit) and its usage; `capacity` is the cohort's total."""

    nominal: Mapping[str, int]
    limit: Mapping[str, int | None]
    capacity: int
    usage: dict[str, int] = field(default_factory=dict)

    def copy(self) -> Quota:
        return Quota(self.nominal, self.limit, self.capacity, dict(self.usage))

    def add(self, queue: str, milli: int) -> None:
        self.usage[queue] = self.usage.get(queue, 0) + milli

    def borrowing(self, queue: str) -> bool:
        return self.usage.get(queue, 0) > self.nominal.get(queue, 0)

    def within_nominal(self, queue: str, milli: int) -> bool:
        """The request fits in the queue's own nominal quota (reclaim, not borrowing)."""
        return self.usage.get(queue, 0) + milli <= self.nominal.get(queue, 0)

    def fits(self, queue: str, milli: int) -> bool:
        """Admissible now: under the queue's borrowing limit and the cohort's capacity."""
        after = self.usage.get(queue, 0) + milli
        limit = self.limit.get(queue)
        if limit is not None and after > limit:
            return False
        return sum(self.usage.values()) + milli <= self.capacity


Places = Callable[[ClusterState], bool]
"""Whether the preemptor's pods find a placement in a state (TAS)."""


def candidates(pending: Preemptor, admitted: Iterable[Workload], quota: Quota) -> list[Workload]:
    """The workloads the ClusterQueue's policies let `pending` preempt, in Kueue's order."""
    reclaim = quota.within_nominal(pending.queue, pending.milli)
    found = [
        w
        for w in admitted
        if (w.priority < pending.priority)
        or (reclaim and w.queue != pending.queue and quota.borrowing(w.queue))
    ]
    found = [w for w in found if w.queue == pending.queue or quota.borrowing(w.queue)]
    return sorted(found, key=lambda w: (w.queue == pending.queue, w.priority, -w.admitted, w.job))


def targets(
    pending: Preemptor,
    admitted: Sequence[Workload],
    quota: Quota,
    state: ClusterState,
    places: Places,
) -> list[Workload]:
    """The workloads to evict so `pending` is admitted; empty if no set of them helps."""
    found = candidates(pending, admitted, quota)
    own = [w for w in found if w.queue == pending.queue]
    if len(own) == len(found):
        return _minimal(pending, found, quota, state, places)
    return _minimal(pending, found, quota, state, places) or _minimal(
        pending, own, quota, state, places
    )


def _minimal(
    pending: Preemptor,
    ordered: Sequence[Workload],
    quota: Quota,
    state: ClusterState,
    places: Places,
) -> list[Workload]:
    """Greedy in `ordered`, then the reverse pass that reprieves what is not needed."""
    quota, state = quota.copy(), state.copy()
    chosen: list[Workload] = []
    for workload in ordered:
        if workload.queue != pending.queue and not quota.borrowing(workload.queue):
            continue  # its queue is back at its nominal quota: nothing more to reclaim
        release(workload, quota, state)
        chosen.append(workload)
        if _fits(pending, quota, state, places):
            break
    else:
        return []
    for workload in reversed(chosen[:-1]):
        restore(workload, quota, state)
        if _fits(pending, quota, state, places):
            chosen.remove(workload)
        else:
            release(workload, quota, state)
    return chosen


def _fits(pending: Preemptor, quota: Quota, state: ClusterState, places: Places) -> bool:
    return quota.fits(pending.queue, pending.milli) and places(state)


def release(workload: Workload, quota: Quota, state: ClusterState) -> None:
    """The workload gone: its quota and its pods' room given back."""
    quota.add(workload.queue, -workload.milli)
    for node, devices in workload.pods:
        state.release(node, *workload.shape, devices)


def restore(workload: Workload, quota: Quota, state: ClusterState) -> None:
    """Undo `release`: the workload holds its quota and devices again."""
    quota.add(workload.queue, workload.milli)
    for node, devices in workload.pods:
        state.bind(node, *workload.shape, devices)
