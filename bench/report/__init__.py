"""Every generated table of bench/README.md and docs/benchmarks/*-results.md, from
bench/results only (no benchmark runs).

    python -m bench.report                # rewrite them (`make bench-report`)
    python -m bench.report --check        # exit 1, naming each stale block (`make lint`)
    python -m bench.report --only sim e2e

Each benchmark renders its own (`generated` of its package); a run of the benchmark that
writes its results file under bench/results rewrites them too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from bench import common
from bench.chaos import report as chaos
from bench.core import run as core
from bench.core import scale as core_scale
from bench.dra import e2e_table as dra_e2e
from bench.e2e import table as e2e
from bench.packing import report as packing
from bench.sim import backfill, fair_share
from bench.sim import run as sim

GENERATORS: dict[str, Callable[[Path], common.Generated]] = {
    "core": core.generated,
    "core-12500": core_scale.generated,
    "packing": packing.generated,
    "sim": sim.generated,
    "sim-time": backfill.generated,
    "fair-share": fair_share.generated,
    "e2e": e2e.generated,
    "chaos": chaos.generated,
    "dra-e2e": dra_e2e.generated,
}


def generated(results: Path = common.RESULTS,
              only: Sequence[str] = ()) -> list[common.Generated]:
    """The generated text of every benchmark (or of `only` those)."""
    return [make(results) for name, make in GENERATORS.items() if not only or name in only]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.report",
                                     description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a generated block or page differs from "
                             "what bench/results gives")
    parser.add_argument("--only", nargs="+", choices=tuple(GENERATORS), default=())
    args = parser.parse_args(argv)
    texts = generated(only=args.only)
    if args.check:
        problems = common.stale(texts, common.README, common.DOCS, complete=not args.only)
        for problem in problems:
            print(f"bench.report: {problem}", file=sys.stderr)
        if problems:
            print("bench.report: the generated tables do not match bench/results; "
                  "`make bench-report` rewrites them from it", file=sys.stderr)
            return 1
        print(f"bench.report: {len(texts)} benchmarks' generated tables match bench/results")
        return 0
    changed = common.write(texts, common.README, common.DOCS)
    for path in changed:
        print(f"bench.report: rewrote {common.shown(path)}")
    if not changed:
        print("bench.report: nothing to rewrite")
    return 0
