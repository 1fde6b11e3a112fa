"""zovh-opt: derivative-free minimization with variance-reduced zeroth-order Hessians.

Public API
----------
minimize
    ``scipy.optimize.minimize``-style front door: ``minimize(fun, x0, method="zovh")``.
zovh
    The same optimizer as a custom ``method`` for ``scipy.optimize.minimize``.
estimators
    Pure array-API kernels of the paper: gradient, Hessian, inverse and Newton direction.
problems
    Test functions with analytic derivatives.
Optimizer
    A run as an ask/tell object, with checkpoints: for users who drive evaluation themselves.
CheckpointError
    What `Optimizer.load` raises for a file it cannot bring back.
METHODS
    The method names and the classes that implement one iteration of each.
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
