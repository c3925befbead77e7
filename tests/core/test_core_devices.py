"""GPU devices in the core: fractional pods share one device, whole-GPU pods take only
devices nothing holds, and the chosen devices come out in the bindings and back in from
the pods' annotation."""

from __future__ import annotations

from dataclasses import replace

from core_builders import cycle, group, node, pod, racks, snapshot_of, topology

from phalanx.core import GroupTopology, PodInfo
from phalanx.core.model.device_share import DeviceShare
from phalanx.core.model.inputs import SubGroupSpec
from phalanx.core.model.names import GPU_MEMORY_LABEL
from phalanx.core.model.result import Binding
from phalanx.core.placement.state import CycleState
from phalanx.core.snapshot.device_choice import choose_devices
from phalanx.core.snapshot.devices import device_usage


def share(name: str, milli: int, **fields: object) -> PodInfo:
    return pod(name, gpus=0, gpu_milli=milli, **fields)


def devices_of(bindings: tuple[Binding, ...]) -> dict[str, tuple[tuple[int, int], ...]]:
    return {b.pod: tuple((d.index, d.milli) for d in b.devices) for b in bindings}


def test_fractions_fill_one_device_before_starting_another() -> None:
    pods = [share("a", 500), share("b", 250), share("c", 250), share("d", 500)]
    result = cycle(node("n", gpus=2), pods)
    assert devices_of(result.bindings) == {
        "default/a": ((0, 500),),
        "default/b": ((0, 250),),
        "default/c": ((0, 250),),
        "default/d": ((1, 500),),
    }


def test_whole_gpu_pod_never_takes_a_device_with_a_fraction_on_it() -> None:
    running = share("small", 100, node_name="n", gpu_devices=(0,))
    result = cycle(node("n", gpus=1), running, pod("whole", gpus=1))
    assert result.bindings == ()
    other = cycle(node("n", gpus=2), running, pod("whole", gpus=1))
    assert devices_of(other.bindings) == {"default/whole": ((1, 1000),)}


def test_whole_gpu_pods_list_every_device_they_take() -> None:
    running = pod("busy", gpus=1, node_name="n", gpu_devices=(2,))
    result = cycle(node("n", gpus=4), running, pod("two", gpus=2))
    assert devices_of(result.bindings) == {"default/two": ((0, 1000), (1, 1000))}


def test_usage_is_rebuilt_from_the_annotation_the_pods_carry() -> None:
    held = share("held", 500, node_name="n", gpu_devices=(1,))
    result = cycle(node("n", gpus=2), held, share("new", 500))
    assert devices_of(result.bindings) == {"default/new": ((1, 500),)}


def test_a_fraction_too_big_for_every_partly_used_device_takes_a_free_one() -> None:
    held = [share("h0", 600, node_name="n", gpu_devices=(0,)), share("h1", 300, node_name="n")]
    result = cycle(node("n", gpus=2), held, share("new", 500))
    assert devices_of(result.bindings) == {"default/new": ((1, 500),)}


def test_no_room_on_any_device_means_the_pod_waits() -> None:
    held = [share(f"h{i}", 600, node_name="n", gpu_devices=(i,)) for i in range(2)]
    result = cycle(node("n", gpus=2), held, share("new", 500))
    assert result.bindings == ()
    assert not result.groups[-1].scheduled


def test_a_mixed_gang_takes_whole_devices_and_shares_another() -> None:
    pods = [
        pod("mix-0", gpus=1, group="mix"),
        share("mix-1", 500, group="mix"),
        share("mix-2", 500, group="mix"),
    ]
    result = cycle(node("n", gpus=2), pods, group("mix", 3))
    assert devices_of(result.bindings) == {
        "default/mix-0": ((0, 1000),),
        "default/mix-1": ((1, 500),),
        "default/mix-2": ((1, 500),),
    }


def mixed_gang(name: str, halves: int) -> list[PodInfo]:
    """A whole-GPU pod then `halves` half-GPU pods, one gang."""
    return [pod(f"{name}-0", gpus=1, group=name),
            *(share(f"{name}-{i}", 500, group=name) for i in range(1, halves + 1))]


