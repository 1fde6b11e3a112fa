"""zovh-opt: derivative-free minimization with variance-reduced zeroth-order Hessians.

Public API
----------
minimize, zovh
    ``scipy.optimize.minimize``-style front door, and the same as a ``method`` for SciPy's.
Optimizer, CheckpointError
    A run as an ask/tell object with checkpoints, and what `Optimizer.load` raises.
estimators, problems
    The paper's array-API kernels, and test functions with analytic derivatives.
METHODS
    The method names and the classes that implement one iteration of each.
zovh_opt.tuning, zovh_opt.torch
    Submodules: the run's tuning constants; ``torch.optim`` optimizers for models.
"""

from . import estimators, problems
from ._driver.checkpoint import CheckpointError
from ._driver.minimize import minimize, zovh
from ._driver.optimizer import Optimizer
from ._methods import METHODS, ZOAR, ZOSGD, HiZOO, MeZO, ZoVH
from ._version import __version__

__all__ = [
    "METHODS",
    "CheckpointError",
    "ZOAR",
    "ZOSGD",
    "HiZOO",
    "MeZO",
    "Optimizer",
    "ZoVH",
    "estimators",
    "minimize",
    "problems",
    "zovh",
    "__version__",
]
