import pytest

from phalanx.sim.model import Span
from phalanx.sim.slowdown import SlowdownModel, span_of

from .conftest import make_cluster


@pytest.fixture
def cluster():  # type: ignore[no-untyped-def]
    return make_cluster(
        {"r0": ["a0", "a1"], "r1": ["b0"], "r2": ["c0"]},
        block_of={"r0": "b0", "r1": "b0", "r2": "b1"},
    )


def test_span_is_the_finest_shared_domain(cluster) -> None:  # type: ignore[no-untyped-def]
    index = {n.name: i for i, n in enumerate(cluster.nodes)}
    assert span_of(cluster, [index["a0"], index["a0"]]) is Span.NODE
    assert span_of(cluster, [index["a0"], index["a1"]]) is Span.RACK
    assert span_of(cluster, [index["a0"], index["b0"]]) is Span.BLOCK
    assert span_of(cluster, [index["a0"], index["c0"]]) is Span.BEYOND


def test_default_model_grows_with_span_and_off_is_one_everywhere() -> None:
    model = SlowdownModel()
    factors = [model.factor(s) for s in (Span.NODE, Span.RACK, Span.BLOCK, Span.BEYOND)]
    assert factors == sorted(factors) and factors[0] == 1.0 and factors[-1] > factors[1]
    assert {SlowdownModel.off().factor(s) for s in Span} == {1.0}
    assert not SlowdownModel.off().enabled
