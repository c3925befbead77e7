"""Kubernetes Events on PodGroups, one per change of what is being said.

An unschedulable group would otherwise get the same Event every cycle; the recorder
remembers the last (reason, what is said) per object and topic and stays quiet while it holds.
What is said is the message, or `about` when the message carries numbers that move while
the cause stays (a gang's working pods after a node failed): a new Event per cause, not per
number.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping
from typing import Any

from phalanx.core.model.names import COMPONENT, GROUP_VERSION
from phalanx.operator.cache import Body
from phalanx.operator.kube.client import Api

MAX_MESSAGE = 1000  # characters of a condition's or an Event's message


def timestamp(now: float) -> str:
    """RFC 3339 in whole seconds, as Kubernetes writes times."""
    moment = datetime.datetime.fromtimestamp(int(now), tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclasses.dataclass(frozen=True)
class Event:
    involved: Mapping[str, Any]  # the object's body (kind, name, namespace, uid)
    type: str  # Normal | Warning
    reason: str
    message: str
    topic: str = ""  # events of one topic replace each other for deduplication
    about: str = ""  # the cause, for deduplication, when the message has moving numbers


class EventRecorder:
    def __init__(self, api: Api, instance: str = "phalanx-operator") -> None:
        self._api = api
        self._instance = instance
        self._last: dict[tuple[str, str], tuple[str, str]] = {}
        self.posted = 0

    def should_post(self, event: Event) -> bool:
        uid = str(event.involved.get("metadata", {}).get("uid"))
        key = (uid, event.topic or event.reason)
        said = (event.reason, event.about or event.message)
        if self._last.get(key) == said:
            return False
        self._last[key] = said
        return True

    def forget(self, uid: str) -> None:
        for key in [k for k in self._last if k[0] == uid]:
            del self._last[key]

    async def post(self, event: Event, now: float) -> None:
        if not self.should_post(event):
            return
        body = event_body(event, now, self._instance)
        namespace = body["metadata"]["namespace"]
        reply = await self._api.request("POST", f"/api/v1/namespaces/{namespace}/events", body)
        if reply.ok:
            self.posted += 1


def event_body(event: Event, now: float, instance: str) -> dict[str, Any]:
    meta: Body = event.involved.get("metadata", {})
    namespace = meta.get("namespace") or "default"
    stamp = timestamp(now)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{meta.get('name')}.", "namespace": namespace},
        "involvedObject": {
            "apiVersion": event.involved.get("apiVersion", GROUP_VERSION),
            "kind": event.involved.get("kind", "PodGroup"),
            "name": meta.get("name"),
            "namespace": meta.get("namespace"),
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "type": event.type,
        "reason": event.reason,
        "message": event.message[:MAX_MESSAGE],
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }
