"""The preemption loss factor: a gang whose start is known from runtime limits evicts only
if the GPU-hours it would wait until then are at least `preemption_loss_factor` times
the GPU-hours of work its victims lose; else it waits, with room reserved at that start.
Reclaim for a queue below its guarantee is never held back."""

from __future__ import annotations

from dataclasses import replace

from core_builders import decision, group, node, pod, snapshot_of

from phalanx.core import CycleResult, PriorityClassInfo, QueueInfo, SchedulerConfig, run_cycle

HIGH = PriorityClassInfo("high", 1000)
LOW = PriorityClassInfo("low", 0)


def low_running(name: str, node_name: str, started: float, limit: int | None,
                queue: str = "default") -> list[object]:  # fmt: skip
    """A low-priority 8-GPU gang of one pod on `node_name`."""
    return [pod(f"{name}-0", gpus=8, group=name, node_name=node_name, started_at=started),
            group(name, 1, priority_class_name="low", runtime_limit_seconds=limit,
                  queue=queue)]  # fmt: skip


def high_waiting(name: str = "urgent", gpus: int = 8, queue: str = "default",
                 priority: str = "high") -> list[object]:  # fmt: skip
    return [pod(f"{name}-0", gpus=gpus, group=name),
            group(name, 1, priority_class_name=priority, queue=queue, creation=1.0)]


def run(*items: object, now: float, config: SchedulerConfig | None = None) -> CycleResult:
    flat: list[object] = [HIGH, LOW]
    for item in items:
        flat.extend(item if isinstance(item, list) else [item])
    return run_cycle(snapshot_of(flat), config, now)


def test_a_gang_that_would_wait_briefly_does_not_evict_an_hour_of_work() -> None:
    """`old` ran an hour (8 GPU-h of work) and reaches its limit in 400 s: the urgent
    gang's 8 GPUs would wait 0.9 GPU-h, less than a third of what evicting `old` loses.
    It waits, with n0 reserved from `old`'s end, and says why; with the factor 0 (the
    rule before it) it evicts."""
    items = ([node("n0")], low_running("old", "n0", started=0.0, limit=4000), high_waiting())
    result = run(*items, now=3600.0)
    assert result.evictions == () and not result.bindings
    urgent = decision(result, "default/urgent")
    assert urgent.nomination is not None and urgent.nomination.reason == "Reserved"
    assert urgent.nomination.start == 4000.0
    assert (
        "it waits rather than evict 1 pod of 1 group (default/old; priority <= 0): they "
        "would lose 8.0 GPU-h of work, more than 1/3 of the 0.9 GPU-h its 8 GPUs wait "
        "until its expected start at 01:06 UTC from runtime limits" in urgent.message
    )
    always = run(*items, now=3600.0, config=SchedulerConfig(preemption_loss_factor=0.0))
    assert {e.group for e in always.evictions} == {"default/old"}


def test_it_evicts_when_the_wait_saved_outweighs_the_work_lost() -> None:
    """`young` ran 100 s (0.2 GPU-h) and may run 10,000 s more: waiting would cost the
    urgent gang 22 GPU-h, far more than three times the loss."""
    result = run([node("n0")], low_running("young", "n0", started=3500.0, limit=10000),
                 high_waiting(), now=3600.0)  # fmt: skip
    assert {e.group for e in result.evictions} == {"default/young"}
    assert "preempting" in decision(result, "default/urgent").message


def test_the_factor_weighs_the_gangs_own_gpus() -> None:
    """The same hour-old victim, 400 s from its limit: a 1-GPU gang's wait is worth 0.1
    GPU-h, still too little; a factor small enough lets it evict."""
    items = ([node("n0")], low_running("old", "n0", started=0.0, limit=4000),
             high_waiting(gpus=1))  # fmt: skip
    assert run(*items, now=3600.0).evictions == ()
    lenient = SchedulerConfig(preemption_loss_factor=0.01)
    assert run(*items, now=3600.0, config=lenient).evictions != ()


def test_without_a_known_start_it_evicts_as_before() -> None:
    """Work with no runtime limit in the way: no start to weigh against, so it evicts."""
    result = run([node("n0")], low_running("old", "n0", started=0.0, limit=None),
                 high_waiting(), now=3600.0)  # fmt: skip
    assert {e.group for e in result.evictions} == {"default/old"}


def test_reclaim_below_a_guarantee_is_never_held_back() -> None:
    """team-a has 8 GPUs guaranteed and runs nothing: it reclaims n0 from team-b (no
    guarantee), however much work that loses and however soon team-b's gang ends."""
    gpus = {"nvidia.com/gpu": 8000}
    queues = [QueueInfo("team-a", guarantee=gpus), QueueInfo("team-b")]
    result = run([node("n0")], queues,
                 low_running("old", "n0", started=0.0, limit=4000, queue="team-b"),
                 high_waiting(queue="team-a", priority="low"), now=3600.0)  # fmt: skip
    assert {(e.group, e.reason) for e in result.evictions} == {("default/old", "Reclaimed")}


def test_a_queue_over_its_capability_weighs_the_loss_too() -> None:
    """A gang its queue's capability keeps out would evict `old` of its own queue to get
    under it: the same weighing keeps `old`, and the message says why."""
    queue = QueueInfo("team", capability={"nvidia.com/gpu": 8000})
    items = ([node("n0"), node("n1")], queue,
             low_running("old", "n0", started=0.0, limit=4000, queue="team"),
             high_waiting(queue="team"))  # fmt: skip
    result = run(*items, now=3600.0)
    assert result.evictions == ()
    assert "it waits rather than evict" in decision(result, "default/urgent").message
    always = run(*items, now=3600.0, config=replace(SchedulerConfig(), preemption_loss_factor=0))
    assert {e.group for e in always.evictions} == {"default/old"}
