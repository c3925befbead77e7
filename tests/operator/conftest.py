"""The operator under test, run in-process on the test's event loop against the real cluster."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from phalanx.cluster import LocalCluster
from phalanx.operator.client import load_configuration
from phalanx.operator.main import Operator
from phalanx.operator.settings import OperatorConfig

FAST = OperatorConfig(
    debounce_seconds=0.1,
    max_delay_seconds=0.5,
    period_seconds=1.0,
    backoff_initial_seconds=1.0,
    backoff_max_seconds=4.0,
    partial_grace_seconds=5.0,
)


@pytest.fixture
async def phalanx(cluster: LocalCluster) -> AsyncIterator[Operator]:
    """A running operator (mode both) whose cache is synced and first cycle is done."""
    configuration = await load_configuration(str(cluster.kubeconfig))
    operator = Operator(configuration, FAST)
    stop = asyncio.Event()
    task = asyncio.create_task(operator.run(stop=stop))
    deadline = asyncio.get_running_loop().time() + 60
    while operator.loop.cycles == 0:
        if task.done():
            task.result()
        assert asyncio.get_running_loop().time() < deadline, "operator did not start"
        await asyncio.sleep(0.1)
    yield operator
    stop.set()
    await asyncio.wait_for(task, 60)
    assert operator.loop.errors == 0
