"""The few API calls the writer makes, as raw JSON requests.

Raw requests because the generated client cannot read the API server's reply to a
binding (a Status, not a Binding: kubernetes-client/python#547); every reply here is
read as JSON and judged by its status code only.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any, Protocol

import aiohttp
import kopf
import orjson
from kubernetes_asyncio import client as k8s
from kubernetes_asyncio import config as k8s_config

from phalanx.core.model.names import API_GROUP, API_VERSION
from phalanx.observe.metrics import Metrics

MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"  # lists merged by key (conditions)
JSON = "application/json"


@dataclasses.dataclass(frozen=True)
class Reply:
    status: int
    body: Mapping[str, Any]

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def reason(self) -> str:
        return str(self.body.get("reason") or self.body.get("message") or self.status)


class Api(Protocol):
    """What the writer needs from the API server (faked in unit tests)."""

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON
    ) -> Reply: ...


APPLY_PATCH = "application/apply-patch+yaml"  # server-side apply (the body may be JSON)
# Kubernetes' own PodGroup, in the order Phalanx prefers the versions: discovery watches the
# first one the API server serves (v1beta1 on 1.37, v1alpha2 on 1.36).
UPSTREAM_GROUP_VERSIONS = ("scheduling.k8s.io/v1beta1", "scheduling.k8s.io/v1alpha2")
UPSTREAM_PODGROUPS = "podgroups.scheduling.k8s.io"  # plural.group, as kubectl spells it
UPSTREAM_COMPOSITE_VERSION = "scheduling.k8s.io/v1alpha3"  # CompositePodGroup: alpha only
UPSTREAM_COMPOSITES = "compositepodgroups.scheduling.k8s.io"


def group_path(
    plural: str, name: str = "", namespace: str = "", sub: str = "",
    api_version: str | None = None,
) -> str:
    """URL path of a Phalanx custom object (namespaced when `namespace` is given), or of
    Kubernetes' own PodGroup when `plural` is UPSTREAM_PODGROUPS, in `api_version` (the
    version the object was read in) or else the preferred one."""
    if plural == UPSTREAM_PODGROUPS:
        version = api_version or UPSTREAM_GROUP_VERSIONS[0]
        return api_path(version, "podgroups", name, namespace, sub)
    if plural == UPSTREAM_COMPOSITES:
        return api_path(UPSTREAM_COMPOSITE_VERSION, "compositepodgroups", name, namespace, sub)
    return api_path(f"{API_GROUP}/{API_VERSION}", plural, name, namespace, sub)


def api_path(
    group_version: str, plural: str, name: str = "", namespace: str = "", sub: str = ""
) -> str:
    """URL path of any object: `/api/v1/...` for the core group, `/apis/G/V/...` else."""
    base = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
    if namespace:
        base += f"/namespaces/{namespace}"
    path = f"{base}/{plural}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def pod_path(namespace: str, name: str, sub: str = "") -> str:
    path = f"/api/v1/namespaces/{namespace}/pods/{name}"
    return f"{path}/{sub}" if sub else path


def api_client(configuration: k8s.Configuration, compression: bool = False) -> k8s.ApiClient:
    """A kubernetes-asyncio ApiClient whose session reads the environment once, and that
    asks for uncompressed replies unless told (`compression`).

    aiohttp asks for gzip on every request, and kube-apiserver then compresses every reply
    over 128 KiB, a LIST page among them: CPU on both sides to save bandwidth that a
    client beside the API server, or in its cluster, has plenty of. kube-scheduler and
    kube-controller-manager ask for none (kubernetes/kubernetes#80919, #112296).

    kubernetes-asyncio opens its aiohttp session with `trust_env`, and aiohttp then looks
    for a proxy in the environment and for ~/.netrc credentials on every request, the
    latter in a thread: py-spy on the operator during a 1,000-node backlog found 30% of its
    samples there. The environment's proxy for the API server (HTTPS_PROXY / NO_PROXY) is
    resolved here, once, into the client's own proxy setting (kept if the configuration
    names one); the API server is reached with a token or a certificate, never netrc."""
    client = k8s.ApiClient(configuration)
    rest = client.rest_client
    url = urllib.parse.urlsplit(str(configuration.host))
    if not rest.proxy:
        proxies = urllib.request.getproxies_environment()
        if url.scheme in proxies and not urllib.request.proxy_bypass(url.hostname or ""):
            rest.proxy = proxies[url.scheme]
    rest.pool_manager._trust_env = False  # aiohttp has no setter; read on every request
    if not compression:
        client.set_default_header("Accept-Encoding", "identity")
    return client


class KubeApi:
    """`Api` over a kubernetes-asyncio ApiClient, replies never deserialized into models."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        metrics: Metrics | None = None,
        timeout_seconds: float = 30.0,
    ) -> None:
        self._client = api_client
        self._metrics = metrics
        self._timeout = timeout_seconds

    async def request(
        self, method: str, path: str, body: Any = None, content_type: str = JSON
    ) -> Reply:
        reply = await self._send(method, path, body, content_type)
        if not reply.ok and self._metrics is not None:
            self._metrics.record_api_error(method.lower(), reply.status)
        return reply

    async def _send(self, method: str, path: str, body: Any, content_type: str) -> Reply:
        try:
            response = await self._client.call_api(
                path,
                method,
                header_params={"Content-Type": content_type, "Accept": JSON},
                body=body,
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=self._timeout,
            )
        except k8s.ApiException as error:
            return Reply(int(error.status or 0), {"message": str(error.reason)})
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            # No answer (timeout, connection reset): status 0, judged like any failed reply,
            # so one lost request fails its own pod, not the gang's other writes or the cycle.
            return Reply(0, {"message": f"{type(error).__name__}: {error}".rstrip(": ")})
        try:
            raw = await response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as error:
            return Reply(0, {"message": f"{type(error).__name__}: {error}".rstrip(": ")})
        finally:
            response.release()
        try:
            data = orjson.loads(raw) if raw else {}
        except ValueError:
            data = {"message": raw[:200].decode(errors="replace")}
        return Reply(int(response.status), data if isinstance(data, dict) else {})

    async def close(self) -> None:
        await self._client.close()


async def load_configuration(kubeconfig: str | None) -> k8s.Configuration:
    """In-cluster service account, else the given kubeconfig, else $KUBECONFIG/~/.kube/config."""
    configuration = k8s.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        await k8s_config.load_kube_config(
            config_file=kubeconfig, client_configuration=configuration
        )
    return configuration


async def connection_info(configuration: k8s.Configuration) -> kopf.ConnectionInfo:
    """The same credentials, in the form Kopf's login handler returns."""
    found: Any = configuration.get_api_key_with_prefix("BearerToken")
    header = str(await found if inspect.isawaitable(found) else found or "")
    parts = header.split(" ", 1) if header else []
    scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0] if parts else None)
    return kopf.ConnectionInfo(
        server=str(configuration.host),
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )
