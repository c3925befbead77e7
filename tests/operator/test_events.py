"""Events as `kubectl describe` finds them: involvedObject names the object exactly."""

from __future__ import annotations

from operator_fakes import FakeApi, pod, podgroup

from phalanx.operator.events import Event, EventRecorder, event_body


def test_an_event_on_a_pod_refers_to_a_v1_pod():
    body = event_body(Event(pod("w-0"), "Warning", "GroupNotFound", "no group"), 10.0, "me")
    involved = body["involvedObject"]
    assert (involved["apiVersion"], involved["kind"], involved["name"]) == ("v1", "Pod", "w-0")
    assert involved["namespace"] == "ns" and involved["uid"] == "uid-w-0"


def test_an_event_on_a_podgroup_refers_to_the_podgroup():
    body = event_body(Event(podgroup(), "Normal", "Admitted", "admitted"), 10.0, "me")
    involved = body["involvedObject"]
    assert (involved["apiVersion"], involved["kind"]) == ("scheduling.phalanx.io/v1alpha1",
                                                          "PodGroup")


async def test_the_same_thing_is_said_once_per_object_and_topic():
    api = FakeApi()
    recorder = EventRecorder(api)
    group = podgroup()
    for _ in range(3):
        await recorder.post(Event(group, "Warning", "NoDomainFits", "no rack", "scheduling"), 1.0)
    await recorder.post(Event(group, "Warning", "NoDomainFits", "still no rack", "scheduling"), 2.0)
    await recorder.post(Event(pod("x"), "Warning", "NoDomainFits", "no rack", "scheduling"), 2.0)
    assert recorder.posted == 3
