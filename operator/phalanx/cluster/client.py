"""An asynchronous kubernetes-asyncio client for a kubeconfig (tests, benchmarks, tools)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kubernetes_asyncio import client, config


@contextlib.asynccontextmanager
async def api_client(kubeconfig: str | Path) -> AsyncIterator[client.ApiClient]:
    """An ApiClient for the kubeconfig's current context, closed on exit."""
    configuration = client.Configuration()
    await config.load_kube_config(
        config_file=str(kubeconfig), client_configuration=configuration
    )
    async with client.ApiClient(configuration=configuration) as api:
        yield api
