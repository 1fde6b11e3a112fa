"""``minimize`` and the SciPy custom method ``zovh``: the front doors to `Optimizer`."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from scipy.optimize import LinearConstraint, NonlinearConstraint, OptimizeResult

from .new_starts import checked_new_starts, minimize_with_new_starts
from .optimizer import Optimizer
from .run_options import checked_method, known_options
from .stopping import INTERRUPTED

__all__ = ["minimize", "zovh"]


INTERRUPTED_MESSAGE = (
    "Interrupted by the user (KeyboardInterrupt): x and fun are the best point so far, with no "
    "final evaluation. To continue an interrupted run, drive it with zovh_opt.Optimizer: its "
    "run() continues after an interrupt, and save() / Optimizer.load() keep it."
)


def minimize(
    fun: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    method: str = "zovh",
    jac: Any = None,
    hess: Any = None,
    hessp: Any = None,
    bounds: Any = None,
    constraints: Any = (),
    tol: float | None = None,
    callback: Callable[..., Any] | None = None,
    options: dict[str, Any] | None = None,
    *,
    rng: Any = None,
    workers: int | Callable[..., Any] | None = None,
    vectorized: bool = False,
) -> OptimizeResult:
    """Minimize a scalar function from its values alone, like ``scipy.optimize.minimize``.

    With the default ``method="zovh"`` a run goes through these stages, in this order:

    1. ``x0`` is evaluated twice. Values that differ mean a noisy objective: the run then
       skips the quasi-Newton phase, runs the method with more pairs per iteration and ends by
       comparing its answer with ``x0`` on fresh values (*Noisy objectives* below). Where the
       noise is mild (the two values within 5 % of their mean) and ``d <= 20``, a model-based
       trust region comes first: a quadratic model that every value updates, steps within a
       radius, until the radius or the budget runs out (``result.trust_region``).
    2. A deterministic run starts with a finite-difference quasi-Newton phase
       (``quasi_newton``): forward-difference gradients and L-BFGS steps, until it converges,
       finds noise, meets a wall of ``f`` or reaches its step limit. At ``d <= 3`` the trust
       region opens it: its first ``10 d`` evaluations, then the phase from its centre.
       Where the phase's first gradient's second difference, or its convergence, shows
       ruggedness (a solver's tolerance), or it finds mild noise, at ``d <= 20``, the trust
       region of stage 1 goes on from its point.
    3. The curvature method takes over from the phase's point: a Hessian model learned from
       the paper's estimator on antithetic pairs (full up to ``d = 40``, diagonal above; the
       paper's Algorithm 1 where less than ``30 d`` evaluations are left), with steps judged
       by the step rule. After a converged phase its first iterations end the run where they
       find nothing lower.
    4. Up to ``d = 3``, where they find a lower value, the phase starts again there (``d = 2``,
       away from its point: basin hopping) or the method refines near it at a finer scale; a
       phase cut by its step limit resumes where the method did no better.
    5. The method's stalls go on at finer scales (the safeguard) until a tolerance, a budget
       or ``ftarget`` ends the run; failed evaluations and divergence restart it.
    6. The final evaluation at the returned point (for a noisy run, the comparison with ``x0``
       and the fresh values).

    ``new_starts`` runs all of this again from new points while the budget lasts.

    Parameters
    ----------
    fun : callable
        ``fun(x, *args) -> float``: the objective, evaluated at a one-dimensional array of the
        namespace, dtype and device of ``x0``. It must return a real scalar (a Python number, a
        NumPy scalar or a 0-d/size-1 array). With ``vectorized=True`` it receives an
        ``(n_points, d)`` array and returns ``(n_points,)`` values. An exception raised by
        ``fun`` propagates unchanged; NaN and +-inf values are handled (see Notes).
    x0 : array_like, shape (d,)
        Starting point: a NumPy, PyTorch or CuPy array (anything array-api-compat knows), or a
        sequence of numbers (made a NumPy float64 array). float32 and float64 are kept as given;
        integer input becomes float64. A scalar is a one-element array, as in SciPy.
    args : tuple, optional
        Extra arguments passed to ``fun``.
    method : {"zovh", "zo-sgd", "zoar", "hizoo", "mezo"}, default "zovh"
        The optimizer; see the Options section. ``"zovh"`` (`ZoVH`) is by default a
        curvature model: a Hessian model (full up to ``d = 40``, diagonal above) learned
        across iterations from the paper's estimator, ``2 P`` evaluations per iteration (``P``
        antithetic pairs, 5 at ``d = 10``, 7 at ``d = 50``), steps along its Newton step
        judged by the step rule; with a float
        ``learning_rate``, ``curvature="off"`` or a budget below ``30 d`` it is the paper's
        Algorithm 1 (``K = 3`` evaluations per iteration). ``result.iteration`` says which
        ran. The others are the methods the paper compares with, under the same driver:
        ``"zo-sgd"``, vanilla ZO-SGD with the anchor baseline (`ZOSGD`, ``K + 1``);
        ``"zoar"``, averaged baseline and query reuse with plain gradient steps (`ZOAR`,
        ``K``); ``"hizoo"``, steps preconditioned by a diagonal Hessian estimate (`HiZOO`,
        ``2K + 1``); ``"mezo"``, two-point central differences (`MeZO`, ``2K``). Each class's
        docstring gives its formula and reference.
    jac, hess, hessp : optional
        Accepted for SciPy's signature and not used, with SciPy's ``RuntimeWarning`` (as for
        its derivative-free methods). ``jac=True`` means that ``fun`` returns the value and
        the gradient, as in SciPy: the value alone is used.
    bounds : scipy.optimize.Bounds or sequence of (min, max) pairs, optional
        Box constraints, as in SciPy: ``Bounds(lb, ub)`` or one ``(min, max)`` pair per
        variable, ``None`` (or +-inf) for an open end, ``min == max`` for a fixed variable.
        Every evaluated point, and ``x``, lies in the box: the run takes place in
        unconstrained coordinates that a smooth periodic map sends into the box (the user
        guide's page *Bounds*), so the estimators see a smooth objective. An ``x0`` outside
        the box is clipped into it with SciPy's ``OptimizeWarning``; a lower bound above its
        upper bound is a ``ValueError``.
    constraints : empty
        Other constraints are refused with a ``ValueError`` (a penalty in ``fun`` is a way
        to keep them approximately).
    tol : float, optional
        Tolerance on the smoothed decrease of f: sets the ``ftol`` option unless given there.
    callback : callable, optional
        Called after every iteration, in either SciPy form: ``callback(intermediate_result)``
        (detected by that parameter name) with an ``OptimizeResult`` holding ``x``, ``fun``
        (the mean of the iteration's function values, an estimate of the smoothed objective
        at ``x``), ``nit`` and ``nfev``; or ``callback(xk)`` with a copy of the iterate. Raising
        ``StopIteration`` ends the run with ``success=False`` and status 99.
    options : dict, optional
        Method and driver options, see below. Unknown names warn (``OptimizeWarning``).
    rng : None, int, numpy.random.Generator, torch.Generator or cupy generator, optional
        Source of the random directions (SPEC 7). The same seed, backend and dtype give the
        same run bit for bit.
    workers : int or map-like callable, optional
        Evaluate the points of one iteration in parallel, as in
        ``scipy.optimize.differential_evolution``: an int >= 2 is the size of a process pool
        (-1: one process per CPU; 1: serial), and ``fun`` must then be picklable; a callable
        ``workers(func, iterable)`` is used like ``map`` and may run anywhere, for example a
        Dask cluster: ``workers=lambda f, xs: client.gather(client.map(f, list(xs),
        pure=False))``.
    vectorized : bool, default False
        Call ``fun`` once per iteration with all points stacked in rows, as GPU users batch
        their forward passes. The batch is its own cost in memory: ``2 P`` rows of ``d``
        for the curvature model (serial evaluation makes one point at a time).

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x`` (in the namespace and on the device of ``x0``): the evaluated point with the
        lowest finite value, and ``fun`` that value (for a noisy objective: the average of
        the recent centres, the final iterate or ``x0``, and the mean of fresh evaluations
        there, see Notes); ``noise_std`` (0 for a
        deterministic objective; with ``noisy=False`` absent) and ``fun_std_error``; ``nit``,
        ``nfev`` (every evaluation, the final one at the last iterate included), ``status``,
        ``success``, ``message``; ``iteration`` (what ran: the method's name, or for
        ``"zovh"`` Algorithm 1 or the full or diagonal curvature model); ``learning_rate``
        (the rate at the end), ``restarts`` (one dict per safeguard restart or
        return from a noisy run's drift),
        ``failed_evaluations`` (values that were NaN or +-inf), ``trace`` (per iteration
        ``nit``, ``nfev`` and ``fun``, the mean
        of that iteration's values, for plotting); where they ran, ``quasi_newton`` and
        ``trust_region`` (steps ``nit``, evaluations ``nfev``, why it ``ended``; an opening
        and a region after it count together; the region's fresh starts,
        ``restarts``).

        ``jac`` is the latest gradient estimate of the Gaussian-smoothed objective from the
        ``M`` latest queries (eq. (6); eq. (35) with query reuse; central differences of the
        ``P`` pairs for the default ``"zovh"``): unbiased, but with ``M`` values for ``d``
        unknowns its error is about ``sqrt(d / M)`` times the gradient's norm, so when
        ``d >> M`` it is a descent direction, not a gradient to test optimality with. For
        the default ``"zovh"`` (its curvature model), ``jac`` is the least-squares gradient of
        its pairs where the fit of the full model is in use (exact on a quadratic once they
        span ``d`` directions), and ``hess_inv`` is the learned inverse
        Hessian: up to ``d = 40`` (the full model) a ``(d, d)`` array, above it
        :math:`\\operatorname{diag}(1/h)`, an estimate of the inverse Hessian's diagonal, as
        a linear operator. With ``curvature="off"`` it is
        :math:`(\\hat H + \\lambda I)^{-1}` of the last iteration (eqs. (14) and (15)): along
        the ``M`` query directions it holds their measured curvature, elsewhere it is
        :math:`I / \\lambda`, so in high dimension it is close to :math:`I / \\lambda` and is
        not an estimate of the inverse Hessian. Where the quasi-Newton phase ran, ``hess_inv``
        comes from the part that learned the curvature: L-BFGS's inverse Hessian of the
        phase's secant pairs (a linear operator like SciPy's ``LbfgsInvHessProduct``, with
        ``diagonal()`` and ``todense()``) until the method's curvature model has had as many
        pairs as it has unknowns (``d``, or ``d (d + 1) / 2`` for the full model) or as many
        evaluations as the phase, the model's after (on diagonal quadratics of condition 1e6
        at ``d = 1000`` the pairs' diagonal correlates with the true one at 0.9999 in log
        scale). With ``bounds`` neither is given (they would be derivatives in the run's
        unconstrained coordinates).

        ``status``: 0 ``ftol``, ``xtol`` or ``flat_iterations`` met, 1 ``maxfev``, 2
        ``maxiter``, 3 failed (the objective gave no finite value near ``x``, also after
        ``max_restarts`` restarts with shorter steps), 4 ``ftarget``
        reached, 5 ``maxtime``, 6 interrupted (``KeyboardInterrupt``: the result so far,
        without a final evaluation),
        99 the callback raised ``StopIteration``. ``success`` is True for 0 and 4.

    Options
    -------
    curvature : {"auto", "full", "diagonal", "off"}, default "auto" (``"zovh"``)
        ``"diagonal"``: a diagonal model of the Hessian learned across iterations from the
        paper's Hessian estimator (eq. (9)) on ``P`` antithetic pairs per iteration whitens
        the queries, and the step is the model's Newton step for the central-difference
        gradient (the theory page, *The curvature model*). ``"full"``: the same with a
        symmetric positive definite ``d x d`` model, which whitens rotated Hessians;
        :math:`O(P d^2)` per iteration, and it learns at a rate of order :math:`P / d^2`;
        up to ``d = 20``, with a deterministic objective, a least-squares fit of the same
        pairs runs beside it and takes over where it predicts them, with a least-squares
        gradient and the full Newton step (the theory page, *The full curvature model*).
        ``"off"``: the paper's
        Algorithm 1. ``"auto"``: ``"full"`` up to ``d = 40`` and ``"diagonal"`` above, with
        ``learning_rate="auto"`` and a budget ``maxfev`` of at least ``30 d`` evaluations
        (the default budget is ``1000 d``),
        ``"off"`` with a float learning rate or a smaller budget, where the paper's iteration,
        3 evaluations per step with 12 directions reused, ends lower (the user guide's page
        *Tuning*). The budget is ``maxfev`` (default ``1000 d``): a run bounded by
        ``maxtime`` or ``maxiter`` alone runs the model; pass ``maxfev`` (or ``curvature``)
        to choose. The options ``regularization``, ``product`` and ``inverse`` belong to
        ``"off"``.
    learning_rate : float or "auto", default "auto"
        ``"auto"``: the parameter-free step rule (the user guide's page *Step size*).
        Each step ``x <- c - eta * p`` from the last accepted point ``c`` is judged by the mean
        of the next iteration's values, which are evaluated there anyway: kept when it is
        lower than at ``c`` (``eta`` grows by ``2**(1/4)``), undone otherwise (``eta`` shrinks
        by ``2**(-1/5)``; the next iteration measures ``c`` again). The first step is
        ``0.1 |x0|`` long (``0.1 sqrt(d)`` from ``x0 = 0``). ``f -> s f`` leaves every iterate
        unchanged. With the curvature model ``eta`` is a trust factor of at most 1 on the
        model's Newton step, with a trust radius, and where ``x0`` was measured, ``f``
        found deterministic (``noisy="auto"``) and the first pairs measure no curvature (a
        linear ``f``), the first step is 100 times as long. A float is the paper's
        Algorithm 1, ``x <- x - eta * p`` after every iteration, with ``smoothing`` and
        ``regularization`` at the paper's 0.1 unless given and no tolerance stop unless
        given; divergence then restarts with a quarter of it.
    smoothing : float or "auto", default "auto"
        Smoothing radius :math:`\\mu`, in the units of ``x``: queries are ``x + mu * u``
        with ``u ~ N(0, I)``, at a distance of about ``mu sqrt(d)``. With the step rule,
        ``"auto"`` starts at ``0.1 l / sqrt(d)`` (``l = |x0|``, the length scale) and keeps
        ``mu sqrt(d)`` near the step length, so it shrinks as the run converges, down to
        where noise in the values dominates their differences; with a float
        ``learning_rate`` it is 0.1. A number is absolute: compare values relative to
        ``l / sqrt(d)``, not 0.1 or 0.3 as such. Larger values lower the variance and raise
        the smoothing bias (Thm. 4.8).
    regularization : float or "auto", default "auto" (``"zovh"``)
        Ridge :math:`\\lambda` of the inverse :math:`(\\hat H + \\lambda I)^{-1}`. ``"auto"``
        with the step rule: twice the largest curvature term ``|nu_m| |u_m|^2 / (M - 1)`` of
        the kept queries, which scales with ``f`` and keeps every Woodbury denominator at least
        half its ``lambda^2 (M - 1)`` term; with a float ``learning_rate`` it is 0.1. Far from
        the sampled directions the step is the gradient divided by :math:`\\lambda`.
    n_directions : int, default 3 (1 for ``"hizoo"`` and ``"mezo"``; "auto" for ``"zovh"``)
        Directions per iteration, ``K`` (>= 3 for ``"zovh"`` with ``product="shared"``). For
        ``"zovh"`` with its curvature model, the antithetic pairs ``P`` (``2 P`` evaluations),
        ``"auto"``: ``(4 + floor(3 ln d)) // 2`` (12 at ``d = 1000``), and where the
        objective is known to be noisy before the first iteration 4 times that, as many as
        leave 200 iterations in ``maxfev``; ``"auto"`` is 3 with ``curvature="off"``.
    history : int, default 4 (``"zovh"``, ``"zoar"``)
        Iterations of queries reused, ``N`` (query reuse, eq. (10)); 1 disables
        reuse. With the curvature model the step uses the ``P`` pairs of each of the last
        ``N`` iterations, the earlier ones' differences moved to ``x`` with the model; it keeps
        their ``(N - 1) P`` directions (``directions="seeds"``: only their block numbers).
    hessian_smoothing : float in (0, 1], default 1e-8 (``"hizoo"``)
        HiZOO's :math:`\\alpha`, the weight of each new diagonal Hessian estimate in its
        running average.
    product : {"shared", "decoupled"}, default "shared" (``"zovh"``)
        ``"shared"``: Hessian and gradient from the same ``K`` queries, bias-corrected (eq.
        (16)); ``"decoupled"``: from two independent sets, ``2K``
        evaluations per iteration.
    inverse : {"diagonal", "exact"}, default "diagonal" (``"zovh"``)
        Diagonal-Gram approximation (eq. (15)) or exact Woodbury inverse (eq.
        (14)) through an ``M x M`` solve.
    directions : {"auto", "vectors", "seeds"}, default "auto" (``"zovh"``; ``"zoar"``: "vectors")
        Keep the directions, or only their block numbers in the run's counter-based
        generator and draw them again when needed. Both give bit-identical runs. The paper's
        iteration (``"auto"``: ``"vectors"``) keeps the ``N K`` history directions in one
        ``(N K, d)`` ring buffer; ``"seeds"`` keeps ``O(N K)`` numbers plus the ``K``
        directions of the newest iteration and draws the ``(N - 1) K`` older ones again
        every iteration (twice on a GPU, once on the CPU, where the step and the next block
        share one pass). The diagonal curvature model holds ``N P`` directions (about
        ``(N P + 14) d`` floats at its peak) with ``"vectors"``; with ``"seeds"`` none: each
        pair of points draws its direction, and each step draws the ``N P`` directions again
        span of columns by span of columns (about 17 d floats at its peak, 1.8 times the
        held iteration's own time at ``d = 10^6`` on one thread: ``python -m
        zovh_opt.benchmarks memory``; rows are drawn in threads on the process's cores, at
        most ``OMP_NUM_THREADS``). ``"auto"`` chooses ``"seeds"`` where the held directions
        would take more than 1 GiB (``d > 1.3e6`` in float64 at the defaults) or a quarter
        of a GPU's free memory. The full model holds its ``P`` new directions either way.
    maxfev : int, default 1000 d
        Maximum number of function evaluations, the final ones included. ``maxfun``, the
        name SciPy's L-BFGS-B and TNC use, is read as ``maxfev``. The default is SciPy's
        Powell's.
    maxiter : int, optional
        Maximum number of iterations; by default only ``maxfev`` bounds the run.
    ftol : float or "auto", default "auto"
        Stop with success when the median f estimate of the last ``ftol_window`` iterations
        is lower than that of the window before by at most ``ftol`` times the larger of their
        magnitudes, or by less than the precision of f at ``x0`` (``eps`` of ``x0``'s dtype
        times the scale of f there). The f estimate of an iteration is the mean of its values,
        less the curvature model's smoothing bias for the default ``"zovh"``. ``"auto"``:
        1e-12 with the step rule (the estimates no longer decrease: converged, or at the noise
        floor), none with a fixed rate. ``tol`` sets it. With the step rule the first 3 times
        the test fires the run goes on at a 10 times finer scale instead (a stall is not yet
        convergence: a rugged objective looks like noise at one scale; ``_safeguard``).
        After a quasi-Newton phase that converged (``quasi_newton``), the method's first 10
        iterations (20 at ``d = 2``; ``ftol_window``, if fewer) end the run where they found
        no value lower than the phase's by more than ``ftol`` (relative).
    ftol_window : int, optional
        Iterations per ``ftol`` window; by default those of ``2 d`` evaluations, at least 50.
    xtol : float or "auto", default "auto"
        Stop with success when the step length falls below ``xtol`` times the length scale of
        ``x0`` (``|x0|``, or ``sqrt(d)`` when ``x0 = 0``; with bounds, each coordinate's
        ``|x0_i|`` capped at its interval's width). ``"auto"``: ``1e-3 sqrt(eps)``
        with the step rule (1.5e-11 in float64, 3.5e-7 in float32), none with a fixed rate.
        Relative to ``x0``'s size, not to its distance from the minimum: from
        ``x0 = 1e8 + offset`` the steps stop near ``1.5e-3``; pass a smaller ``xtol`` (or
        ``None``) when the start is far from the origin and close to the answer.
    flat_iterations : int or "auto", default "auto"
        Stop with success when every value of this many iterations in a row is one and the
        same number: ``f`` is flat at the queries' spread (a plateau of a step function, a
        quantized output, or ``f`` rounded at its minimum), where the step rule only shrinks
        its queries (every trial ties with its centre). Where that value is the only one the
        run has seen, the message says that ``x0`` lies on a plateau. ``"auto"``: 5 with the
        step rule, none with a fixed rate.
    maxtime : float, optional
        Wall-clock budget in seconds, checked before each iteration. The final evaluations
        (1, or ``2 final_evaluations`` for a noisy objective) follow it: they are the answer.
    ftarget : float, optional
        Stop (status 4, success) once a point with ``f <= ftarget`` has been evaluated (for
        a noisy objective: once an iteration's f estimate is that low).
    noisy : bool or "auto", default "auto"
        Whether the objective is noisy. ``"auto"`` (with the step rule; a fixed rate is
        ``False``) finds out: ``x0`` is evaluated twice before the first iteration, and the
        best point again after iterations 4, 8, 16, ...; a deterministic objective repeats
        its values, and a run whose values differ treats the objective as noisy from then
        on (see Notes). ``True``: noisy from the start; ``False``: never measured, never
        treated as noisy.
    quasi_newton : "auto" or False, default "auto"
        ``"auto"``: where the objective is deterministic (``x0``'s two values repeat, or
        ``noisy=False``), a ``"zovh"`` run with the step rule and ``curvature`` not
        ``"off"``, whose budget pays for three gradients, starts with a finite-difference
        quasi-Newton phase: forward-difference gradients (``d`` evaluations each, in asks of
        at most 64 points) and L-BFGS steps judged on function values alone, until a line
        search fails, a step no longer decreases ``f``, three steps in a row are shorter
        than the differences' own step (below their resolution), 200 steps (1000 where
        ``d < 10``, the secant pairs' memory), or noise (the centre measured again) or values
        that fail forwards and backwards (a failed forward difference is measured backwards);
        the method then starts from its point with the budget left. Where the step limit ended
        it and the method's first ``ftol`` stall comes without a value below the phase's,
        the phase resumes from its point, without the limit; at ``d = 2``, where the
        method's first 20 iterations after a converged phase find a lower value away from
        its point, the phase starts again there (basin hopping); up to ``d = 3``, where
        they find one only at the phase's own resolution, the method starts again from it at
        ``0.03`` times the length scale (it refines there). With ``bounds`` it runs in the
        coordinates the box map makes unconstrained, as the method does (every point it
        evaluates is in the box). Each gradient is an iteration; ``result.quasi_newton``
        gives the phase's ``nit`` (steps), ``nfev``, why it ``ended`` (``None``: still
        running at the end), how often it ``resumes`` and ``hops``, and its line searches
        that met a ``walls``: a jump of ``f`` that a difference crossed (the slope promised a
        decrease that even the shortest trial did not give, or steps cut short by trials far
        above ``f`` crawled towards it); such a run's tolerances do not end it with success,
        its budgets do. With ``bounds``, each difference step stays
        within a tenth of the box map's margin. On smooth deterministic
        problems it is what finite-difference L-BFGS-B is, with a line search that costs one
        evaluation a trial (docs, *Theory*, *The quasi-Newton phase*).
        ``False``: the method from ``x0``.
    final_evaluations : int, optional
        Evaluations at the final iterate; for a noisy objective also at ``x0`` (before the
        first iteration), at the average of the recent centres and at the returned point.
        By default 1, and for a noisy objective 10 at each of those points but the returned
        one, which takes 1 % of the run's evaluations (1 % of ``maxfev`` where it ends the
        run), 10 to 1000, and a close comparison with ``x0`` up to as many more (see *Noisy
        objectives* below); given, every one of those blocks has this size.
    max_restarts : int, default 5
        Restarts after 10 iterations in a row without finite values, before the next such
        failure ends the run with status 3. Divergence of a fixed rate always restarts.
    new_starts : int, default 0
        After a run has converged (status 0), or failed where ``f`` has no finite values
        (status 3), start again from elsewhere, up to this many times (a run on an
        objective known to be noisy converges only by an ``ftol``, ``xtol`` or
        ``flat_iterations`` given: those left ``"auto"`` go with the noise), while
        ``maxfev`` and ``maxtime`` (counted over all runs) leave room: the ``k``-th new
        start is uniform in the box where both bounds are finite, else
        ``x0 + 2**(k-1) |x0| / sqrt(d) * N(0, I)`` (``|x0|``: ``sqrt(d)`` at ``x0 = 0``).
        Up to ``d = 3`` each is a run like the first (many short local runs visit more
        basins), and at ``d = 2``, after two runs, those that have spent at most half the
        evaluations of the others begin near the best answer so far, at a distance learned
        from the answers' spacing (monotonic basin hopping: down a funnel of minima);
        above, as BIPOP-CMA-ES's restarts, each is widened where the widened ones have
        spent no more evaluations than the local ones, else local: the ``j``-th
        widened start's queries lie ``min(64, 4**j)`` times as far from their centre,
        relative to the steps, as a first run's, a widening that falls to 1 as the eighth
        root of how much its steps have shortened, with ``min(8, 2**j)`` times its pairs
        (``f`` smoothed at a coarser scale and averaged over more queries, as
        IPOP-CMA-ES's population, doubled at each restart; its asks, and a ``vectorized``
        batch, are that many times larger); in a box its queries stay within a tenth of the
        narrowest width per coordinate. The result is the best run's, with
        ``nfev`` and ``nit`` of all and ``runs`` (each run's ``fun``, ``nfev``, ``nit``,
        ``status``). For multimodal objectives with a budget to spend; ``minimize`` only
        (an `Optimizer` is one run).
    x_scale : "x0", float or array_like of d floats, optional
        The scale of each coordinate: the run takes place in ``x / x_scale``, so its first
        step and its smoothing radius are ``x_scale`` times as long in each coordinate, as
        ``x_scale`` of ``scipy.optimize.least_squares`` and ``CMA_stds`` of pycma. ``"x0"``:
        the start's own, ``|x0_i|`` (with bounds capped at the interval's width; where
        ``x0_i = 0`` the width capped at 1, or 1), as Nelder-Mead's initial simplex. For
        parameters of very different sizes. By default, where every coordinate has a bound,
        the bounds' scales: an interval's width, and for a one-sided bound (``(0, None)``,
        say) the distance of ``x0_i`` from it (near the bound, ``max(|b|, |x0_i|)``); not
        with a number for ``learning_rate``, ``smoothing`` or ``regularization``, nor with
        ``curvature="off"``. Otherwise, and with ``x_scale=1``, every coordinate has the
        scale of ``|x0|``.
    disp : bool or int, default False
        Print a table row (iteration, evaluations, f estimate, step norm, learning rate,
        elapsed seconds) about 20 times a run, or every ``disp`` iterations, then a summary;
        ``0`` is ``False``, as in SciPy.
    progress : bool, default False
        Show a progress bar (needs ``tqdm``: ``pip install 'zovh-opt[progress]'``).

    Notes
    -----
    *Failures.* A NaN or +-inf value is missing data: its iteration is dropped (no value
    reaches the estimators, the next iteration draws new directions, and a trial step of the
    step rule is undone) and ``failed_evaluations`` counts it. Ten such iterations in a row
    restart from the last accepted point (with a fixed rate: the iterate with the lowest f
    estimate) with steps, and the step rule's radius, cut by 4; after ``max_restarts`` such
    restarts the next ends the run with status 3. With a fixed rate, an f estimate that
    shows the iterates diverging (it grew a hundredfold over its scale) restarts the same
    way, without limit. ``x`` is never non-finite. An exception in ``fun`` propagates
    unchanged; use `Optimizer` to go on after it. The rules are those of the safeguard
    (docs: *Architecture*).

    *Noisy objectives.* For ``f(x) + sigma * xi`` the lowest of thousands of noisy values is
    biased low (it picks favourable noise) and its point is not the best one. Once the run
    knows the objective is noisy (``noisy="auto"`` found it, or ``noisy=True``), ``x0`` is
    measured ``final_evaluations`` times and the run ends with as many values at the final
    iterate and (with the step rule) at the average of its recent centres, which removes the
    noise the last steps left in the iterate: the candidate is the average unless the
    iterate's values are significantly the lower (ranks or medians), and ``x`` is the
    candidate where the mean and the median of its values are both below ``x0``'s, else
    ``x0`` (where noise decided the step rule's comparisons the iterate can drift uphill;
    where neither side is significantly the lower, both get more values, doubling, within 1 %
    of the run), ``fun`` the mean of fresh values there (unbiased for the mean of ``fun`` at
    ``x``), ``fun_std_error`` its standard error (the sample's) and ``noise_std`` the noise's
    standard deviation there; the message says so. Those values are 1 % of the run's
    evaluations (and what the comparison left of its 1 %), 10 to 1000, unless
    ``final_evaluations`` is given: ten values of a skewed noise rarely hold the large ones
    that carry its mean, and ``fun`` then lies beyond three of its standard errors far more
    often than the 1.6 % of ten normal values (lognormal values: 10 % at 10 values, 1.4 % at
    200). During the run
    the batches are read with robust statistics (medians, clipped differences: outliers), the
    smoothing radius is kept above the noise, every 40 iterations the step rule's centre is
    measured against the best point measured so far (at first ``x0``) and where it drifted
    significantly above it the run goes back there with shorter steps (a ``restarts`` entry
    with cause ``"drift"``; 2.5 % of the budget), and ``ftol``, ``xtol`` and
    ``flat_iterations`` left ``"auto"`` are off (discrete noise repeats values by chance): a
    noisy run ends by its budget,
    ``ftarget`` or the tolerances the user set (docs: *Noisy objectives*).

    With a float ``learning_rate``, ``K = 3``, ``N = 4``, ``mu = 0.1`` and ``lambda = 0.1``
    are the paper's (Appx. F.2), and the run is its Algorithm 1. There is no
    fixed rate that suits every objective: Rosenbrock from ``x0 ~ N(0, I)`` in ``d = 1000``
    needs about ``eta = 1e-7`` (``3e-7`` diverges for some seeds), a unit quadratic ``1e-4``.

    Examples
    --------
    The default: no learning rate to choose; the run stops when it has converged.

    >>> import numpy as np
    >>> from zovh_opt import minimize
    >>> res = minimize(lambda x: float(np.sum((x - 0.3) ** 2)), np.ones(50), rng=0)
    >>> res.success, bool(res.fun < 1e-12), res.iteration
    (True, True, "diagonal curvature model (curvature='diagonal')")

    The paper's Algorithm 1, at a fixed learning rate, for a fixed number of iterations:

    >>> res = minimize(lambda x: float(x @ x), np.ones(50), rng=0,
    ...                options={"learning_rate": 1e-3, "maxiter": 500})
    >>> bool(res.fun < 0.5), res.nit, res.nfev, res.iteration
    (True, 500, 1501, "Algorithm 1 (curvature='off')")

    A noisy objective, stopped by the smoothed-decrease rule:

    >>> rng = np.random.default_rng(1)
    >>> noisy = lambda x: float(x @ x) + 0.01 * rng.standard_normal()
    >>> res = minimize(noisy, np.ones(50), rng=0, tol=1e-3,
    ...                options={"learning_rate": 1e-3, "noisy": True, "maxiter": 5000})
    >>> res.status, bool(abs(res.fun - float(res.x @ res.x)) < 5 * res.fun_std_error)
    (0, True)
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, got {type(fun).__name__}")
    method = checked_method(method)
    fun = _unused_derivatives(fun, method, jac, hess, hessp)
    _refuse_constraints(constraints)
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, got {type(options).__name__}")
    options = dict(options or {})
    new_starts = checked_new_starts(options.pop("new_starts", 0))
    options = known_options(method, options, stacklevel=2)

    def run(optimizer: Optimizer) -> OptimizeResult:
        res = optimizer.run(fun, args, callback=callback, workers=workers, vectorized=vectorized)
        if res.status == INTERRUPTED:  # a minimize caller cannot run() again
            res.message = INTERRUPTED_MESSAGE
        return res

    if new_starts:
        return minimize_with_new_starts(
            x0, method, new_starts, bounds=bounds, options=options, tol=tol, rng=rng, run=run
        )
    return run(Optimizer(x0, method, bounds=bounds, options=options, tol=tol, rng=rng))


def _unused_derivatives(fun: Callable[..., Any], method: str, jac: Any, hess: Any, hessp: Any):
    """Warn about derivatives as SciPy's derivative-free methods do; with ``jac=True`` (``fun``
    returns the value and the gradient) the value alone."""
    if jac is not None and jac is not False:
        warnings.warn(
            f"Method {method} does not use gradient information (jac).", RuntimeWarning, 3
        )
    if hess is not None:
        warnings.warn(
            f"Method {method} does not use Hessian information (hess).", RuntimeWarning, 3
        )
    if hessp is not None:
        warnings.warn(
            f"Method {method} does not use Hessian-vector product information (hessp).",
            RuntimeWarning,
            3,
        )
    if jac is True:
        return _ValueOnly(fun)
    return fun


class _ValueOnly:
    """``fun`` that returns ``(value, gradient)``, reduced to its value (picklable)."""

    def __init__(self, fun: Callable[..., Any]) -> None:
        self.fun = fun

    def __call__(self, x: Any, *args: Any) -> Any:
        return self.fun(x, *args)[0]


def _refuse_constraints(constraints: Any) -> None:
    """Constraints other than bounds are refused: the methods have no way to keep them."""
    if constraints is None:
        return
    if isinstance(constraints, (dict, LinearConstraint, NonlinearConstraint)):
        constraints = [constraints]
    if len(constraints) > 0:
        raise ValueError(
            "zovh_opt methods take bounds but no other constraints: pass box constraints as "
            "bounds=, or use a constrained method such as scipy.optimize.minimize(method="
            "'COBYQA'). A penalty added to fun is a way to keep other constraints approximately."
        )


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
    gives the same ``x``. ``rng``, ``workers`` and ``vectorized`` are read from the options;
    other unknown options warn with ``OptimizeWarning``. ``bounds`` are kept as by
    `zovh_opt.minimize`; ``jac``, ``hess`` and ``hessp`` are not used and warn; other
    constraints are refused.

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
    rng = options.pop("rng", None)
    tol = options.pop("tol", None)
    workers = options.pop("workers", None)
    vectorized = options.pop("vectorized", False)
    return minimize(
        fun,
        x0,
        args,
        "zovh",
        jac,
        hess,
        hessp,
        bounds,
        constraints,
        callback=callback,
        options=options,
        tol=tol,
        rng=rng,
        workers=workers,
        vectorized=vectorized,
    )
