"""Property and fuzz tests are deterministic: every run draws the same examples, so a
failure is one anyone can rerun (tests/conftest.py's profile, which a module's own
`@settings(max_examples=...)` keeps)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st


def _drawn() -> list[int]:
    """The integers one run of a property test with its own example count draws."""
    seen: list[int] = []

    @settings(max_examples=20)
    @given(st.integers())
    def property_test(x: int) -> None:
        seen.append(x)

    property_test()
    return seen


def test_two_runs_draw_the_same_examples() -> None:
    assert _drawn() == _drawn()


def test_no_example_database_and_no_deadline() -> None:
    own = settings(max_examples=20)
    assert own.database is None  # a stored failure would be replayed first: another run
    assert own.deadline is None  # a timed assertion: the machine's load decides it
