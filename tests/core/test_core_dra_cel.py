"""Device selectors mean what upstream's DRA CEL environment makes them mean: the corpus
`python -m bench.dra` compares the libraries on, each case as upstream evaluates it."""

from __future__ import annotations

import pytest
from bench.dra.cel_compare import CASES, ERROR, H100

from phalanx.core.dra.cel import SelectorError, compiled


@pytest.mark.parametrize(("expression", "expected"), CASES)
def test_selector_on_an_h100(expression: str, expected: object) -> None:
    selector = compiled(expression)
    if expected == ERROR:
        with pytest.raises(SelectorError, match="fails on device gpu-0"):
            selector.matches(H100)
    else:
        assert selector.matches(H100) is expected


def test_expression_that_does_not_compile_is_an_error_naming_it() -> None:
    with pytest.raises(SelectorError, match=r"'device.driver ==' does not compile"):
        compiled("device.driver ==")


def test_unknown_function_is_refused_at_compile_time() -> None:
    with pytest.raises(SelectorError, match="does not compile"):
        compiled('device.attributes["a.io"].x.noSuchFunction()')
