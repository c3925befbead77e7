"""A pod's ask for part of one GPU, from its annotations, and the devices written on it.

`scheduling.phalanx.io/gpu-fraction: "0.25"` asks for a quarter of one GPU,
`scheduling.phalanx.io/gpu-memory: "20Gi"` for that much of one GPU's memory (the part
of the device then depends on the node's GPU memory); NVIDIA KAI's `gpu-fraction` and
`gpu-memory` (MiB as a plain number) are read the same way. A pod whose ask cannot be
met as written (a fraction outside 0..1, both set, a whole-GPU request too) is not
dropped: it is parsed with `PodInfo.invalid` saying why, so its group reports it
(condition, Event) instead of silently waiting without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from phalanx.core.model.device_share import DEVICE
from phalanx.core.model.names import (
    GPU,
    GPU_FRACTION_ANNOTATION,
    GPU_INDEX_ANNOTATION,
    GPU_MEMORY_ANNOTATION,
    KAI_GPU_FRACTION_ANNOTATION,
    KAI_GPU_MEMORY_ANNOTATION,
)
from phalanx.core.model.quantity import MAX_INT32, QuantityError, parse_quantity, whole_number
from phalanx.core.parse.annotations import annotation_field

MIB = 2**20


@dataclass(frozen=True, slots=True)
class GpuAsk:
    """`milli` of one GPU, or `memory` MiB of one GPU's memory; `invalid`: why the
    annotations cannot be honoured ("" when they can)."""

    milli: int = 0
    memory: int = 0
    invalid: str = ""


def read_gpu_ask(annotations: Mapping[str, str], requests: Mapping[str, int]) -> GpuAsk:
    fraction_key = _first(annotations, GPU_FRACTION_ANNOTATION, KAI_GPU_FRACTION_ANNOTATION)
    memory_key = _first(annotations, GPU_MEMORY_ANNOTATION, KAI_GPU_MEMORY_ANNOTATION)
    if fraction_key is None and memory_key is None:
        return GpuAsk()
    named = fraction_key or memory_key or ""
    if fraction_key and memory_key:
        return _refuse(memory_key, f"set {fraction_key} or {memory_key}, not both")
    if requests.get(GPU, 0):
        return _refuse(named, f"a pod asking for part of a GPU must not request {GPU} too")
    if fraction_key is not None:
        return _fraction(fraction_key, annotations[fraction_key])
    return _memory(named, annotations[named])


def _first(annotations: Mapping[str, str], *keys: str) -> str | None:
    return next((key for key in keys if key in annotations), None)


def _refuse(key: str, message: str) -> GpuAsk:
    return GpuAsk(invalid=f"{annotation_field(key)}: {message}")


def _fraction(key: str, text: str) -> GpuAsk:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return _refuse(key, f"expected a number between 0 and 1, got {text!r}")
    if not value.is_finite() or not 0 < value < 1:
        return _refuse(key, f"expected a number between 0 and 1 (whole GPUs: {GPU}), got {text!r}")
    milli = int((value * DEVICE).to_integral_value(rounding="ROUND_CEILING"))
    if milli >= DEVICE:
        return _refuse(key, f"{text} rounds to a whole GPU (request {GPU}: 1 instead)")
    return GpuAsk(milli=milli)


def _memory(key: str, text: str) -> GpuAsk:
    """Phalanx's annotation is a quantity ("20Gi"); KAI's is MiB as a plain number (one
    too big for `whole_number` is refused, not read as a quantity: that is bytes)."""
    stripped = text.strip()
    mebibytes = None
    if key == KAI_GPU_MEMORY_ANNOTATION and stripped.isascii() and stripped.isdigit():
        mebibytes = whole_number(stripped)
        if mebibytes is None:
            return _refuse(key, f"expected MiB from 1 to {MAX_INT32}, got {text!r}")
    try:
        if mebibytes is None:
            mebibytes = -(-parse_quantity(stripped) // (1000 * MIB))
    except QuantityError:
        return _refuse(key, f"expected a memory quantity such as 20Gi, got {text!r}")
    if mebibytes <= 0:
        return _refuse(key, f"expected more than 0 memory, got {text!r}")
    return GpuAsk(memory=mebibytes)


def read_gpu_index(annotations: Mapping[str, str]) -> tuple[int, ...]:
    """The device indices written on the pod ("3", "0,1,2,3"); () if absent or not a
    list of indices (the devices are then rebuilt as for a pod never annotated)."""
    return parse_gpu_index(annotations.get(GPU_INDEX_ANNOTATION, ""))


def parse_gpu_index(text: str) -> tuple[int, ...]:
    """"3" -> (3,), "0,1" -> (0, 1); () for anything else."""
    indices = [whole_number(part) for part in text.split(",")] if text else []
    if not indices or None in indices:
        return ()
    return tuple(index for index in indices if index is not None)


def gpu_index_value(indices: tuple[int, ...] | list[int]) -> str:
    """The annotation's text for these devices: what `read_gpu_index` reads back."""
    return ",".join(str(index) for index in indices)
