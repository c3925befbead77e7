"""Assembles the operator: Kopf watches + pod watch -> cache -> loop -> scheduler -> writer."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from typing import Any

import kopf
import structlog
from kubernetes_asyncio import client as k8s

from phalanx.config import Settings
from phalanx.core.model.names import COMPONENT, DEFAULT_QUEUE, GROUP_VERSION
from phalanx.observe.frozen_heap import FrozenHeap
from phalanx.observe.metrics import Metrics
from phalanx.observe.server import Health
from phalanx.operator.cache import ClusterCache, Kind, MergedStore, Store
from phalanx.operator.clock import Clock
from phalanx.operator.dra_kinds import DRA_KINDS
from phalanx.operator.kube.client import (
    APPLY_PATCH,
    UPSTREAM_COMPOSITE_VERSION,
    UPSTREAM_GROUP_VERSIONS,
    Api,
    KubeApi,
    api_client,
    api_path,
    connection_info,
    group_path,
)
from phalanx.operator.kube.kopf_handlers import kopf_settings, register
from phalanx.operator.kube.raw_watch import ApiListWatch, RawWatch
from phalanx.operator.loop import SchedulingLoop
from phalanx.operator.optional_kinds import OptionalKind, OptionalKinds
from phalanx.operator.scheduler import Scheduler
from phalanx.operator.writes import connections_needed
from phalanx.webhooks.configurations import calls_the_same, configuration_path
from phalanx.webhooks.handlers import register_webhooks
from phalanx.webhooks.server import Registering, webhook_server
from phalanx.workloads import WORKLOAD_KINDS

log = structlog.get_logger("phalanx.operator")

SHUTDOWN_WRITES_SECONDS = 5.0  # bindings in flight get this long to land before exit
CACHED_WAIT = 5.0  # see Operator._until_cached


class Operator:
    """One operator instance with its own Kopf registry (several can live in one process)."""

    def __init__(
        self,
        configuration: k8s.Configuration,
        settings: Settings | None = None,
        metrics: Metrics | None = None,
        health: Health | None = None,
        leading: asyncio.Event | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`leading`: set while this replica holds the leader Lease (None: it leads at once).
        Until then the operator is a warm standby: watches and caches run, nothing is
        decided or written, so its first cycle after winning runs at once. `clock` paces
        the rediscovery of optional kinds (tests move it by hand)."""
        self.settings = settings = settings or Settings()
        if leading is None:
            leading = asyncio.Event()
            leading.set()
        self.leading = leading
        self.metrics = metrics or Metrics()
        self.health = health or Health()
        configuration.connection_pool_maxsize = connections_needed(settings.binding_concurrency)
        self.configuration = configuration
        self.stores: dict[Kind, Store] = {}
        self.cache = ClusterCache(self.stores)
        self.api_client = api_client(configuration, settings.api_compression)
        self.api: Api = KubeApi(
            self.api_client, self.metrics, settings.timeouts.api_request_seconds
        )
        self.heap = FrozenHeap(time.monotonic)  # see frozen_heap.py
        self.scheduler = Scheduler(
            self.cache, self.api, settings, metrics=self.metrics,
            health=self.health, heap=self.heap,
        )
        self.loop = SchedulingLoop(
            self.scheduler.cycle,
            debounce=self.settings.debounce_seconds,
            max_delay=self.settings.max_delay_seconds,
            period=self.settings.cycle_period_seconds,
            room=self.scheduler.writes.binder.room,
            crowded=self.scheduler.writes.binder.crowded,
            first_at_once=True,
        )
        # the three kinds of many objects take their state as a streamed list (raw_watch.py)
        self.pod_watch = RawWatch(ApiListWatch(self.api_client), self.loop.poke,
                                  on_arrival=self.loop.arrive, streaming=True)
        self.group_watch = RawWatch(
            ApiListWatch(self.api_client, path=group_path("podgroups")), self.loop.poke,
            api_version=GROUP_VERSION, kind="PodGroup", on_arrival=self.loop.arrive,
            streaming=True,
        )
        self.node_watch = RawWatch(
            ApiListWatch(self.api_client, path="/api/v1/nodes"), self.loop.poke, kind="Node",
            on_arrival=self.loop.arrive, streaming=True,
        )
        for kind, watch in ((Kind.POD, self.pod_watch), (Kind.POD_GROUP, self.group_watch),
                            (Kind.NODE, self.node_watch)):
            self.stores[kind] = watch.store
            watch.on_listed = functools.partial(self._warm, kind)  # parsed as listed
        self.workload_store = MergedStore()
        self.stores[Kind.WORKLOAD] = self.workload_store
        self.stores[Kind.UPSTREAM_POD_GROUP] = {}
        self.stores[Kind.UPSTREAM_COMPOSITE] = {}
        for store in DRA_KINDS.values():  # empty until resource.k8s.io/v1 is found served
            self.stores[store] = {}
        self.optional_watches: list[RawWatch] = []  # the kinds discovery found so far
        self.optional_kinds = OptionalKinds(
            self.api, OPTIONAL_KINDS, self._watch_optional,
            settings.discovery_period_seconds, clock,
        )
        self._kopf_ready = asyncio.Event()
        self._kopf_changed = asyncio.Event()  # set on every change Kopf's indexes see
        self._registered: dict[str, dict[str, Any]] = {}  # webhook configurations, by path
        self.registry = kopf.OperatorRegistry()
        self._task: asyncio.Task[None] | None = None
        self._watch_tasks: list[asyncio.Task[None]] = []
        register(self.registry, self.stores, self._changed, self._startup, self._cleanup)
        kopf.on.login(registry=self.registry)(self._login)
        if settings.webhook.enabled:  # served by every replica, the standby too
            register_webhooks(self.registry, settings, self._read,
                              lambda: self.cache.objects(Kind.QUEUE))

    async def run(
        self, stop: asyncio.Event | None = None, ready: asyncio.Event | None = None
    ) -> None:
        """Run until `stop` is set (or the task is cancelled)."""
        settings = kopf_settings()
        if self.settings.webhook.enabled:
            server = webhook_server(self.settings.webhook)
            settings.admission.server = (
                Registering(server, self._register_webhooks)
                if self.settings.webhook.register_configurations else server)
        # The LISTs of pods, PodGroups and Nodes start now, beside Kopf's own start-up
        # (its discovery of the API's resources), not after it in the start-up handler.
        # One bench-1000 run read the first LIST about half a second sooner; at bench-5000
        # none showed (it still begins ~0.4-0.5 s in, the loop busy with Kopf's start-up)
        self._watch_tasks = [
            asyncio.create_task(self.pod_watch.run(), name="phalanx pod watch"),
            asyncio.create_task(self.group_watch.run(), name="phalanx podgroup watch"),
            asyncio.create_task(self.node_watch.run(), name="phalanx node watch"),
        ]
        try:
            await kopf.operator(
                registry=self.registry,
                settings=settings,
                clusterwide=True,
                standalone=True,
                stop_flag=stop,
                ready_flag=ready,
            )
        finally:  # Kopf's clean-up handler stops them, unless Kopf failed before it ran
            for task in self._watch_tasks:
                task.cancel()

    async def _login(self, **_: Any) -> kopf.ConnectionInfo:
        return await connection_info(self.configuration)

    async def _read(self, path: str) -> dict[str, Any] | None:
        """An object for the webhooks: None if it does not exist; any other failure raises
        (the pod webhook then leaves its pod alone, the validation refuses and says why)."""
        async with asyncio.timeout(self.settings.webhook.lookup_timeout_seconds):
            reply = await self.api.request("GET", path)
        if reply.status == 404:
            return None
        if not reply.ok:
            raise RuntimeError(f"cannot read {path}: {reply.status} {reply.reason}")
        return dict(reply.body)

    async def _register_webhooks(self, configurations: list[dict[str, Any]]) -> None:
        """Write the webhook configurations (server-side apply), for the local cluster."""
        for body in configurations:
            path = configuration_path(body)
            reply = await self.api.request(
                "PATCH", f"{path}?fieldManager={COMPONENT}&force=true", body, APPLY_PATCH)
            if reply.ok:
                self._registered[path] = body
            else:
                log.error("webhook configuration not registered", name=body["metadata"]["name"],
                          status=reply.status, reason=reply.reason)

    async def _unregister_webhooks(self) -> None:
        """Remove the configurations this operator registered, unless another one has
        registered itself since: left behind, the validating one (failurePolicy Fail) would
        refuse every PodGroup and Queue of the local cluster until an operator is back."""
        for path, body in self._registered.items():
            reply = await self.api.request("GET", path)
            if reply.ok and calls_the_same(reply.body, body):
                await self.api.request("DELETE", path)
        self._registered.clear()

    def _warm(self, kind: Kind, bodies: Any) -> None:
        self.cache.warm(kind, bodies)
        self.heap.keep()

    def _changed(self) -> None:
        self._kopf_ready.set()
        self._kopf_changed.set()
        self.loop.poke()

    async def _until_cached(self, kind: Kind, name: str) -> None:
        """Wait until an object this process just created is in Kopf's cache (or
        `CACHED_WAIT` seconds): the first cycle runs at once, and without the default
        queue it would find every gang's queue missing."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(CACHED_WAIT):
                while not any(body.get("metadata", {}).get("name") == name
                              for body in self.cache.objects(kind)):
                    self._kopf_changed.clear()
                    await self._kopf_changed.wait()

    async def _run_loop(self) -> None:
        """Cycles start once Kopf's indexes and the raw watches' first LISTs are in, and
        this replica leads."""
        await self._kopf_ready.wait()
        for watch in (self.pod_watch, self.group_watch, self.node_watch,
                      *self.optional_watches):
            await watch.listed.wait()
        if not self.leading.is_set():
            log.info("caches synced; standing by until elected")
            await self.leading.wait()
        if self.settings.create_default_queue and await ensure_default_queue(self.api):
            await self._until_cached(Kind.QUEUE, DEFAULT_QUEUE)
        self.loop.ready.set()
        await self.loop.run()

    async def _startup(self) -> None:
        await self.optional_kinds.discover()  # the first cycle waits for these lists
        self._watch_tasks.append(
            asyncio.create_task(self.optional_kinds.run(), name="phalanx discovery"))
        self._task = asyncio.create_task(self._run_loop(), name="phalanx scheduling loop")
        log.info("operator started", mode=self.settings.mode.value)

    def _watch_optional(self, kind: OptionalKind) -> None:
        """Start the watch of a kind discovery found (Kubernetes' PodGroups, or a workload
        kind: its store joins the merged workload store). Kubernetes' PodGroups come in
        the first of UPSTREAM_GROUP_VERSIONS served (discovery watches one version)."""
        source = ApiListWatch(self.api_client, path=api_path(kind.group_version, kind.plural))
        watch = RawWatch(source, self.loop.poke, api_version=kind.group_version, kind=kind.kind,
                         on_arrival=self.loop.arrive)
        self.optional_watches.append(watch)
        if kind in UPSTREAM_POD_GROUPS:
            self.stores[Kind.UPSTREAM_POD_GROUP] = watch.store
        elif kind == UPSTREAM_COMPOSITES:
            self.stores[Kind.UPSTREAM_COMPOSITE] = watch.store
        elif kind in DRA_KINDS:
            self.stores[DRA_KINDS[kind]] = watch.store
        else:
            self.workload_store.stores.append(watch.store)
        self._watch_tasks.append(
            asyncio.create_task(watch.run(), name=f"phalanx {kind.kind} watch"))

    async def _cleanup(self) -> None:
        await self._unregister_webhooks()
        for task in (self._task, *self._watch_tasks):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self.scheduler.close(timeout=SHUTDOWN_WRITES_SECONDS)
        self.heap.thaw()
        await self.api_client.close()
        log.info("operator stopped", cycles=self.loop.cycles)


UPSTREAM_POD_GROUPS = tuple(
    OptionalKind(version, "podgroups", "PodGroup") for version in UPSTREAM_GROUP_VERSIONS)
UPSTREAM_COMPOSITES = OptionalKind(
    UPSTREAM_COMPOSITE_VERSION, "compositepodgroups", "CompositePodGroup")
OPTIONAL_KINDS = (
    *UPSTREAM_POD_GROUPS,
    UPSTREAM_COMPOSITES,
    *DRA_KINDS,
    *(OptionalKind(k.api_version, k.plural, k.kind) for k in WORKLOAD_KINDS),
)


async def ensure_default_queue(api: Api) -> bool:
    """Create the default queue unless it exists; True if this call created it."""
    body = {
        "apiVersion": GROUP_VERSION,
        "kind": "Queue",
        "metadata": {"name": DEFAULT_QUEUE},
        "spec": {"weight": 1},
    }
    reply = await api.request("POST", group_path("queues"), body)
    if reply.ok:
        log.info("created the default queue")
    elif reply.status != 409:
        log.warning("default queue not created", status=reply.status, reason=reply.reason)
    return reply.ok
