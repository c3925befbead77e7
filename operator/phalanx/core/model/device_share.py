"""A GPU device as a unit of account: one whole device in milli, and the part of one
device a pod holds. Results name device shares (a binding says which devices a pod got),
so the unit lives with the other types a cycle returns, below every stage that counts
devices."""

from __future__ import annotations

from dataclasses import dataclass

DEVICE = 1000  # one whole GPU in milli


@dataclass(frozen=True, slots=True)
class DeviceShare:
    """Part of one device a pod holds: `milli` of device `index` (1000: all of it)."""

    index: int
    milli: int

    @property
    def fraction(self) -> float:
        return self.milli / DEVICE
