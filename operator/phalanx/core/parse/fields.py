"""Reading fields of Kubernetes objects (plain dicts) with errors that name the field."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeGuard

from phalanx.core.model.errors import InvalidObject
from phalanx.core.model.quantity import MAX_INT32, QuantityError, parse_quantity


class Reader:
    """One object being parsed: remembers its kind and name for error messages."""

    def __init__(self, kind: str, obj: Mapping[str, Any], namespaced: bool) -> None:
        self.kind = kind
        self.obj = obj
        metadata = obj.get("metadata")
        if not is_mapping(metadata):
            raise InvalidObject(kind, "?", "metadata", "missing")
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObject(kind, "?", "metadata.name", "missing")
        namespace = metadata.get("namespace") or "default"
        if namespaced and not isinstance(namespace, str):
            raise InvalidObject(kind, name, "metadata.namespace", "not a string")
        self.name: str = name
        self.namespace: str = str(namespace) if namespaced else ""
        self.label = f"{namespace}/{name}" if namespaced else name

    def error(self, field: str, message: str) -> InvalidObject:
        return InvalidObject(self.kind, self.label, field, message)

    def get(self, path: str, default: Any = None) -> Any:
        current: Any = self.obj
        for part in _PARTS.get(path) or _split(path):
            if current is None:
                return default
            if type(current) is not dict and not isinstance(current, Mapping):  # is_mapping
                raise self.error(path, f"expected an object at {part!r}")
            current = current.get(part)
        return default if current is None else current

    def mapping(self, path: str) -> Mapping[str, Any]:
        value = self.get(path, {})
        if not is_mapping(value):
            raise self.error(path, "expected an object")
        return value

    def items(self, path: str) -> list[Any]:
        value = self.get(path, [])
        if not isinstance(value, list):
            raise self.error(path, "expected a list")
        return value

    def string(self, path: str, default: str | None = None) -> str | None:
        value = self.get(path, default)
        if value is not None and not isinstance(value, str):
            raise self.error(path, f"expected a string, got {value!r}")
        return value

    def integer(
        self, path: str, default: int | None = None, minimum: int | None = None
    ) -> int | None:
        value = self.get(path, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(path, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.error(path, f"must be >= {minimum}, got {value}")
        if not -MAX_INT32 - 1 <= value <= MAX_INT32:  # a weight of 10**400 is no float
            raise self.error(path, f"must fit in 32 bits: from {-MAX_INT32 - 1} to {MAX_INT32}")
        return value

    def required_integer(self, path: str, minimum: int | None = None) -> int:
        value = self.integer(path, None, minimum)
        if value is None:
            raise self.error(path, "missing")
        return value

    def boolean(self, path: str, default: bool) -> bool:
        value = self.get(path, default)
        if not isinstance(value, bool):
            raise self.error(path, f"expected true or false, got {value!r}")
        return value

    def labels(self, path: str) -> dict[str, str]:
        return {str(k): str(v) for k, v in self.mapping(path).items()}

    def resources(self, path: str, data: Mapping[str, Any] | None = None) -> dict[str, int]:
        """A resource map: every quantity parsed, negatives rejected."""
        value = self.mapping(path) if data is None else data
        parsed: dict[str, int] = {}
        for name, text in value.items():
            try:
                amount = parse_quantity(text)
            except QuantityError as error:
                raise self.error(f"{path}.{name}", str(error)) from None
            if amount < 0:
                raise self.error(f"{path}.{name}", f"must not be negative, got {text!r}")
            parsed[str(name)] = amount
        return parsed

    def timestamp(self) -> float:
        return self.moment("metadata.creationTimestamp") or 0.0

    def moment(self, path: str, data: Mapping[str, Any] | None = None) -> float | None:
        """An RFC 3339 time (or a datetime, as YAML loaders give) as epoch seconds."""
        text = self.get(path) if data is None else data.get(path.rsplit(".", 1)[-1])
        if text is None:
            return None
        try:
            moment = text if isinstance(text, datetime) else datetime.fromisoformat(str(text))
        except ValueError:
            raise self.error(path, f"not a timestamp: {text!r}") from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()


# Each path's parts, split once: `get` runs some 20 times a pod, every cycle for the pods
# that changed. The paths are the parsers' literals, a few dozen.
_PARTS: dict[str, tuple[str, ...]] = {}


def _split(path: str) -> tuple[str, ...]:
    parts = _PARTS[path] = tuple(path.split("."))
    return parts


def is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)`, with plain dicts (what the API server's JSON and YAML
    give) answered first: the abstract class's check was a third of a pod's parsing
    (cProfile of 3,000 bench-5000 pods), and every cycle parses the pods that changed."""
    return type(value) is dict or isinstance(value, Mapping)
