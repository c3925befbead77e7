"""Which optional kinds the API server serves: Kubernetes' own PodGroup (the Workload API
is alpha and off by default) and the workload kinds of automatic gangs (CRDs that may
not be installed). The operator watches those it finds when it starts."""

from __future__ import annotations

from phalanx.operator.kube.client import Api


async def serves(api: Api, group_version: str, plural: str) -> bool:
    """The API server lists `plural` under `group_version` (discovery needs no RBAC)."""
    reply = await api.request("GET", f"/apis/{group_version}")
    if not reply.ok:
        return False
    resources = reply.body.get("resources") or []
    return any(isinstance(r, dict) and r.get("name") == plural for r in resources)
