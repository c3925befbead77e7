"""Device selectors: CEL expressions over one device, in upstream's DRA environment.

Evaluated with `cel-expr-python` (the CEL project's own C++ runtime behind a Python
binding; docs/design/dra.md says why it was chosen over `cel-python`). The environment
is upstream's (k8s.io/dynamic-resource-allocation/cel): one variable `device` with
`driver`, `attributes` and `capacity`, both maps from a domain to a map from a name to
a value; short names in a slice belong to the driver's domain; looking up a domain the
device lacks gives an empty map (so `has(...)` on it is false, not an error); Kubernetes'
`quantity` and `semver` functions and the bindings and strings extensions.

A quantity is a map {"__quantity__": milli-units} and a version a map
{"__semver__": [major, minor, patch, pre...]}: the binding has no opaque types, and a map
compares by content, so `==` between two quantities means what it says. Every expression
is compiled once per process (`compiled`); an expression that does not compile, or that
errors on a device, is a `SelectorError` naming the expression, never a crash.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings

from phalanx.core.dra.values import (
    QUANTITY,
    SEMVER,
    compare_values,
    quantity_of,
    quantity_value,
    semver_of,
    semver_value,
)
from phalanx.core.model.dra import AttributeValue, Device
from phalanx.core.model.quantity import QuantityError, parse_quantity

_T = cel.Type
_VALUE = _T.Map(_T.STRING, _T.DYN)  # a quantity or a version (see the module's docstring)
_DOMAIN_LOOKUP = re.compile(r"""(?:attributes|capacity)\s*\[\s*["']([^"'\\]+)["']\s*\]""")


class SelectorError(ValueError):
    """A selector that cannot be used: it does not compile, does not give a bool, or
    errors on a device. The message names the expression."""


@dataclass(frozen=True, slots=True)
class Selector:
    """A compiled selector, with the domains it looks up by name (filled with empty maps
    for a device that lacks them, as upstream's default-empty lookup does)."""

    expression: str
    program: Any
    domains: tuple[str, ...]

    def matches(self, device: Device) -> bool:
        result = self.program.eval(data={"device": device_value(device, self.domains)})
        value = result.value()
        if result.type() == _T.ERROR:
            raise SelectorError(f"selector {self.expression!r} fails on {_named(device)}: {value}")
        if not isinstance(value, bool):
            raise SelectorError(
                f"selector {self.expression!r} gives {result.type().name()}, not a bool"
            )
        return value


def _named(device: Device) -> str:
    return f"device {device.name} of pool {device.pool} (driver {device.driver})"


@lru_cache(maxsize=4096)
def compiled(expression: str) -> Selector:
    """The selector for `expression`, compiled once (bounded, so a stream of distinct
    bad expressions cannot grow it without end). Raises SelectorError."""
    try:
        program = _environment().compile(expression)
    except RuntimeError as error:
        message = f"selector {expression!r} does not compile: {_first_line(error)}"
        raise SelectorError(message) from None
    domains = tuple(sorted(set(_DOMAIN_LOOKUP.findall(expression))))
    return Selector(expression, program, domains)


def _first_line(error: Exception) -> str:
    text = str(error).removeprefix("INVALID_ARGUMENT: ").strip()
    return text.splitlines()[0] if text else type(error).__name__


def device_value(device: Device, domains: tuple[str, ...] = ()) -> dict[str, Any]:
    """The `device` variable for one device."""
    attributes: dict[str, dict[str, Any]] = {domain: {} for domain in domains}
    for name, value in device.attributes.items():
        domain, _, short = name.rpartition("/")
        attributes.setdefault(domain, {})[short] = _cel_attribute(value)
    capacity: dict[str, dict[str, Any]] = {domain: {} for domain in domains}
    for name, milli in device.capacity.items():
        domain, _, short = name.rpartition("/")
        capacity.setdefault(domain, {})[short] = quantity_value(milli)
    return {
        "driver": device.driver,
        "attributes": attributes,
        "capacity": capacity,
        "allowMultipleAllocations": False,
    }


def _cel_attribute(value: AttributeValue) -> object:
    if isinstance(value, bool | int | str):
        return value
    return semver_value(value)


def _quantity(text: str) -> dict[str, Any]:
    try:
        return quantity_value(parse_quantity(text))
    except QuantityError as error:
        raise ValueError(str(error)) from None


def is_quantity(text: str) -> bool:
    """Whether `text` is a Kubernetes quantity (CEL's isQuantity)."""
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _semver(text: str, normalize: bool = False) -> dict[str, Any]:
    version = semver_of(text, normalize)
    if version is None:
        raise ValueError(f"invalid semver {text!r}")
    return semver_value(version)


def _is_semver(text: str, normalize: bool = False) -> bool:
    return semver_of(text, normalize) is not None


def _compare(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    return compare_values(a, b)


def _quantity_arith(sign: int) -> Callable[[Mapping[str, Any], object], dict[str, Any]]:
    def apply(a: Mapping[str, Any], b: object) -> dict[str, Any]:
        other = b * 1000 if isinstance(b, int) else quantity_of(b)
        return quantity_value(quantity_of(a) + sign * other)

    return apply


def _overload(
    name: str, result: Any, params: list[Any], impl: Callable[..., Any], member: bool
) -> Any:
    return cel.Overload(name, result, params, is_member=member, impl=impl)


def _functions() -> list[Any]:
    v, s, b, i = _VALUE, _T.STRING, _T.BOOL, _T.INT
    q = quantity_of
    table: dict[str, list[Any]] = {
        "quantity": [_overload("quantity_string", v, [s], _quantity, False)],
        "isQuantity": [_overload("is_quantity_string", b, [s], is_quantity, False)],
        "semver": [
            _overload("semver_string", v, [s], _semver, False),
            _overload("semver_string_bool", v, [s, b], _semver, False),
        ],
        "isSemver": [
            _overload("is_semver_string", b, [s], _is_semver, False),
            _overload("is_semver_string_bool", b, [s, b], _is_semver, False),
        ],
        "compareTo": [_overload("value_compare_to", i, [v, v], _compare, True)],
        "isGreaterThan": [_overload("value_gt", b, [v, v], lambda x, y: _compare(x, y) > 0, True)],
        "isLessThan": [_overload("value_lt", b, [v, v], lambda x, y: _compare(x, y) < 0, True)],
        "asInteger": [_overload("quantity_as_int", i, [v], lambda x: _as_integer(q(x)), True)],
        "asApproximateFloat": [
            _overload("quantity_as_float", _T.DOUBLE, [v], lambda x: q(x) / 1000, True)
        ],
        "isInteger": [_overload("quantity_is_int", b, [v], lambda x: q(x) % 1000 == 0, True)],
        "sign": [_overload("quantity_sign", i, [v], lambda x: (q(x) > 0) - (q(x) < 0), True)],
        "add": [
            _overload("quantity_add", v, [v, v], _quantity_arith(1), True),
            _overload("quantity_add_int", v, [v, i], _quantity_arith(1), True),
        ],
        "sub": [
            _overload("quantity_sub", v, [v, v], _quantity_arith(-1), True),
            _overload("quantity_sub_int", v, [v, i], _quantity_arith(-1), True),
        ],
        "major": [_overload("semver_major", i, [v], lambda x: _part(x, 0), True)],
        "minor": [_overload("semver_minor", i, [v], lambda x: _part(x, 1), True)],
        "patch": [_overload("semver_patch", i, [v], lambda x: _part(x, 2), True)],
    }
    return [cel.FunctionDecl(name, overloads) for name, overloads in table.items()]


def _as_integer(milli: int) -> int:
    if milli % 1000:
        raise ValueError("quantity is not an integer")
    return milli // 1000


def _part(value: Mapping[str, Any], index: int) -> int:
    parts = value.get(SEMVER)
    if not isinstance(parts, list):
        raise ValueError("not a semver" if QUANTITY in value else "not a version")
    return int(parts[index])


@lru_cache(maxsize=1)
def _environment() -> Any:
    return cel.NewEnv(
        variables={"device": _T.DYN},
        functions=_functions(),
        extensions=[ext_bindings.ExtBindings(), ext_strings.ExtStrings()],
    )