def test_a_mixed_gang_keeps_to_its_required_rack() -> None:
    """A whole GPU and two halves (2 GPUs) on nodes of one GPU. Rack r0 comes first and has
    half a GPU shared already: it holds the whole-GPU pod and one half only, so the gang
    goes to r1. With half a GPU shared in r1 too no rack holds it, and it waits whole,
    though the cluster does hold it (control: without the rack the same gang binds, across
    both racks, since neither holds it alone)."""
    nodes = racks(2, 2, gpus=1)
    rack_of = {n.name: n.labels["rack"] for n in nodes}
    held = [share("held-0", 500, node_name="n-0-0-1", gpu_devices=(0,))]
    shape = topology("default", "rack", "host")
    result = cycle(nodes, shape, held, group("mix", 3, required="rack"), mixed_gang("mix", 2))
    assert {rack_of[b.node] for b in result.bindings} == {"r1"}
    assert len(result.bindings) == 3
    held.append(share("held-1", 500, node_name="n-0-1-1", gpu_devices=(0,)))
    result = cycle(nodes, shape, held, group("mix", 3, required="rack"), mixed_gang("mix", 2))
    assert result.bindings == ()
    control = cycle(nodes, shape, held, group("mix", 3), mixed_gang("mix", 2))
    assert {rack_of[b.node] for b in control.bindings} == {"r0", "r1"}
    assert len(control.bindings) == 3


def test_every_sub_group_of_a_mixed_gang_shares_one_host() -> None:
    """Sub-groups of 2 on one host each: (whole, half) and (half, half). Where no host
    holds a whole GPU and a half, the gang waits whole (control: without sub-groups the
    same gang binds, its first pair on two hosts, since no host holds it)."""
    pairs = GroupTopology(sub_group=SubGroupSpec(size=2, required="host"))
    shape = topology("default", "rack", "host")
    held = share("held", 500, node_name="n-0-0-0", gpu_devices=(0,))
    result = cycle(racks(1, 4, gpus=2), shape, held, group("job", 4, topology=pairs),
                   mixed_gang("job", 3))
    where = {b.pod: b.node for b in result.bindings}
    assert len(where) == 4
    assert where["default/job-0"] == where["default/job-1"]
    assert where["default/job-2"] == where["default/job-3"]
    # one GPU a node: n-0-0-0 has a whole one free, the others half of a shared one
    nodes = racks(1, 4, gpus=1)
    halves = [share(f"held-{h}", 500, node_name=f"n-0-0-{h}", gpu_devices=(0,))
              for h in range(1, 4)]
    result = cycle(nodes, shape, halves, group("job", 4, topology=pairs), mixed_gang("job", 3))
    assert result.bindings == ()
    control = cycle(nodes, shape, halves, group("job", 4), mixed_gang("job", 3))
    where = {b.pod: b.node for b in control.bindings}
    assert len(where) == 4
    assert where["default/job-0"] != where["default/job-1"]


def test_a_mixed_gang_that_needs_one_more_device_waits_whole() -> None:
    pods = [pod("mix-0", gpus=1, group="mix"), share("mix-1", 600, group="mix")]
    pods.append(share("mix-2", 600, group="mix"))
    result = cycle(node("n", gpus=2), pods, group("mix", 3))
    assert result.bindings == ()


def test_gpu_memory_is_a_part_of_the_node_gpu_memory() -> None:
    labelled = node("big", gpus=1, labels={GPU_MEMORY_LABEL: "80000"})
    request = pod("mem", gpus=0, gpu_memory=20000)
    result = cycle(labelled, request)
    assert devices_of(result.bindings) == {"default/mem": ((0, 250),)}


def test_gpu_memory_never_lands_on_a_node_of_unknown_or_smaller_gpu_memory() -> None:
    unknown = node("unknown", gpus=8)
    small = node("small", gpus=8, labels={GPU_MEMORY_LABEL: "16000"})
    result = cycle(unknown, small, pod("mem", gpus=0, gpu_memory=20000))
    assert result.bindings == ()


def test_fractional_pods_never_land_on_cpu_only_nodes() -> None:
    result = cycle(node("cpu", gpus=0), share("s", 100))
    assert result.bindings == ()


def test_fractional_pods_pack_onto_the_partly_used_node() -> None:
    held = share("held", 500, node_name="b", gpu_devices=(3,))
    # the other half of device 3 (a 250 there would leave 250 that no 500 can use)
    result = cycle(node("a", gpus=8), node("b", gpus=8), held, share("new", 500))
    assert [(b.node, b.devices) for b in result.bindings] == [("b", (DeviceShare(3, 500),))]


def test_preemption_for_a_whole_gpu_evicts_the_least_gpu_work() -> None:
    """Either GPU can be freed: the whole-GPU pod on device 0 (1 GPU of work) or both
    fractions on device 1 (0.9 GPU): the fewest GPUs go, as for any victims."""
    running = [
        pod("low", gpus=1, node_name="n", gpu_devices=(0,), priority=0),
        share("s-0", 500, node_name="n", gpu_devices=(1,), priority=0),
        share("s-1", 400, node_name="n", gpu_devices=(1,), priority=0),
    ]
    result = cycle(node("n", gpus=2), running, pod("urgent", gpus=1, priority=100))
    assert sorted(e.pod for e in result.evictions) == ["default/s-0", "default/s-1"]
    running[2] = share("s-1", 400, node_name="n", gpu_devices=(1,), priority=500)
    result = cycle(node("n", gpus=2), running, pod("urgent", gpus=1, priority=100))
    assert [e.pod for e in result.evictions] == ["default/low"]


def test_rebuild_places_annotated_pods_first_and_unannotated_whole_pods_on_free_devices() -> None:
    pods = [
        pod("a-whole", gpus=2, node_name="n"),
        share("b-frac", 250, node_name="n", gpu_devices=(0,)),
        share("c-frac", 250, node_name="n"),
    ]
    usage = device_usage(node("n", gpus=4), pods)
    assert usage.used == (500, 1000, 1000, 0)
    assert usage.shares["default/a-whole"] == (DeviceShare(1, 1000), DeviceShare(2, 1000))


def test_a_bad_annotation_is_ignored_not_trusted() -> None:
    pods = [replace(share("a", 250, node_name="n"), gpu_devices=(9,))]
    usage = device_usage(node("n", gpus=2), pods)
    assert usage.used == (250, 0)


def test_choose_devices_is_best_fit_with_ties_to_the_lowest_index() -> None:
    assert choose_devices([0, 500, 900, 500], 100, 1) == (2,)
    assert choose_devices([0, 500, 950, 500], 100, 1) == (1,)
    assert choose_devices([0, 500, 0, 0], 1000, 2) == (0, 2)
    assert choose_devices([0, 500, 1000], 1000, 2) is None


def test_a_whole_gpu_pod_waiting_on_shared_gpus_is_told_so_with_numbers() -> None:
    """Each node has 3 GPUs free, but in quarters of 4 shared GPUs: packed, they would
    take the 2-GPU pod; as they are, no node can."""
    held = [share(f"h{n}{i}", 250, node_name=n, gpu_devices=(i,)) for n in "ab" for i in range(4)]
    result = cycle([node(n, gpus=4) for n in "ab"], held, pod("two", gpus=2))
    message = result.decision("default/two").message
    assert ("2 node(s) have 6 GPUs free but only 0 whole: the rest are parts of GPUs shared "
            "by fractional pods (each pod needs 2 whole)") in message


def test_no_fragmentation_sentence_when_packing_the_fractions_would_not_help() -> None:
    """One GPU of fractions per node, spread over 4 GPUs: 7 GPUs free, never 8."""
    held = [share(f"h{n}{i}", 250, node_name=n, gpu_devices=(i,)) for n in "ab" for i in range(4)]
    result = cycle([node(n, gpus=8) for n in "ab"], held, pod("big", gpus=8))
    assert "shared" not in result.decision("default/big").message


def test_no_fragmentation_sentence_when_no_gpu_is_shared() -> None:
    busy = [pod(f"b{n}", gpus=4, node_name=n) for n in "ab"]
    result = cycle([node(n, gpus=8) for n in "ab"], busy, pod("big", gpus=8))
    assert "shared" not in result.decision("default/big").message


def test_a_waiting_fraction_says_what_it_asks_and_why_nodes_refuse() -> None:
    held = [share(f"h{i}", 600, node_name="n", gpu_devices=(i,)) for i in range(2)]
    result = cycle(node("n", gpus=2), node("c", gpus=0), held, share("new", 500))
    message = result.decision("default/new").message
    assert message.startswith("needs 1 pod of 0.5 of a GPU, 1 cpu; 0 fit in the cluster.")
    assert "1 node(s) had no GPU with that much free" in message
    memory = cycle(node("n", gpus=2), pod("mem", gpus=0, gpu_memory=5000))
    assert "1 node(s) had no nvidia.com/gpu.memory label" in memory.decision(
        "default/mem").message


