"""An in-memory stand-in for the Lease API, with the semantics election relies on."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from typing import Any

PATH = "/apis/coordination.k8s.io/v1/namespaces/phalanx-system/leases"


@dataclass
class Reply:
    status: int
    body: dict[str, Any]


@dataclass
class FakeLeases:
    """The API server's Lease semantics that matter: create once, update needs the
    current resourceVersion (else 409)."""

    lease: dict[str, Any] | None = None
    version: int = 0
    down: bool = False
    hang: bool = False  # requests never answer (a stuck connection)
    writes: list[str] = field(default_factory=list)

    async def request(self, method: str, path: str, body: Any = None) -> Reply:
        await asyncio.sleep(0)  # a real request suspends: lets candidates interleave
        if self.hang:
            await asyncio.Event().wait()
        if self.down:
            return Reply(503, {})
        if method == "GET":
            return Reply(200, copy.deepcopy(self.lease)) if self.lease else Reply(404, {})
        if method == "POST":
            if self.lease is not None:
                return Reply(409, {})
            return self._store(body)
        if method == "PUT":
            assert self.lease is not None and path == f"{PATH}/phalanx-leader"
            if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
                return Reply(409, {})
            return self._store(body)
        raise AssertionError(method)

    def _store(self, body: dict[str, Any]) -> Reply:
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        self.writes.append(body["spec"]["holderIdentity"])
        return Reply(201, copy.deepcopy(self.lease))

    @property
    def holder(self) -> str:
        return str(self.lease["spec"]["holderIdentity"]) if self.lease else ""

    def take(self, holder: str) -> None:
        """Another replica writes the lease behind the candidates' backs."""
        assert self.lease is not None
        self.lease["spec"]["holderIdentity"] = holder
        self.version += 1
        self.lease["metadata"]["resourceVersion"] = str(self.version)
