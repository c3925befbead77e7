"""A minimal synchronous client for the few calls the control plane needs before any
operator runs: readiness probes, bulk node creation, node listing. Standard library only,
so it works from a plain pytest fixture without an event loop.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Response:
    status: int
    body: Any


@dataclass(frozen=True)
class RestClient:
    server: str
    token: str
    ca_cert: Path
    timeout: float = 10.0

    @cached_property
    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_cert))

    def request(self, method: str, path: str, body: Any = None) -> Response:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, context=self._context, timeout=self.timeout) as r:
                return Response(r.status, _decode(r.read()))
        except urllib.error.HTTPError as error:
            return Response(error.code, _decode(error.read()))

    def get(self, path: str) -> Response:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> Response:
        return self.request("POST", path, body)


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return raw.decode(errors="replace")
