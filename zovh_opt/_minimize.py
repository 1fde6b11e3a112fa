"""The driver: validation, budgets, evaluation, callback and the ``OptimizeResult``.

It knows nothing about the math: it asks the method object for points, evaluates them, tells the
values back, and decides when to stop.
"""

from __future__ import annotations

import inspect
import numbers
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from array_api_compat import device as _device
from array_api_compat import is_array_api_obj
from scipy.optimize import OptimizeResult, OptimizeWarning

from ._backend import as_array, namespace_of
from ._methods import METHODS
from ._options import Option, boolean, integer_at_least, optional, resolve

__all__ = ["minimize", "zovh"]

DRIVER_OPTIONS = {
    "maxiter": Option(1000, integer_at_least(1)),
    "maxfev": Option(None, optional(integer_at_least(1))),
    "disp": Option(False, boolean),
}

# status codes and messages, following scipy.optimize where SciPy has one
SUCCESS, MAXFEV, MAXITER, NONFINITE, CALLBACK = 0, 1, 2, 3, 99
MESSAGES = {
    MAXFEV: "Maximum number of function evaluations has been exceeded.",
    MAXITER: "Maximum number of iterations has been exceeded.",
    NONFINITE: "NaN result encountered.",
    CALLBACK: "`callback` raised `StopIteration`.",
}


def minimize(
    fun: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    method: str = "zovh",
    *,
    callback: Callable[..., Any] | None = None,
    options: dict[str, Any] | None = None,
    tol: float | None = None,
    rng: Any = None,
    workers: int | Callable[..., Any] | None = None,
    vectorized: bool = False,
) -> OptimizeResult:
    """Minimize a scalar function from its values alone, like ``scipy.optimize.minimize``.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float``: the objective, evaluated at a one-dimensional array of the
        namespace, dtype and device of ``x0``. It must return a real scalar (a Python number, a
        NumPy scalar or a 0-d/size-1 array). With ``vectorized=True`` it receives an
        ``(n_points, d)`` array and returns ``(n_points,)`` values.
    x0 : array_like, shape (d,)
        Starting point: a NumPy, PyTorch or CuPy array (anything array-api-compat knows), or a
        sequence of numbers (made a NumPy float64 array). float32 and float64 are kept as given;
        integer input becomes float64.
    args : tuple, optional
        Extra arguments passed to ``fun``.
    method : {"zovh", "zo-sgd"}, default "zovh"
        The optimizer; see the Options section.
    callback : callable, optional
        Called after every iteration, in either SciPy form: ``callback(intermediate_result)``
        (detected by that parameter name) with an ``OptimizeResult`` holding ``x``, ``fun``
        (the mean of the iteration's function values, an estimate of the smoothed objective
        at ``x``), ``nit`` and ``nfev``; or ``callback(xk)`` with a copy of the iterate. Raising
        ``StopIteration`` ends the run with ``success=False`` and status 99.
    options : dict, optional
        Method options, see below.
    tol : None
        Reserved for a stopping tolerance; only ``None`` is accepted in this version.
    rng : None, int, numpy.random.Generator, torch.Generator or cupy generator, optional
        Source of the random directions (SPEC 7). The same seed, backend and dtype give the
        same run bit for bit.
    workers : int or map-like callable, optional
        Evaluate the points of one iteration in parallel: an int is the size of a process pool
        (-1 for all cores); a callable ``workers(func, iterable)`` is used like ``map``.
        ``fun`` must then be picklable.
    vectorized : bool, default False
        Call ``fun`` once per iteration with all points stacked in rows.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x`` (final iterate, in the namespace and on the device of ``x0``), ``fun`` (a float:
        ``fun`` evaluated at ``x``, counted in ``nfev``), ``nit``, ``nfev``, ``status``,
        ``success``, ``message``; ``jac``, the latest gradient estimate, and for ``"zovh"``
        ``hess_inv``, a linear operator for the final regularised inverse-Hessian estimate.
        ``status`` is 1 (``maxfev`` reached), 2 (``maxiter`` reached), 3 (a non-finite function
        value: ``x`` is then the last iterate reached before it) or 99 (the callback stopped
        the run); ``success`` is ``True`` only for status 0, which a convergence test would set.

    Options
    -------
    learning_rate : float, default 1e-4
        Step size :math:`\\eta` in ``x <- x - eta * p``. Zeroth-order steps diverge within a
        few dozen iterations when it is too large: tune it on a short run, dividing it by 3
        while f grows. The default suits objectives with curvature of order one.
    smoothing : float, default 0.1
        Smoothing radius :math:`\\mu`: queries are ``x + mu * u`` with ``u ~ N(0, I)``. Larger
        values lower the variance and raise the smoothing bias (Thm. ``bias-variance-tradeoff``);
        make it small against the scale on which ``fun`` changes shape.
    regularization : float, default 0.1 (``"zovh"``)
        Ridge :math:`\\lambda` of the inverse :math:`(\\hat H + \\lambda I)^{-1}`. Far from the
        sampled directions the step is the gradient divided by :math:`\\lambda`, so
        ``learning_rate / regularization`` is the effective gradient step; larger values also
        guard the Woodbury denominators.
    n_directions : int, default 3
        Directions per iteration, ``K`` (>= 3 for ``product="shared"``).
    history : int, default 4 (``"zovh"``)
        Iterations of queries reused, ``N`` (query reuse, eq. ``hess-est-zoar``); 1 disables
        reuse.
    product : {"shared", "decoupled"}, default "shared" (``"zovh"``)
        ``"shared"``: Hessian and gradient from the same ``K`` queries, bias-corrected (eq.
        ``inv-hess-grad-prod-shared``); ``"decoupled"``: from two independent sets, ``2K``
        evaluations per iteration.
    inverse : {"diagonal", "exact"}, default "diagonal" (``"zovh"``)
        Diagonal-Gram approximation (eq. ``inv-hess-approx``) or exact Woodbury inverse (eq.
        ``inv-hess-exact``) through an ``M x M`` solve.
    directions : {"vectors", "seeds"}, default "vectors" (``"zovh"``)
        Keep the ``N K`` history directions in memory, or only their seeds and regenerate them
        (memory ``O(N K)`` numbers beyond a few vectors, at the price of regenerating them
        twice per iteration). Both give bit-identical runs.
    maxiter : int, default 1000
        Maximum number of iterations.
    maxfev : int, optional
        Hard budget of function evaluations, including the final one at ``x``.
    disp : bool, default False
        Print a summary at the end.

    Notes
    -----
    The defaults ``K = 3``, ``N = 4``, ``mu = 0.1`` and ``lambda = 0.1`` are the paper's
    (Appx. ``synthetic-setup``). With them ``eta / lambda = 1e-3`` is the effective gradient step
    away from the sampled directions, stable on a unit-curvature quadratic in ``d = 1000``
    (``eta = 1e-3`` there diverges, as does plain zeroth-order SGD at the same effective step).
    There is no learning rate that suits every objective: Rosenbrock from ``x0 ~ N(0, I)`` in
    ``d = 1000`` needs about ``eta = 1e-7`` (``3e-7`` diverges for some seeds), in line with the
    paper's grids.

    Examples
    --------
    >>> import numpy as np
    >>> from zovh_opt import minimize
    >>> res = minimize(lambda x: float(x @ x), np.ones(50), rng=0,
    ...                options={"learning_rate": 1e-3, "maxiter": 500})
    >>> bool(res.fun < 0.5), res.nit, res.nfev
    (True, 500, 1501)
    """
    if tol is not None:
        raise NotImplementedError("tol: a stopping tolerance is not available yet; pass None")
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    if not isinstance(args, tuple):
        args = (args,)
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    options = dict(options or {})
    x0 = _validated_x0(x0)
    cls = METHODS[method]
    specs = {**cls.options, **DRIVER_OPTIONS}
    unknown = sorted(set(options) - set(specs))
    if unknown:
        warnings.warn(
            f"Unknown solver options: {', '.join(unknown)}", OptimizeWarning, stacklevel=2
        )
    driver = resolve(DRIVER_OPTIONS, options)
    optimizer = cls(x0, rng=rng, **{k: v for k, v in options.items() if k in cls.options})
    per_iteration = optimizer.points_per_iteration
    maxfev = driver["maxfev"]
    if maxfev is not None and maxfev < per_iteration + 1:
        raise ValueError(
            f"maxfev must allow one iteration and the final evaluation "
            f"(>= {per_iteration + 1} for method {method!r}), got {maxfev}"
        )
    with _evaluator(fun, args, workers, vectorized, x0) as evaluate:
        return _run(optimizer, evaluate, callback, driver)


