"""Each simulated queue's decayed usage, kept across cycles as the operator keeps it in
Queue status (`phalanx.operator.queue_usage`), with the core's math
(`phalanx.core.admission.usage`): every cycle the usage is advanced by what each queue
held since the last cycle, and the core gets it through `QueueInfo.usage`. At half-life
0 the queues go to the core untouched, exactly as without fair sharing over time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from phalanx.core.admission.usage import accrue
from phalanx.core.model.inputs import QueueInfo
from phalanx.core.model.names import CPU, GPU, MEMORY
from phalanx.sim.jobrun import JobRun

MIB_MILLI = 1024 * 1024 * 1000  # a MiB in the core's milli-units


def allocation(runs: Iterable[JobRun]) -> dict[str, dict[str, float]]:
    """What each queue's placed pods hold, in the core's milli-units (a fractional pod
    counts its part of one GPU, as the core charges it)."""
    held: dict[str, dict[str, float]] = {}
    for run in runs:
        if not run.placed:
            continue
        queue = held.setdefault(run.spec.queue, {})
        amounts = {GPU: run.held_milli, CPU: run.placed * run.spec.cpu_milli_per_pod,
                   MEMORY: run.placed * run.spec.memory_mib_per_pod * MIB_MILLI}
        for resource, amount in amounts.items():
            queue[resource] = queue.get(resource, 0.0) + amount
    return held


class SimUsage:
    def __init__(self, half_life: float) -> None:
        self.half_life = half_life
        self.usage: dict[str, dict[str, float]] = {}
        self.at: float | None = None

    def queues(
        self, queues: Sequence[QueueInfo], running: Iterable[JobRun], now: float
    ) -> Sequence[QueueInfo]:
        """The queues with their usage at `now`: what `running` held since the last
        cycle added (they ran all along: jobs start only in cycles). A job that ended
        since is not counted for its last stretch; the engine runs a cycle at each end
        while anything waits, so only an idle cluster's ends are late, when order does
        not matter."""
        if self.half_life <= 0:
            return queues
        if self.at is not None:
            held: Mapping[str, Mapping[str, float]] = allocation(running)
            names = set(self.usage) | set(held)
            self.usage = {
                name: accrue(self.usage.get(name, {}), held.get(name, {}), now - self.at,
                             self.half_life)
                for name in names
            }
        self.at = now
        return tuple(replace(q, usage=self.usage.get(q.name, {}), usage_at=now) for q in queues)
