"""Run a ``python -m zovh_opt.benchmarks`` command with a prototype's switches set.

    python tools/prototypes/variant.py MODULE '{"NAME": value, ...}' BENCHMARK ARGS...

``MODULE`` is a prototype of this folder (``hybrid_model``, ``regression_model``,
``filter_model``) whose module constants are its switches; they are set from the JSON object,
the prototype's ``patch()`` installs it, and the benchmark runs in this process (give it
``--jobs 1``). Not a part of zovh_opt.
"""

import importlib
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
module = importlib.import_module(sys.argv[1])
for name, value in json.loads(sys.argv[2]).items():
    if not hasattr(module, name):
        raise SystemExit(f"{sys.argv[1]} has no switch {name}")
    setattr(module, name, value)
module.patch()

from zovh_opt.benchmarks.__main__ import main  # noqa: E402

sys.exit(main(sys.argv[3:]))
