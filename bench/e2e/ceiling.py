"""The ceiling contender: the API server's own bind rate on this machine, no decisions.

    python -m bench.e2e.ceiling --kubeconfig FILE --plan PLAN.json [--concurrency N]

It binds the pods of a plan computed before the run's clock started (ceiling_plan.py:
first-fit by requests), as fast as the same client Phalanx's binder uses lets it: the
operator's `KubeApi` over kubernetes-asyncio, its connection pool sized as the operator
sizes it, its request timeout, one `pods/binding` POST per pod with the same body
(`binding_body`, GPU devices included), no client-side rate limit (the operator has none:
no QPS, no burst) and, in flight at once, the operator's `binding_concurrency` (its bound
on bindings in flight, which its adaptive limit never exceeds). Nothing is read or watched,
no PodGroup status is written: what it reaches is the most any binder with these settings
could reach against this API server, and Phalanx's pods per second are read as a share of it.

It prints `ready` once its client is set up, binds, prints what it bound, then waits to be
stopped, so the benchmark reads its CPU and memory at the end of the settle period as it
reads the other contenders'.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from phalanx.config.settings import Settings
from phalanx.operator.binder import binding_body
from phalanx.operator.kube.client import Api, KubeApi, api_client, load_configuration, pod_path
from phalanx.operator.writes import connections_needed

READY = "ready"


Row = tuple[str, str, str, str]  # namespace, pod, node, GPU devices (ceiling_plan.Binding)


async def bind_all(api: Api, plan: Sequence[Row], concurrency: int) -> list[str]:
    """Every binding of `plan`, in its order, `concurrency` requests in flight; the
    failures (pod: status reason), none expected. (Rows, not ceiling_plan's Bindings: this
    process imports no more than it needs, its start-up is inside its time.)"""
    todo = collections.deque(plan)
    failures: list[str] = []

    async def sender() -> None:
        while todo:
            namespace, name, node, devices = todo.popleft()
            reply = await api.request("POST", pod_path(namespace, name, "binding"),
                                      binding_body(namespace, name, node, devices))
            if not reply.ok:
                failures.append(f"{namespace}/{name}: {reply.status} {reply.reason}")

    await asyncio.gather(*(sender() for _ in range(max(1, min(concurrency, len(plan))))))
    return failures


async def run(kubeconfig: str, plan: list[Row], concurrency: int, linger: bool) -> int:
    configuration = await load_configuration(kubeconfig)
    configuration.connection_pool_maxsize = connections_needed(concurrency)
    settings = Settings()
    api = KubeApi(api_client(configuration, settings.api_compression), None,
                  settings.timeouts.api_request_seconds)
    print(READY, flush=True)
    began = time.monotonic()
    failures = await bind_all(api, plan, concurrency)
    seconds = time.monotonic() - began
    print(f"bound {len(plan) - len(failures)} of {len(plan)} pods in {seconds:.2f}s "
          f"({(len(plan) - len(failures)) / max(seconds, 1e-9):.1f}/s), {concurrency} in flight",
          flush=True)
    for failure in failures[:20]:
        print(f"failed: {failure}", flush=True)
    await api.close()
    if linger:
        await asyncio.Event().wait()  # until the benchmark stops it (SIGTERM)
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.e2e.ceiling",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--plan", type=Path, required=True,
                        help="JSON list of [namespace, pod, node, gpu devices]")
    parser.add_argument("--concurrency", type=int, default=Settings().binding_concurrency,
                        help="bindings in flight (default: the operator's "
                             "binding_concurrency)")
    parser.add_argument("--exit", action="store_true",
                        help="exit once every binding is answered (default: wait to be stopped)")
    args = parser.parse_args(argv)
    plan = [(str(a), str(b), str(c), str(d)) for a, b, c, d in json.loads(args.plan.read_text())]
    return asyncio.run(run(args.kubeconfig, plan, args.concurrency, not args.exit))


if __name__ == "__main__":
    sys.exit(main())