def test_fractions_count_against_the_queue_capability_by_the_part_they_ask() -> None:
    from phalanx.core import QueueInfo

    team = QueueInfo("team", capability={"nvidia.com/gpu": 1000})
    running = share("r", 300, node_name="n", gpu_devices=(0,), group="run")
    waiting = [share(f"w{i}", 300, group=f"w{i}", creation=float(i)) for i in range(3)]
    groups = [group(g, 1, queue="team") for g in ("run", "w0", "w1", "w2")]
    result = cycle(node("n", gpus=4), running, waiting, groups, team)
    assert sorted(b.pod for b in result.bindings) == ["default/w0", "default/w1"]
    assert result.decision("default/w2").reason == "QueueCapability"


def test_a_whole_gpu_preemptor_evicts_the_fractions_sharing_one_gpu() -> None:
    held = [share(f"low{i}", 500, node_name="n", gpu_devices=(0,), priority=0) for i in range(2)]
    result = cycle(node("n", gpus=1), held, pod("high", gpus=1, priority=100))
    assert sorted(e.pod for e in result.evictions) == ["default/low0", "default/low1"]


def test_only_the_gpu_whose_sharers_may_all_go_is_freed() -> None:
    """Device 1 also holds a pod of higher priority: evicting its low sharer frees nothing."""
    held = [share("low0", 500, node_name="n", gpu_devices=(0,), priority=0),
            share("low1", 500, node_name="n", gpu_devices=(1,), priority=0),
            share("mid", 500, node_name="n", gpu_devices=(1,), priority=200)]
    result = cycle(node("n", gpus=2), held, pod("high", gpus=1, priority=100))
    assert [e.pod for e in result.evictions] == ["default/low0"]


def test_a_fractional_preemptor_evicts_one_sharer_not_a_whole_gpu_pod() -> None:
    held = [share("low-part", 500, node_name="n", gpu_devices=(0,), priority=0),
            share("mid-part", 500, node_name="n", gpu_devices=(0,), priority=200),
            pod("low-whole", gpus=1, node_name="n", gpu_devices=(1,), priority=0)]
    result = cycle(node("n", gpus=2), held, share("high", 500, priority=100))
    assert len(result.evictions) == 1


def test_gpu_memory_above_every_gpu_is_unresolvable_and_says_so() -> None:
    from phalanx.core.model.status import StatusCode

    labelled = node("n", gpus=8, labels={GPU_MEMORY_LABEL: "40000"})
    result = cycle(labelled, pod("huge", gpus=0, gpu_memory=80000))
    decision = result.decision("default/huge")
    assert decision.code == StatusCode.UNRESOLVABLE
    assert "1 node(s) had GPUs with less memory than asked" in decision.message


def test_gpu_memory_pods_count_against_the_queue_by_the_part_they_take() -> None:
    """Placed: the part of its node's GPU (20000 of 80000 MiB: 0.25); waiting: a whole
    GPU, the most it can take, since its part depends on the node it lands on."""
    from phalanx.core import QueueInfo

    big = node("n", gpus=4, labels={GPU_MEMORY_LABEL: "80000"})
    team = QueueInfo("team", capability={"nvidia.com/gpu": 1250})
    running = pod("r", gpus=0, gpu_memory=20000, node_name="n", gpu_devices=(0,), group="run")
    waiting = [
        pod(f"w{i}", gpus=0, gpu_memory=20000, group=f"w{i}", creation=float(i)) for i in range(2)
    ]
    groups = [group(g, 1, queue="team") for g in ("run", "w0", "w1")]
    result = cycle(big, running, waiting, groups, team)
    assert [b.pod for b in result.bindings] == ["default/w0"]
    assert result.decision("default/w1").reason == "QueueCapability"


def test_charged_gives_a_gpu_memory_pod_its_part_on_its_node_and_a_whole_gpu_before() -> None:
    from phalanx.core.snapshot.resources import charged

    big = node("n", gpus=4, labels={GPU_MEMORY_LABEL: "80000"})
    placed = pod("p", gpus=0, gpu_memory=20000, node_name="n")
    assert charged(placed, {"n": big})["nvidia.com/gpu"] == 250
    assert charged(replace(placed, node_name=None), {"n": big})["nvidia.com/gpu"] == 1000
    assert charged(share("f", 300))["nvidia.com/gpu"] == 300