def _run(optimizer: Any, evaluate: Callable[[Any], Any], callback: Any, driver: dict) -> Any:
    xp = optimizer.xp
    notify = _callback_caller(callback)
    maxfev, status = driver["maxfev"], None
    while status is None:
        if optimizer.nit >= driver["maxiter"]:
            status = MAXITER
        elif maxfev is not None and optimizer.nfev + optimizer.points_per_iteration + 1 > maxfev:
            status = MAXFEV
        else:
            points = optimizer.ask()
            values = evaluate(points)
            del points
            if not bool(xp.all(xp.isfinite(values))):
                optimizer.nfev += optimizer.points_per_iteration
                status = NONFINITE
                break
            optimizer.tell(values)
            if notify is not None and notify(optimizer, values):
                status = CALLBACK
    x = optimizer.x
    result = OptimizeResult(
        x=x,
        fun=float(evaluate(x[None, :])[0]),
        nit=optimizer.nit,
        nfev=optimizer.nfev + 1,
        status=status,
        success=status == SUCCESS,
        message=MESSAGES[status],
        **optimizer.estimates(),
    )
    if driver["disp"]:
        print(result.message)
        print(f"         Current function value: {result.fun:.6g}")
        print(f"         Iterations: {result.nit}")
        print(f"         Function evaluations: {result.nfev}")
    return result


def _callback_caller(callback: Any) -> Callable[[Any, Any], bool] | None:
    """Wrap ``callback`` in its SciPy form; the wrapper returns True to stop."""
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(f"callback must be callable, got {type(callback).__name__}")
    try:
        wants_result = set(inspect.signature(callback).parameters) == {"intermediate_result"}
    except (TypeError, ValueError):
        wants_result = False

    def call(optimizer: Any, values: Any) -> bool:
        x = optimizer.xp.asarray(optimizer.x, copy=True)
        try:
            if wants_result:
                callback(
                    intermediate_result=OptimizeResult(
                        x=x,
                        fun=float(optimizer.xp.mean(values)),
                        nit=optimizer.nit,
                        nfev=optimizer.nfev,
                    )
                )
            else:
                callback(x)
        except StopIteration:
            return True
        return False

    return call


def _validated_x0(x0: Any) -> Any:
    x0 = as_array(x0)
    xp = namespace_of(x0)
    if x0.ndim != 1 or x0.shape[0] == 0:
        raise ValueError(
            f"x0 must be a non-empty one-dimensional array, got shape {tuple(x0.shape)}"
        )
    if xp.isdtype(x0.dtype, "complex floating") or xp.isdtype(x0.dtype, "bool"):
        raise TypeError(f"x0 must be real, got dtype {x0.dtype}")
    if not xp.isdtype(x0.dtype, "real floating"):
        x0 = xp.astype(x0, xp.float64)
    elif x0.dtype not in (xp.float32, xp.float64):
        raise TypeError(f"x0 must be float32 or float64, got dtype {x0.dtype}")
    if not bool(xp.all(xp.isfinite(x0))):
        raise ValueError("x0 must be finite")
    return x0


def _to_value(v: Any, xp: Any, like: Any) -> Any:
    """One function value as a 0-d array of ``like``'s namespace, dtype and device."""
    if is_array_api_obj(v):
        vxp = namespace_of(v)
        size = 1
        for n in v.shape:
            size *= n
        if size != 1 or not vxp.isdtype(v.dtype, ("real floating", "integral")):
            raise TypeError(
                f"fun must return a real scalar, got an array of shape {tuple(v.shape)} "
                f"and dtype {v.dtype}"
            )
        if vxp is xp:
            return xp.astype(xp.reshape(v, ()), like.dtype)
        v = float(vxp.reshape(v, ()))
    elif not isinstance(v, numbers.Real) or isinstance(v, bool):
        raise TypeError(f"fun must return a real scalar, got {type(v).__name__}")
    return xp.asarray(float(v), dtype=like.dtype, device=_device(like))


class _Call:
    """``fun`` with its extra arguments bound; picklable when ``fun`` is."""

    def __init__(self, fun: Callable[..., Any], args: tuple) -> None:
        self.fun, self.args = fun, args

    def __call__(self, x: Any) -> Any:
        return self.fun(x, *self.args)


@contextmanager
def _evaluator(
    fun: Callable[..., Any], args: tuple, workers: Any, vectorized: bool, like: Any
) -> Iterator[Callable[[Any], Any]]:
    """Yield ``evaluate(points) -> values`` for the chosen evaluation mode."""
    xp = namespace_of(like)
    call = _Call(fun, args)
    if vectorized:
        if workers is not None:
            raise ValueError("workers cannot be combined with vectorized=True")

        def evaluate(points: Any) -> Any:
            values = as_array(call(points))
            n = points.shape[0]
            if tuple(values.shape) != (n,):
                raise ValueError(
                    f"with vectorized=True, fun must return shape ({n},), got {tuple(values.shape)}"
                )
            return xp.stack([_to_value(values[i], xp, like) for i in range(n)])

        yield evaluate
        return
    pool = None
    if workers is None:
        mapper: Callable[..., Any] = map
    elif callable(workers):
        mapper = workers
    elif (
        isinstance(workers, numbers.Integral)
        and not isinstance(workers, bool)
        and (workers == -1 or workers >= 1)
    ):
        pool = ProcessPoolExecutor(max_workers=None if workers == -1 else int(workers))
        mapper = pool.map
    else:
        raise ValueError(
            f"workers must be None, -1, an integer >= 1 or a map-like callable, got {workers!r}"
        )

    def evaluate(points: Any) -> Any:
        rows = [points[i, ...] for i in range(points.shape[0])]
        return xp.stack([_to_value(v, xp, like) for v in mapper(call, rows)])

    try:
        yield evaluate
    finally:
        if pool is not None:
            pool.shutdown()


def zovh(
    fun: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    jac: Any = None,
    hess: Any = None,
    hessp: Any = None,
    bounds: Any = None,
    constraints: Any = (),
    callback: Callable[..., Any] | None = None,
    **options: Any,
) -> OptimizeResult:
    """ZoVH as a custom method for ``scipy.optimize.minimize``.

    ``scipy.optimize.minimize(fun, x0, method=zovh_opt.zovh, options={...})`` runs the same
    optimizer as ``zovh_opt.minimize(fun, x0, method="zovh", options={...})``; the same seed
    gives the same ``x``. ``rng`` is read from the options; other unknown options warn with
    ``OptimizeWarning``. ZoVH uses no derivatives, bounds or constraints: passing them warns.

    SciPy converts ``x0`` to a NumPy array before calling a custom method, so GPU arrays must go
    through `zovh_opt.minimize` instead.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> import zovh_opt
    >>> res = minimize(lambda x: float(x @ x), np.ones(20), method=zovh_opt.zovh,
    ...                options={"rng": 0, "learning_rate": 1e-3, "maxiter": 300})
    >>> res.nit
    300
    """
    for name, value in (("jac", jac), ("hess", hess), ("hessp", hessp)):
        if value is not None and value is not False:
            warnings.warn(f"Method zovh does not use {name}.", RuntimeWarning, stacklevel=3)
    if bounds is not None:
        warnings.warn("Method zovh cannot handle bounds.", RuntimeWarning, stacklevel=3)
    if constraints:
        warnings.warn("Method zovh cannot handle constraints.", RuntimeWarning, stacklevel=3)
    rng = options.pop("rng", None)
    tol = options.pop("tol", None)
    return minimize(fun, x0, args, "zovh", callback=callback, options=options, tol=tol, rng=rng)
