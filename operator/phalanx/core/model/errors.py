"""The one error the parser raises: an object Phalanx cannot read, and where."""

from __future__ import annotations


class InvalidObject(ValueError):
    """A Kubernetes object with a missing or malformed field.

    Carries the object's kind and name and the field path, so a user can fix the
    manifest without reading a traceback.
    """

    def __init__(self, kind: str, name: str, field: str, message: str) -> None:
        self.kind = kind
        self.name = name
        self.field = field
        self.message = message
        super().__init__(f"{kind} {name}: {field}: {message}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvalidObject):
            return NotImplemented
        return (self.kind, self.name, self.field, self.message) == (
            other.kind,
            other.name,
            other.field,
            other.message,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.name, self.field, self.message))
