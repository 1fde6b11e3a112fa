"""The doctests of zovh_opt.torch need torch: without it (the README's test command on a fresh
machine) they are not collected; tests/test_torch_optimizers.py skips itself."""

import importlib.util

collect_ignore_glob = [] if importlib.util.find_spec("torch") else ["zovh_opt/torch/*"]
