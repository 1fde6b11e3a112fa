"""Command line: ``python -m zovh_opt.benchmarks <command> [options]``."""

from __future__ import annotations

import argparse
import sys

from . import (
    attack,
    coco,
    curvature,
    finetune,
    hessian_error,
    memory,
    mild_noise,
    model_cost,
    noise,
    peers,
    smooth,
    step,
    synthetic,
    tuning,
    workers,
)
from ._common import add_common_arguments

COMMANDS = {
    "step": step,
    "workers": workers,
    "hessian-error": hessian_error,
    "synthetic": synthetic,
    "attack": attack,
    "peers": peers,
    "coco": coco,
    "tuning": tuning,
    "curvature": curvature,
    "model-cost": model_cost,
    "noise": noise,
    "mild-noise": mild_noise,
    "memory": memory,
    "smooth": smooth,
    "finetune": finetune,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m zovh_opt.benchmarks", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        parser_of = sub.add_parser(name, help=module.__doc__.splitlines()[0])
        if hasattr(module, "add_arguments"):
            module.add_arguments(parser_of)
        else:  # the paper's experiments share --quick, --out and --jobs
            add_common_arguments(parser_of, name)
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    return COMMANDS[args.command].run(args)


if __name__ == "__main__":
    sys.exit(main())
