"""The operator's API client reads the proxy environment once, not on every request:
aiohttp's per-request lookups (proxy variables, ~/.netrc in a thread) were 30% of the
operator's samples while it bound a 1,000-node backlog (kube/client.py `api_client`)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client as k8s

from phalanx.operator.kube.client import api_client


def configuration(host: str) -> k8s.Configuration:
    config = k8s.Configuration()
    config.host = host
    return config


async def test_a_proxy_from_the_environment_is_kept_and_the_session_stops_looking(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    client = api_client(configuration("https://10.0.0.1:6443"))
    try:
        assert client.rest_client.proxy == "http://proxy.example:3128"
        assert client.rest_client.pool_manager.trust_env is False
    finally:
        await client.close()


async def test_no_proxy_is_honoured_and_a_configured_proxy_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "10.0.0.1")
    bypassed = api_client(configuration("https://10.0.0.1:6443"))
    named = configuration("https://10.0.0.2:6443")
    named.proxy = "http://own.example:8080"
    configured = api_client(named)
    try:
        assert not bypassed.rest_client.proxy
        assert configured.rest_client.proxy == "http://own.example:8080"
    finally:
        await bypassed.close()
        await configured.close()