def test_a_running_fraction_taken_off_and_put_back_twice_keeps_its_device() -> None:
    """Preemption trials take running pods off a node and put them back, once per
    candidate they confirm; each time they must return to the device they run on (a
    repacked copy would show a device free that is not, and a whole-GPU pod bound to it)."""
    from phalanx.core.placement.state import CycleState
    from phalanx.core.snapshot.index import ClusterIndex

    held = [share("a", 500, node_name="n", gpu_devices=(0,)),
            share("b", 500, node_name="n", gpu_devices=(1,))]
    state = CycleState(ClusterIndex(snapshot_of([node("n", gpus=2), *held])))
    for _ in range(2):
        for running in held:
            state.unplace(0, running)
        for running in held:
            state.place(0, running)
        assert state.devices(0) == [500, 500]
        assert state.free[0]["nvidia.com/gpu"] == 0


def test_two_whole_gpu_pods_written_on_one_device_hold_two_devices() -> None:
    """The kubelet gives each whole GPU to one pod, whatever the annotation says: the
    rebuilt picture frees as many whole devices as the node's GPU count, so the state
    counts the same room before and after it lists the node's devices."""
    pods = [
        pod("a", gpus=1, node_name="n", gpu_devices=(0,)),
        pod("b", gpus=1, node_name="n", gpu_devices=(0,)),
    ]
    usage = device_usage(node("n", gpus=4), pods)
    assert usage.used == (1000, 1000, 0, 0)
    assert usage.shares["default/b"] == (DeviceShare(1, 1000),)
    state = CycleState(snapshot_of([node("n", gpus=4), *pods]).index)
    unlisted = state.slots(0, 500)
    state.devices(0)
    assert unlisted == state.slots(0, 500) == 4


def test_fractions_written_on_one_device_stay_there_even_over_committed() -> None:
    pods = [
        share("a", 600, node_name="n", gpu_devices=(0,)),
        share("b", 600, node_name="n", gpu_devices=(0,)),
    ]
    assert device_usage(node("n", gpus=2), pods).used == (1200, 0)


def test_slots_remembered_by_device_content_follow_each_node_as_it_changes() -> None:
    """`known_slots` is shared by nodes and cycles with the same devices: a fraction
    placed on one of two alike nodes changes that node's slots alone, and taking it off
    gives the first answer back; each answer is the one counted from the devices afresh."""
    from phalanx.core.snapshot.devices import slots

    held = [share("a", 500, node_name="n1", gpu_devices=(0,)),
            share("b", 500, node_name="n2", gpu_devices=(0,))]
    state = CycleState(snapshot_of([node("n1", gpus=2), node("n2", gpus=2), *held]).index)
    assert state.slots(0, 250) == state.slots(1, 250) == 6
    extra = share("c", 250)
    state.place(0, extra)
    assert [state.slots(i, 250) for i in (0, 1)] == [5, 6]
    assert all(state.slots(i, 250) == slots(list(state.devices(i)), 250) for i in (0, 1))
    state.unplace(0, extra)
    assert state.slots(0, 250) == 6


def test_new_fractional_shapes_count_each_node_as_its_devices_are_now() -> None:
    """A fractional shape's counts are capped by per-node device slots that the state
    keeps per part of a device (`CycleState._rooms`), made for the first shape of that
    part and then brought up to date from the nodes listed or moved since: a shape asked
    after placements, a take-back and a node's devices being listed counts every node as
    `slots` counts it afresh."""
    from phalanx.core.snapshot.shapes import fit_count, shape_of

    held = [share("a", 500, node_name="n1", gpu_devices=(0,)),
            pod("w", gpus=1, node_name="n3", gpu_devices=(0,))]
    nodes = [node("n1", gpus=2), node("n2", gpus=2), node("n3", gpus=4), node("n4", gpus=1)]
    state = CycleState(snapshot_of([*nodes, *held]).index)

    def expected(asked: PodInfo) -> list[int]:
        shape = shape_of(asked)
        return [
            min(fit_count(state.free[i], state.pods_free[i], shape.requests), state.slots(i, 250))
            for i in range(len(nodes))
        ]

    first = share("s1", 250, cpu=1)
    assert state.shape(shape_of(first)).node == expected(first) == [6, 8, 12, 4]
    state.place(1, share("x", 250))  # n2's devices change: it is counted one by one now
    state.place(0, share("y", 500))
    state.unplace(0, held[0])  # a running fraction taken off (a preemption trial)
    state.devices(3)  # listed without a move
    later = share("s2", 250, cpu=2)
    assert state.shape(shape_of(later)).node == expected(later) == [6, 7, 12, 4]
    state.place(3, share("z", 750))
    last = share("s3", 250, cpu=3)
    assert state.shape(shape_of(last)).node == expected(last) == [6, 7, 12, 1]
