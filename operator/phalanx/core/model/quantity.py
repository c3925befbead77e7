"""Kubernetes resource quantities, parsed exactly into integer milli-units.

Every resource is stored as an integer count of thousandths ("milli-units"):
cpu "500m" is 500, memory "1Gi" is 1073741824000, nvidia.com/gpu "8" is 8000.
One unit for all resources keeps the arithmetic uniform and exact; values that
are not whole milli-units round up, as Kubernetes' MilliValue does.
"""

from __future__ import annotations

import re
from fractions import Fraction
from functools import lru_cache

_DECIMAL_SI: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_BINARY_SI: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_NUMBER = re.compile(r"^([+-]?)(\d+\.?\d*|\.\d+)(.*)$", re.ASCII)  # "\u0663" is no digit here
_EXPONENT = re.compile(r"^[eE]([+-]?\d{1,18})$", re.ASCII)  # Kubernetes reads it as an int64
MAX_UNITS = 2**63 - 1
"""The most of anything a quantity may say: Kubernetes holds a quantity's value in an
int64 (`resource.Quantity.Value()`), so no node, pod or queue has more."""
_INT64_MIN = -(2**63)
_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)


MAX_INT32 = 2**31 - 1
"""The most a count of the Kubernetes APIs holds (minMember, replicas, a priority, a
timeout in seconds: int32 fields); the annotations that stand for them say no more."""


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: object) -> int:
    """Parse a quantity (string or YAML number) into integer milli-units."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError(f"invalid quantity {value!r}: not a string or number")
    return _parse_text(_text_of(value))


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> int:
    """Cached: a cluster repeats the same few quantities ("8", "64Gi") across every pod."""
    match = _NUMBER.match(text)
    if match is None:
        raise QuantityError(f"invalid quantity {text!r}")
    sign, digits, suffix = match.groups()
    amount = Fraction(digits) * _multiplier(text, suffix, len(digits)) * 1000
    milli = -((-amount.numerator) // amount.denominator)  # ceiling
    if milli > MAX_UNITS * 1000:
        raise QuantityError(f"invalid quantity {text!r}: more than {MAX_UNITS} (2^63-1)")
    return -milli if sign == "-" and milli else milli


def _text_of(value: str | int | float) -> str:
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"invalid quantity {value!r}")
        return repr(value)
    return str(value).strip()


def _multiplier(text: str, suffix: str, digits: int) -> Fraction:
    """The suffix's factor. An exponent is clamped so that "1e999999999" costs no more
    than "1e40": a non-zero mantissa of `digits` characters times 10^(digits+20) is over
    MAX_UNITS, times 10^-(digits+30) under one milli-unit (rounded up to 1), so beyond
    those bounds the exponent changes no answer, only the time to compute it."""
    if suffix in _DECIMAL_SI:
        return Fraction(10) ** _DECIMAL_SI[suffix]
    if suffix in _BINARY_SI:
        return Fraction(2) ** _BINARY_SI[suffix]
    exponent = _EXPONENT.match(suffix)
    if exponent is not None:
        power = min(max(int(exponent.group(1)), -digits - 30), digits + 20)
        return Fraction(10) ** power
    raise QuantityError(f"invalid quantity {text!r}: unknown suffix {suffix!r}")


def whole_number(text: str) -> int | None:
    """A count, an index or a number of seconds written in an annotation or a label
    ("600", " 4 "): ASCII digits, no sign, at most MAX_INT32; None for anything else."""
    stripped = text.strip()
    if stripped[:1] in ("+", "-"):
        return None
    number = parse_int64(stripped)
    return number if number is not None and number <= MAX_INT32 else None


def parse_int64(text: str) -> int | None:
    """An integer as Kubernetes reads one from a string (Go's `strconv.ParseInt(text, 10,
    64)`, as node affinity's Gt and Lt read their value and the node's label): an optional
    sign, then ASCII digits only, within int64; None for anything else. Python's `int` is
    no test: it takes "1_0", " 10" and "\u0663" and refuses thousands of digits."""
    if _INTEGER.fullmatch(text) is None:
        return None
    digits = text.lstrip("+-").lstrip("0")  # "007" is 7
    if len(digits) > 19:
        return None
    number = int(digits or "0")
    number = -number if text[0] == "-" else number
    return number if _INT64_MIN <= number <= MAX_UNITS else None
