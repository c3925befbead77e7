"""Kubernetes quantities parse exactly into integer milli-units."""

from __future__ import annotations

import pytest

from phalanx.core.model.quantity import (
    MAX_INT32,
    QuantityError,
    parse_int64,
    parse_quantity,
    whole_number,
)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("500m", 500),
        ("1", 1000),
        (8, 8000),
        (0.5, 500),
        ("1.5", 1500),
        (".5", 500),
        ("2.", 2000),
        ("1Gi", 1073741824000),
        ("1Ki", 1024000),
        ("1Mi", 1048576000),
        ("1Ti", 1099511627776000),
        ("1k", 1000000),
        ("1M", 10**9),
        ("1G", 10**12),
        ("1T", 10**15),
        ("1P", 10**18),
        ("1E", 10**21),
        ("2Ei", 2 * 2**60 * 1000),
        ("1e3", 1000000),
        ("1E3", 1000000),
        ("5e-3", 5),
        ("100u", 1),  # 0.0001 -> rounds up to 1 milli, as MilliValue does
        ("1n", 1),
        ("0", 0),
        ("+3", 3000),
        ("1.25Gi", 1342177280000),
    ],
)
def test_valid_quantities(text: str | int | float, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    "text", ["", "abc", "1Gb", "1.5.5", "--1", "e3", "1 Gi", "Gi", "1e", None, True]
)
def test_invalid_quantities(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        ("9e18", 9 * 10**21),  # under 2^63-1, Kubernetes' most
        ("7Ei", 7 * 2**60 * 1000),
        ("1e-999999999", 1),  # far under a milli-unit: rounded up, at once
        ("0e999999999", 0),
        ("0.00000000000000000000000000000000000001e38", 1000),  # the clamp keeps the answer
    ],
)
def test_extreme_exponents_are_answered_at_once(text: str, milli: int) -> None:
    """"1e999999999" took the parser minutes (10^999999999 computed in full): any
    cpu or memory field could stall a cycle."""
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    "text", ["1e999999999", "-1e999999999", "1e19", "8Ei", 1e300, "1e1234567890123456789"]
)
def test_more_than_kubernetes_holds_is_invalid(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["\u0663", "1\u0663Gi", "1e\u0663"])
def test_only_ascii_digits_are_digits(text: str) -> None:
    """As in Kubernetes: "\u0663" (Arabic-Indic three) is no quantity."""
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("600", 600), (" 4 ", 4), ("0", 0), ("007", 7), ("0" * 5000 + "1", 1),
        (str(MAX_INT32), MAX_INT32), (str(MAX_INT32 + 1), None), ("9" * 5000, None),
        ("", None), ("-1", None), ("1.5", None), ("\u00b2", None), ("\u0663", None),
    ],
)  # fmt: skip
def test_a_whole_number_is_ascii_digits_up_to_int32(text: str, number: int | None) -> None:
    """Leading zeros change no count ("0...01" was refused for its length)."""
    assert whole_number(text) == number


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("10", 10), ("+10", 10), ("-10", -10), ("-0", 0), ("007", 7), ("0" * 5000 + "1", 1),
        (str(2**63 - 1), 2**63 - 1), (str(-(2**63)), -(2**63)),
        (str(2**63), None), (str(-(2**63) - 1), None), ("9" * 5000, None),
        ("", None), ("+", None), ("-", None), ("1_0", None), (" 10", None), ("10 ", None),
        ("+-1", None), ("0x10", None), ("1e3", None), ("1.0", None), ("\u0663", None),
    ],
)  # fmt: skip
def test_an_int64_is_what_go_parseint_reads(text: str, number: int | None) -> None:
    assert parse_int64(text) == number
