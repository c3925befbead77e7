"""cel-expr-python against cel-python on DRA device selectors: correctness and speed.

The corpus is upstream's DRA environment as selectors use it (k8s.io/dynamic-resource-
allocation/cel, Kubernetes 1.37): the driver, string/int/bool/version attributes, a
capacity compared as a quantity, a domain the device lacks (an empty map there, so
`has()` is false), `cel.bind`, the strings extension and the semver library. Each case's
expected result is what upstream's environment gives, from its documented semantics;
an error is expected where upstream errors (a missing attribute). The same device values
go to both libraries (quantities and versions as `phalanx.core.dra.values` shapes them),
and each library gets the same quantity and semver functions, so the comparison is of
the CEL runtimes, not of our glue.

Writes bench/results/dra-cel.json: per library, cases right, compile time per
expression, and evaluation time per device (median of the corpus).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from phalanx.core.dra.cel import SelectorError, compiled, device_value, is_quantity
from phalanx.core.dra.values import compare_values, quantity_value, semver_of, semver_value
from phalanx.core.model.dra import Device
from phalanx.core.model.quantity import parse_quantity

RESULT = Path(__file__).resolve().parents[1] / "results" / "dra-cel.json"
D = "gpu.nvidia.com"
ERROR = "error"

H100 = Device(
    D,
    "node-1",
    "gpu-0",
    {
        f"{D}/productName": "NVIDIA H100 80GB HBM3",
        f"{D}/type": "gpu",
        f"{D}/architecture": "Hopper",
        f"{D}/index": 0,
        f"{D}/migEnabled": False,
        f"{D}/driverVersion": semver_of("570.124.6") or semver_of("0.0.0"),  # type: ignore[dict-item]
    },
    {f"{D}/memory": 80 * 2**30 * 1000},
    node="node-1",
)

CASES: tuple[tuple[str, object], ...] = (
    (f'device.driver == "{D}"', True),
    (f'device.attributes["{D}"].productName == "NVIDIA H100 80GB HBM3"', True),
    (f'device.attributes["{D}"].index < 4', True),
    (f'!device.attributes["{D}"].migEnabled', True),
    (f'device.attributes["{D}"].type in ["gpu", "mig"]', True),
    (f'device.attributes["{D}"].productName.startsWith("NVIDIA H")', True),
    (f'device.attributes["{D}"].productName.matches("H(100|200)")', True),
    (f'device.attributes["{D}"].architecture.lowerAscii() == "hopper"', True),
    (f'device.capacity["{D}"].memory.compareTo(quantity("40Gi")) >= 0', True),
    (f'device.capacity["{D}"].memory.isGreaterThan(quantity("80Gi"))', False),
    (f'device.capacity["{D}"].memory == quantity("80Gi")', True),
    (f'device.attributes["{D}"].driverVersion.isGreaterThan(semver("550.0.0"))', True),
    (f'device.attributes["{D}"].driverVersion.major() == 570', True),
    ('has(device.attributes["other.example.com"].model)', False),
    ('!has(device.attributes["other.example.com"].model) || false', True),
    (f'cel.bind(g, device.attributes["{D}"], g.type == "gpu" && g.index == 0)', True),
    (f'device.attributes["{D}"].nosuch == "x"', ERROR),
    (f'has(device.attributes["{D}"].nosuch) && device.attributes["{D}"].nosuch == "x"', False),
    ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
    ('semver("1.2.3-rc.1").isLessThan(semver("1.2.3"))', True),
)


@dataclass
class Outcome:
    name: str
    right: int
    wrong: list[str]
    compile_us: float
    eval_us: float


def _ours(expression: str) -> Callable[[Device], object]:
    selector = compiled(expression)

    def run(device: Device) -> object:
        try:
            return selector.matches(device)
        except SelectorError:
            return ERROR

    return run


def _celpy(expression: str) -> Callable[[Device], object]:
    import celpy
    from celpy import celtypes

    def wrap(value: dict[str, Any]) -> Any:
        return celpy.json_to_cel(value)

    def quantity(text: Any) -> Any:
        return wrap(quantity_value(parse_quantity(str(text))))

    def semver(text: Any, *_: Any) -> Any:
        version = semver_of(str(text))
        if version is None:
            raise ValueError(text)
        return wrap(semver_value(version))

    def plain(value: Any) -> Any:
        if isinstance(value, celtypes.MapType):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, celtypes.ListType):
            return [plain(v) for v in value]
        if isinstance(value, celtypes.IntType):
            return int(value)
        return value

    def compare_to(a: Any, b: Any) -> Any:
        return celtypes.IntType(compare_values(plain(a), plain(b)))

    functions = {
        "quantity": quantity,
        "isQuantity": lambda t: celtypes.BoolType(is_quantity(str(t))),
        "semver": semver,
        "compareTo": compare_to,
        "isGreaterThan": lambda a, b: celtypes.BoolType(compare_values(plain(a), plain(b)) > 0),
        "isLessThan": lambda a, b: celtypes.BoolType(compare_values(plain(a), plain(b)) < 0),
        "major": lambda a: celtypes.IntType(plain(a)["__semver__"][0]),
    }
    env = celpy.Environment()
    program = env.program(env.compile(expression), functions=functions)

    def run(device: Device) -> object:
        try:
            result = program.evaluate({"device": wrap(device_value(device, _domains(expression)))})
        except Exception:
            return ERROR
        if isinstance(result, celpy.CELEvalError):
            return ERROR
        return bool(result) if isinstance(result, celtypes.BoolType) else ERROR

    return run


def _domains(expression: str) -> tuple[str, ...]:
    return compiled(expression).domains


Build = Callable[[str], Callable[[Device], object]]


def measure(name: str, build: Build, evaluations: int) -> Outcome:
    right, wrong = 0, []
    compiles: list[float] = []
    evals: list[float] = []
    for expression, expected in CASES:
        started = time.perf_counter()
        try:
            run = build(expression)
        except Exception as error:
            wrong.append(f"{expression}: does not compile ({type(error).__name__})")
            continue
        compiles.append(time.perf_counter() - started)
        got = run(H100)
        if got == expected:
            right += 1
        else:
            wrong.append(f"{expression}: gave {got!r}, upstream {expected!r}")
        started = time.perf_counter()
        for _ in range(evaluations):
            run(H100)
        evals.append((time.perf_counter() - started) / evaluations)
    return Outcome(
        name, right, wrong, statistics.median(compiles) * 1e6, statistics.median(evals) * 1e6
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=200)
    args = parser.parse_args()
    compiled.cache_clear()
    outcomes = [
        measure("cel-expr-python", _ours, args.evaluations),
        measure("cel-python", _celpy, args.evaluations),
    ]
    document = {
        "cases": len(CASES),
        "evaluations_per_case": args.evaluations,
        "libraries": [outcome.__dict__ for outcome in outcomes],
    }
    RESULT.write_text(json.dumps(document, indent=2) + "\n")
    for o in outcomes:
        print(f"{o.name:16} right {o.right}/{len(CASES)}  compile {o.compile_us:8.1f} us  "
              f"evaluate {o.eval_us:8.1f} us per device")
        for line in o.wrong:
            print(f"    wrong: {line}")
    return 0
