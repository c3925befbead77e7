"""ResourceClaims this process allocated or freed that the watch may not show yet.

The claims' counterpart of `assumed.py`: without it, the cycle after a gang's claims were
written could see them still unallocated and give the same devices to another gang on
the same node (the columns count devices, the exact allocator picks them by name), or
see a claim freed by the recovery still allocated. An entry ends when the watch shows
the claim as it was written, when the claim is gone, or when it expires.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from phalanx.core.model.dra import AllocatedDevice, Claim


@dataclasses.dataclass(frozen=True)
class ClaimShown:
    """How to show a claim: allocated to `results` (on `node`), or freed (results None)."""

    results: tuple[AllocatedDevice, ...] | None
    node: str | None
    expires: float


class AssumedClaims:
    def __init__(self, ttl_seconds: float) -> None:
        self._ttl = ttl_seconds
        self._claims: dict[str, ClaimShown] = {}  # "NS/NAME" -> as written

    def __len__(self) -> int:
        return len(self._claims)

    def allocated(self, key: str, results: tuple[AllocatedDevice, ...],
                  node: str | None) -> None:
        """The claim is being allocated: held until its write is answered and seen."""
        self._claims[key] = ClaimShown(results, node, math.inf)

    def freed(self, key: str, now: float) -> None:
        self._claims[key] = ClaimShown(None, None, now + self._ttl)

    def written(self, key: str, now: float) -> None:
        """The write was accepted: the watch should show it within the TTL."""
        entry = self._claims.get(key)
        if entry is not None:
            self._claims[key] = dataclasses.replace(entry, expires=now + self._ttl)

    def forget(self, key: str) -> None:
        self._claims.pop(key, None)

    def expire(self, claims: Iterable[object], now: float) -> None:
        """Drop entries the watch confirmed (or whose claim is gone) and those timed out."""
        if not self._claims:
            return
        seen = {c.key: c for c in claims if isinstance(c, Claim)}
        for key, entry in list(self._claims.items()):
            claim = seen.get(key)
            confirmed = claim is not None and (claim.allocation is None) == (entry.results is None)
            if claim is None or confirmed or entry.expires <= now:
                del self._claims[key]

    def shown(self, item: object) -> object:
        """A parsed object as the cycle should see it: a claim held here as written."""
        if not self._claims or not isinstance(item, Claim):
            return item
        entry = self._claims.get(item.key)
        if entry is None:
            return item
        if entry.results is None:
            return dataclasses.replace(item, allocation=None, node=None, reserved_for=())
        return dataclasses.replace(item, allocation=entry.results, node=entry.node)
