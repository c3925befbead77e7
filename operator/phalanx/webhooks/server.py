"""Kopf's webhook server, as the operator runs it (shell).

Kopf serves the admission requests (aiohttp, HTTPS, each handler at /<its id>). Its
self-signed option makes a certificate for the address it is called at; Kopf builds it
with the optional certbuilder/oscrypto packages, which Phalanx does not install, so
`SelfSignedServer` builds the same kind of certificate with `cryptography`
(`phalanx.cluster.pki.self_signed`). With `cert_dir` set (the Secret phalanx-webhook-tls
mounted from cert-manager, or made by hand) Kopf loads tls.crt and tls.key from it and
reloads them when they change (cert-manager renews them).

Kopf can also write the webhook configurations itself (`settings.admission.managed`), but
under one name for both kinds, without a namespaceSelector and with Kopf's own webhook
names. So `Registering` writes Phalanx's two (`configurations.py`) each time the server
says where it listens, for the local cluster only: elsewhere the manifests carry them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

import kopf
import structlog

from phalanx.config.settings import Webhook
from phalanx.webhooks.certificate import self_signed
from phalanx.webhooks.configurations import configurations

log = structlog.get_logger("phalanx.webhooks")

Register = Callable[[list[dict[str, Any]]], Awaitable[None]]


class SelfSignedServer(kopf.WebhookServer):
    """Kopf's WebhookServer; its self-signed certificate made with `cryptography`."""

    @staticmethod
    def build_certificate(
        hostnames: Collection[str], password: str | None = None
    ) -> tuple[bytes, bytes]:
        if password is not None:
            raise ValueError("an encrypted self-signed key is not supported")
        return self_signed(list(hostnames))


def webhook_server(settings: Webhook) -> kopf.WebhookServer:
    """The server `settings` describe: certificate from `cert_dir`, else self-signed for
    `url_host`."""
    common: dict[str, Any] = {
        "addr": settings.host, "port": settings.port or None, "host": settings.url_host,
    }
    if not settings.cert_dir:
        return SelfSignedServer(**common)
    folder = Path(settings.cert_dir)
    cafile = folder / "ca.crt"
    return kopf.WebhookServer(
        **common, certfile=folder / "tls.crt", pkeyfile=folder / "tls.key",
        cafile=cafile if cafile.exists() else None,
    )


class Registering:
    """Kopf's server protocol around another server: every client config it yields (its
    URL and CA) is first written into Phalanx's webhook configurations by `register`."""

    def __init__(self, server: kopf.WebhookServer, register: Register) -> None:
        self.server = server
        self._register = register

    async def __call__(self, fn: Any) -> AsyncIterator[Any]:
        async for client_config in self.server(fn):
            base = str(client_config["url"]).rstrip("/")
            ca_bundle = client_config.get("caBundle")

            def client(path: str, base: str = base, ca: Any = ca_bundle) -> dict[str, Any]:
                return {"url": f"{base}/{path}", **({"caBundle": ca} if ca else {})}

            await self._register(configurations(client))
            log.info("webhook configurations registered", url=base)
            yield client_config
