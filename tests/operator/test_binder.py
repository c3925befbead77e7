"""The writer: the plan on the first binding, all of a gang concurrently (bounded),
failures rolled back."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

from operator_fakes import FakeApi, pod

from manual_clock import turns
from phalanx.core.model.names import PLAN_ANNOTATION
from phalanx.operator.assumed import AssumedPods
from phalanx.operator.binder import GangBinder
from phalanx.operator.kube.client import JSON, Reply


def gang(n: int) -> tuple[dict[str, str], dict[str, dict]]:
    assignments = {f"ns/p{i}": f"n{i % 4}" for i in range(n)}
    pods = {key: pod(key.split("/")[1]) for key in assignments}
    return assignments, pods


class HeldApi(FakeApi):
    """Notes each request as it is sent, and answers none before `release`."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, Any]] = []
        self.release = asyncio.Event()

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = JSON) -> Reply:
        self.sent.append((path, body))
        await self.release.wait()
        return await super().request(method, path, body, content_type)


async def test_the_plan_rides_on_the_first_binding_sent_and_the_rest_do_not_wait_for_it():
    api, assumed = HeldApi(), AssumedPods(60)
    assignments, pods = gang(4)
    writer = GangBinder(api, assumed, 4)
    task = asyncio.create_task(writer.place_gang("ns/g", assignments, pods, plan="PLAN"))
    await turns()
    assert len(api.sent) == 4  # all in flight at once, none answered yet
    assert api.sent[0][1]["metadata"]["name"] == "p0"
    assert api.sent[0][1]["metadata"]["annotations"] == {PLAN_ANNOTATION: "PLAN"}
    assert all("annotations" not in body["metadata"] for _, body in api.sent[1:])
    assert all(assumed.node_of(k) == v for k, v in assignments.items())
    api.release.set()
    outcome = await task
    assert len(outcome.placed) == 4 and not outcome.failed
    bindings = [body for m, p, body in api.calls if p.endswith("/binding")]
    assert {(b["metadata"]["name"], b["target"]["name"]) for b in bindings} == {
        (k.split("/")[1], v) for k, v in assignments.items()}
    assert writer.in_flight == 0


async def test_requests_in_flight_are_bounded():
    api = FakeApi()
    assignments, pods = gang(64)
    await GangBinder(api, AssumedPods(60), 8).place_gang("ns/g", assignments, pods)
    assert api.max_in_flight <= 8
    assert len(api.paths("POST")) == 64


async def test_failed_bindings_are_not_assumed_and_reported():
    api, assumed = FakeApi(), AssumedPods(60)
    api.fail(lambda m, p: p.endswith("/pods/p1/binding"), 409)
    assignments, pods = gang(4)
    outcome = await GangBinder(api, assumed, 4).place_gang("ns/g", assignments, pods)
    assert set(outcome.failed) == {"ns/p1"} and outcome.partial
    assert "ns/p1" not in assumed and "ns/p0" in assumed


async def test_gated_pods_are_pinned_and_ungated_instead_of_bound():
    api = FakeApi()
    pods = {"ns/a": pod("a", gated=True, scheduler="default-scheduler")}
    await GangBinder(api, AssumedPods(60), 4).place_gang("ns/g", {"ns/a": "n9"}, pods)
    patches = [(p, b) for m, p, b in api.calls if m == "PATCH" and p.endswith("/pods/a")]
    assert len(patches) == 1 and api.paths("POST") == []
    assert patches[0][1]["spec"]["schedulingGates"] is None


async def test_gpu_devices_are_written_with_the_bind_and_the_ungate_and_assumed():
    """Crash-consistent: the devices ride on the same write that places the pod (the API
    server copies a Binding's annotations onto the pod), and the assumed pod shows them."""
    from phalanx.core.parse import parse_pod

    api, assumed = FakeApi(), AssumedPods(60)
    pods = {"ns/a": pod("a", containers=[]), "ns/b": pod("b", gated=True, containers=[])}
    outcome = await GangBinder(api, assumed, 4).place_gang(
        "ns/g", {"ns/a": "n1", "ns/b": "n2"}, pods, devices={"ns/a": "3", "ns/b": "0,1"})
    assert sorted(outcome.placed) == ["ns/a", "ns/b"]
    written = {path.split("/pods/")[1].split("/")[0]: body for _, path, body in api.calls}
    index = "scheduling.phalanx.io/gpu-index"
    assert written["a"]["metadata"]["annotations"] == {index: "3"}
    assert written["b"]["metadata"]["annotations"] == {index: "0,1"}
    shown = [assumed.shown(parse_pod(p)) for p in pods.values()]
    assert [(p.node_name, p.gpu_devices) for p in shown] == [("n1", (3,)), ("n2", (0, 1))]


async def test_a_gang_is_written_as_one_burst_not_interleaved_with_the_next():
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 8)
    first, first_pods = gang(6)
    second = {f"ns/q{i}": "n1" for i in range(6)}
    second_pods = {key: pod(key.split("/")[1]) for key in second}
    await asyncio.gather(binder.place_gang("ns/a", first, first_pods),
                         binder.place_gang("ns/b", second, second_pods))
    names = [path.split("/")[-2] for path in api.paths("POST")]
    # all six of the first gang were sent together (6 slots of 8), the second waited
    # for six free slots rather than taking the two left over
    assert sorted(names[:6]) == sorted(k.split("/")[1] for k in first)
    assert api.max_in_flight == 6 and binder.in_flight == 0


async def test_a_gang_larger_than_the_bound_uses_every_slot_and_gives_them_back():
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 8)
    assignments, pods = gang(20)
    outcome = await binder.place_gang("ns/g", assignments, pods)
    assert len(outcome.placed) == 20 and api.max_in_flight == 8
    small, small_pods = gang(3)
    await binder.place_gang("ns/h", small, small_pods)  # the slots came back
    assert binder.in_flight == 0


def ticking() -> Callable[[], float]:
    """A clock one second later at every reading: every reply looks slow."""
    moments = itertools.count()
    return lambda: float(next(moments))


def small_gangs(count: int, size: int, prefix: str) -> list[tuple[str, dict[str, str], dict]]:
    gangs = []
    for g in range(count):
        assignments = {f"ns/{prefix}{g}-{i}": "n1" for i in range(size)}
        gangs.append((f"ns/{prefix}{g}", assignments,
                      {k: pod(k.split("/")[1]) for k in assignments}))
    return gangs


async def test_slow_replies_leave_fewer_bindings_in_flight_for_the_next_gangs():
    api = FakeApi()
    api.delay = 0  # the replies in the order sent, as a server busy with them alone
    binder = GangBinder(api, AssumedPods(60), 256, ticking(), reply_target_seconds=0.5,
                        first_limit=64)
    assert binder.in_flight_limit == 64
    await asyncio.gather(*(binder.place_gang(*g) for g in small_gangs(40, 8, "a")))
    assert binder.in_flight_limit == 32  # a quarter less every other window, to the floor
    api.max_in_flight = 0
    await asyncio.gather(*(binder.place_gang(*g) for g in small_gangs(16, 8, "b")))
    assert api.max_in_flight == 32


async def test_a_gang_going_alone_sends_every_pod_at_once_whatever_the_bound():
    api = FakeApi()
    api.delay = 0  # the replies in the order sent, as a server busy with them alone
    binder = GangBinder(api, AssumedPods(60), 256, ticking(), reply_target_seconds=0.5,
                        first_limit=64)
    await asyncio.gather(*(binder.place_gang(*g) for g in small_gangs(40, 8, "a")))
    assert binder.in_flight_limit == 32
    api.max_in_flight = 0
    assignments, pods = gang(100)
    outcome = await binder.place_gang("ns/big", assignments, pods)
    assert len(outcome.placed) == 100 and api.max_in_flight == 100


async def test_quick_replies_while_gangs_wait_raise_the_bound_to_the_ceiling():
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 128, lambda: 0.0, reply_target_seconds=0.5)
    await asyncio.gather(*(binder.place_gang(*g) for g in small_gangs(80, 8, "g")))
    assert binder.in_flight_limit == 128


async def test_a_gang_that_fits_the_starting_bound_shares_it_while_the_bound_climbs():
    """Alone from half the configured bound, not half the limit: while the limit is at a
    quarter of it, a gang of 40 (more than half of 64, less than half of 256) is sent
    beside a smaller one rather than waiting for the pipe to drain and holding it."""
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 256, lambda: 0.0, reply_target_seconds=0.5,
                        first_limit=64)
    assert binder.in_flight_limit == 64
    small = {f"ns/s{i}": "n1" for i in range(10)}
    await asyncio.gather(
        binder.place_gang("ns/small", small, {k: pod(k.split("/")[1]) for k in small}),
        binder.place_gang("ns/big", *gang(40)))
    assert api.max_in_flight == 50
    assert binder.in_flight == 0


async def test_the_bound_starts_whole_or_where_it_is_told():
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 256, lambda: 0.0, reply_target_seconds=0.5)
    assert binder.in_flight_limit == 256
    await asyncio.gather(*(binder.place_gang(*g) for g in small_gangs(32, 8, "g")))
    assert api.max_in_flight == 256  # every gang's bindings out together from the start
    told = GangBinder(FakeApi(), AssumedPods(60), 256, lambda: 0.0, reply_target_seconds=0.5,
                      first_limit=64)
    assert told.in_flight_limit == 64


async def test_a_gang_larger_than_the_limit_still_goes_alone_with_every_pod_at_once():
    api = FakeApi()
    binder = GangBinder(api, AssumedPods(60), 256, lambda: 0.0, reply_target_seconds=0.5,
                        first_limit=64)
    small = {f"ns/s{i}": "n1" for i in range(10)}
    await asyncio.gather(
        binder.place_gang("ns/small", small, {k: pod(k.split("/")[1]) for k in small}),
        binder.place_gang("ns/big", *gang(100)))  # 100 > the limit of 64, < 128
    assert api.max_in_flight == 100  # alone: none of the small gang's beside it
