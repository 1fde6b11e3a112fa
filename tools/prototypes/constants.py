"""Prototype: any of the package's module constants set for one benchmark run.

    python tools/prototypes/variant.py constants '{"SET": {"_stopping.HOP_WINDOW": 40}}' ...

``SET`` maps ``"module.NAME"`` (a module of zovh_opt, without the package's name) to the
value the constant takes; the constant must exist. For measuring a constant's other values
without editing the package. Run through ``variant.py``; not a part of zovh_opt.
"""

import importlib

SET: dict = {}


def patch():
    for key, value in SET.items():
        module_name, name = key.rsplit(".", 1)
        module = importlib.import_module(f"zovh_opt.{module_name}")
        if not hasattr(module, name):
            raise SystemExit(f"zovh_opt.{module_name} has no constant {name}")
        setattr(module, name, value)
