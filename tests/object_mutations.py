"""Real Kubernetes objects (the manifests under examples/) broken at any depth, for the
fuzz tests of the code that reads raw objects (tests/core/test_core_parse_fuzz.py,
tests/workloads/test_translate_fuzz.py).

An edit is made at a path drawn from every path an object has: the key (or list item)
deleted, its value replaced, or an item appended to a list. A replacement is half the
time a value of the same type that is out of range (a negative or huge count, a
quantity such as "1.5.3", "1e400" or "9e18", a timestamp of month 13, a "²" that
`str.isdigit` takes for a digit) and half the time a value of another type (None, a
bool, a list where an object belongs, ...). Hypothesis shrinks a failing mutant to the
edit that matters.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

Where = tuple[str | int, ...]

ODD_INTEGERS: tuple[int, ...] = (-1, 0, 2**31 - 1, 2**31, 2**63, 10**30, 10**400)
ODD_FLOATS: tuple[float, ...] = (float("nan"), float("inf"), float("-inf"), -0.5, 1.5, 1e300)
ODD_STRINGS: tuple[str, ...] = (
    "", " ", "x", "0", "-1", "1.5", "0.0", "1.5.3", "1e400", "1e-400", "1e999999999",
    "-1e999999999", "9e18", "8Ei", "-1Gi", "1e-9", "NaN", "Infinity", "0x10",
    "\u00b2", "1\u00b2", "\u0663", "0,1", "3,-1", "9" * 30, "2026-13-45T00:00:00Z",
    "Always", "Exists", "Running",
)  # fmt: skip
ODD_LISTS: tuple[list[Any], ...] = ([], [None], ["x"], [1], [{}], [[]])
ODD_OBJECTS: tuple[dict[str, Any], ...] = ({}, {"x": 1}, {"name": None}, {"key": []})
OTHER_TYPES: tuple[Any, ...] = (None, True, False, 1, 1.5, "x", [], ["x"], {}, {"x": 1})


def fuzz_settings(max_examples: int) -> settings:
    """Deterministic fuzzing: every run tries the same mutants, however long each takes
    (tests/conftest.py's profile), and a mutant may be large (a whole object)."""
    return settings(
        max_examples=max_examples,
        suppress_health_check=[*settings.default.suppress_health_check,
                               HealthCheck.data_too_large],
    )


def _same_type(value: Any) -> tuple[tuple[Any, ...], st.SearchStrategy[Any]]:
    """Out-of-range values of `value`'s type: a fixed few, and a strategy for more."""
    if isinstance(value, bool):
        return (), st.nothing()
    if isinstance(value, int):
        return ODD_INTEGERS, st.integers(-3, 3)
    if isinstance(value, float):
        return ODD_FLOATS, st.floats()
    if isinstance(value, str):
        return ODD_STRINGS, st.text(max_size=5)
    return (ODD_LISTS if isinstance(value, list) else ODD_OBJECTS), st.nothing()


def odd_choices(value: Any) -> tuple[Any, ...]:
    """The fixed replacements for `value`: of its type, out of range, and of other types."""
    return (*_same_type(value)[0], *OTHER_TYPES)


def odd_values_for(value: Any) -> st.SearchStrategy[Any]:
    """A replacement for `value`: as `odd_choices`, or drawn (text, numbers)."""
    # one list to sample from: hypothesis' one_of favours its first strategies heavily
    return st.sampled_from(odd_choices(value)) | _same_type(value)[1]


def single_edits(obj: Mapping[str, Any]) -> Iterator[tuple[Where, str, Any]]:
    """Every mutant of `obj` with one edit from the fixed choices: each path deleted, and
    given each of `odd_choices`. With the path edited and a description of the edit."""
    for path in all_paths(obj):
        current = _at(obj, path)
        yield path, f"delete {path}", edited(obj, path, delete=True)
        for value in odd_choices(current):
            yield path, f"{path} = {value!r:.40}", edited(obj, path, value)


def check_single_edits(seeds: Iterable[Mapping[str, Any]], check: Callable[[Any], object]) -> None:
    """`check` every single edit of every seed; a failure names the seed and the edit."""
    for seed in seeds:
        for _, edit, obj in single_edits(seed):
            try:
                check(obj)
            except Exception as error:
                name = seed["metadata"]["name"]
                raise AssertionError(f"{seed['kind']} {name}: {edit}") from error


def _at(obj: Any, path: Where) -> Any:
    for key in path:
        obj = obj[key]
    return obj


def load_examples(*patterns: str) -> list[dict[str, Any]]:
    """Every object of the example manifests matching `patterns` (`kind: List` unpacked)."""
    found: list[dict[str, Any]] = []
    for pattern in patterns:
        for path in sorted(EXAMPLES.glob(pattern)):
            for document in yaml.safe_load_all(path.read_text()):
                found.extend(_unpacked(document))
    return found


def _unpacked(document: Any) -> Iterator[dict[str, Any]]:
    if not isinstance(document, dict):
        return
    if document.get("kind") == "List":
        for item in document.get("items") or []:
            yield from _unpacked(item)
    else:
        yield document


def all_paths(value: Any, prefix: Where = ()) -> list[Where]:
    """The path of every value inside `value` (not `value` itself), depth first."""
    found: list[Where] = []
    children: Iterable[tuple[str | int, Any]]
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list):
        children = enumerate(value)
    else:
        return found
    for key, child in children:
        found.append((*prefix, key))
        found.extend(all_paths(child, (*prefix, key)))
    return found


def edited(obj: Any, path: Where, value: Any = None, delete: bool = False) -> Any:
    """`obj` with the value at `path` replaced by (a copy of) `value`, or deleted: the
    objects and lists on the path are copied, the rest is shared (nothing here or in the
    parsers changes an object in place; a deep copy of each of thousands of mutants was
    most of the tests' time)."""
    copied: Any = dict(obj) if isinstance(obj, dict) else list(obj)
    key = path[0]
    if len(path) > 1:
        copied[key] = edited(copied[key], path[1:], value, delete)
    elif delete:
        del copied[key]
    else:
        copied[key] = copy.deepcopy(value)  # the ODD_ lists and dicts are shared
    return copied


_HEADER: tuple[Where, ...] = (("kind",), ("metadata", "name"))


@st.composite
def mutants(draw: st.DrawFn, seed: Mapping[str, Any], edits: int = 3) -> dict[str, Any]:
    """`seed` with 1..`edits` edits (see the module's docstring); `seed` is not changed."""
    obj: Any = seed
    for _ in range(draw(st.integers(1, edits))):
        paths = all_paths(obj)
        if not paths:
            break
        leaves = [path for path in paths if path not in _HEADER
                  and not isinstance(_at(obj, path), dict | list)]
        # mostly a leaf: most fields are, and an edit of the kind, the name or near the
        # top mostly hides the rest
        path = draw(st.sampled_from(leaves or paths) | st.sampled_from(paths))
        current = _at(obj, path)
        action = draw(st.sampled_from(("delete", "replace", "replace", "append")))
        if action == "delete":
            obj = edited(obj, path, delete=True)
        elif action == "append" and isinstance(current, list):
            item = draw(odd_values_for(current[-1] if current else None))
            obj = edited(obj, path, [*current, item])
        else:
            obj = edited(obj, path, draw(odd_values_for(current)))
    return obj
