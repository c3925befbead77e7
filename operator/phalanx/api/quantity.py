"""Kubernetes resource quantities ("8", "500m", "2Ti", "1e3") as exact fractions."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated

from pydantic import Field, StrictInt, StringConstraints

# The pattern the API server uses for resource.Quantity (kept identical to the CRDs).
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_SUFFIXES = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_SPLIT = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")

QuantityString = Annotated[str, StringConstraints(max_length=64, pattern=QUANTITY_PATTERN)]
Quantity = Annotated[StrictInt | QuantityString, Field(union_mode="left_to_right")]
"""A CRD int-or-string quantity: an integer or a string in Kubernetes quantity syntax."""


def parse_quantity(value: int | str) -> Fraction:
    """Exact value of a quantity; ValueError if it is not one."""
    if isinstance(value, int):
        return Fraction(value)
    if not re.match(QUANTITY_PATTERN, value):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    match = _SPLIT.match(value)
    assert match is not None
    number, suffix = match.groups()
    if suffix[:1] in ("e", "E"):
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    return Fraction(number) * _SUFFIXES[suffix]
