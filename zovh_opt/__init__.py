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
ZoVH, ZOSGD
    The optimizers as ask/tell objects, for users who drive evaluation themselves.
"""

from . import estimators, problems
from ._methods import ZOSGD, ZoVH
from ._minimize import minimize, zovh

__version__ = "0.1.0.dev0"

__all__ = ["ZOSGD", "ZoVH", "estimators", "minimize", "problems", "zovh", "__version__"]
