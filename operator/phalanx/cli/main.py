"""`phalanx` command: dispatches to one module per subcommand.

Each subcommand module exposes `add_arguments(parser)` and `run(args) -> int`;
modules are imported only when their command runs, so `phalanx plan` never
loads Kopf or the Kubernetes client.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("phalanx.cli.plan", "run one scheduling cycle on objects from a file"),
    "sim": ("phalanx.cli.sim", "replay a trace on a simulated cluster"),
    "cluster": ("phalanx.cli.cluster", "start or stop the local kwok cluster"),
    "operator": ("phalanx.cli.operator", "run the operator against a cluster"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="phalanx", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        cmd = sub.add_parser(name, help=help_text)
        cmd.set_defaults(_module=module_name)
        if name in _requested(sys.argv[1:]):
            importlib.import_module(module_name).add_arguments(cmd)
    return parser


def _requested(argv: Sequence[str]) -> set[str]:
    return {arg for arg in argv if arg in COMMANDS}


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    sys.argv[1:] = args_list
    args = build_parser().parse_args(args_list)
    module = importlib.import_module(args._module)
    return int(module.run(args))


if __name__ == "__main__":
    raise SystemExit(main())
