"""Every tuning constant of a run, in one place: frozen dataclasses, one per part of the run,
each field with a one-line reason; the evidence is on the docs' page *Tuning constants*.

A run reads the tuning that is `active`: `DEFAULT` unless an experiment set another with
`using` (a context manager, per thread and per task of ``contextvars``) around the run::

    import dataclasses
    from zovh_opt import tuning

    wider = dataclasses.replace(tuning.DEFAULT.dimensions, HOP_DIMENSIONS=3)
    with tuning.using(dataclasses.replace(tuning.DEFAULT, dimensions=wider)):
        res = zovh_opt.minimize(f, x0)

The fields keep the names the code, the docs and the records used for the constants.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from collections.abc import Iterator

__all__ = ["DEFAULT", "Tuning", "active", "using"]
__all__ += [
    "Box",
    "Curvature",
    "Dimensions",
    "Fit",
    "Method",
    "NewStarts",
    "Noise",
    "QuasiNewton",
    "Safeguard",
    "StepRule",
    "Stopping",
    "TrustRegion",
]


@dataclasses.dataclass(frozen=True)
class Dimensions:
    """The dimension thresholds: up to which d a part of the run applies."""

    # up to this d a lower value the method finds away from a converged phase's point starts the
    # phase again there (basin hopping)
    HOP_DIMENSIONS: int = 2
    # up to this d, where that lower value lies near the phase's point, the method starts again
    # there at a finer scale
    REFINE_DIMENSIONS: int = 3
    # up to this d every new start is a run like the first (not widened)
    LOCAL_DIMENSIONS: int = 3
    # up to this d some new starts begin near the best answer (basin hops)
    PERTURBED_DIMENSIONS: int = 2
    # up to this d the full model's first step is FULL_INITIAL_STEP l
    INITIAL_STEP_MAX_DIMENSION: int = 10
    # the least-squares Hessian fit runs up to this d (its cost: n^2 P per iteration)
    FIT_MAX_DIMENSION: int = 20
    # "auto" learns a full model up to this d, a diagonal one above
    FULL_MODEL_MAX_DIMENSION: int = 40
    # up to this d a mildly noisy run starts with the model-based trust region ((d + 1)(d + 2) / 2
    # unknowns, 231 at d = 20: 3.2 ms an ask; mild-noise cells won at d = 20 4 -> 12 of 15)
    TRUST_REGION_MAX_DIMENSION: int = 20
    # up to this d a deterministic run opens with the trust region (at d = 5 new starts solved
    # 0.655 -> 0.632 of COCO's targets, instances 1-10, three seeds)
    OPENING_MAX_DIMENSION: int = 3


@dataclasses.dataclass(frozen=True)
class QuasiNewton:
    """The quasi-Newton phase (`zovh_opt._driver.quasi_newton`): differences, L-BFGS."""

    # secant pairs kept (L-BFGS-B's default m)
    MEMORY: int = 10
    # points of one gradient ask at most: the asks' memory is BLOCK d floats
    BLOCK: int = 64
    # the first trial step's length over the length scale l
    FIRST_STEP: float = 0.1
    # sufficient decrease: f(x + a p) <= f(x) + ARMIJO a g'p
    ARMIJO: float = 1e-4
    # trials of one line search before the phase ends
    BACKTRACKS: int = 30
    # a failed line search whose shortest trial was promised this much of |f| met a wall, not a
    # minimum
    WALL: float = 1e-4
    # a backtracked trial this many times |f| above f(x) met a jump or a wall, not curvature; short
    # steps after one are no convergence
    JUMP: float = 1e6
    # coordinates of a gradient measured backwards after a failed forward
    MAX_RETRIES: int = 64
    # asks that measure a failed coordinate again, at -h, h/2, -h/2, h/4, -h/4 (a failure at
    # 1 point in 40 fails both ways at 1 coordinate in 1600: 4 % of 70-d gradients)
    RETRY_ASKS: int = 5
    # the phase runs where maxfev pays for this many gradients at least
    MIN_GRADIENTS: int = 3
    # the phase's step limit where d >= MEMORY (the curvature model then learns better)
    MAX_STEPS: int = 200
    # the phase's step limit where d < MEMORY (the pairs span the space)
    SMALL_D_STEPS: int = 1000
    # a lower value this many l from the phase's point is another basin (false convergences: 1e-8 to
    # 6e-5 l)
    HOP_DISTANCE: float = 1e-3
    # the length scale, over l, of the method started again near a converged phase's point
    REFINE_SCALE: float = 0.03
    # a converged phase whose first step gave less than this of its predicted decrease is stalled
    STALLED_RATIO: float = 0.05
    # accepted steps in a row shorter than the difference step that end the phase
    SHORT_STEPS: int = 3
    # that end counts as convergence only where eps is at most this (float64)
    SHORT_STEPS_MAX_EPS: float = 1e-12
    # steps in a row without positive curvature after which the phase drops its pairs
    SKIPPED_PAIRS: int = 3
    # failed trials in a row whose miss of the slope's prediction, (f - f(x)) / alpha - g'p,
    # did not shrink below CONTRADICTED_SHRINK of the last one's: the values contradict the
    # gradient, whose dominant difference is measured again
    CONTRADICTED_TRIALS: int = 2
    # ... (a quadratic's miss shrinks with the step, which each failed trial cuts to half or less)
    CONTRADICTED_SHRINK: float = 0.75
    # doublings of a line search's first trial where f is linear or concave along it
    MAX_EXPANSIONS: int = 10
    # ... "at least as much" within this relative rounding: a linear f fell short of its
    # forward-difference slope's prediction by 7e-9 (bbob f5), and no trial was ever doubled
    EXPANSION_ROUNDING: float = 1e-6
    # L-BFGS's initial matrix is diagonal where it predicts the newest pair this much better
    DIAGONAL: float = 0.1
    # the phase's difference steps stay within this fraction of the box map's margin
    DIFFERENCE_IN_MARGIN: float = 0.1
    # a first gradient's second difference above this many eps |f| is no smooth f's h^2 f''
    ROUGH_FLOOR: float = 1e4
    # ... and above this share of its first differences (a smooth f's: about sqrt(eps))
    ROUGH_SHARE: float = 0.1
    # where it is, the second difference at this many h tells noise (the same size) from ...
    ROUGH_WIDTH: float = 1e3
    # ... ruggedness at every scale (Katsuura's: 40 to 1500 times larger; noise: up to 3.3)
    ROUGH_GROWTH: float = 10.0
    # a second difference at ROUGH_WIDTH h below this share of the reading: noise of its size
    # would show there too, so the probe's values are measured again (an outlier does not repeat)
    ROUGH_QUIET: float = 0.01


@dataclasses.dataclass(frozen=True)
class TrustRegion:
    """The model-based trust region of a mildly noisy run at small d (theory page, *Mild noise
    at small d: a model-based trust region*)."""

    # mild: the values at x0 spread by at most this fraction of their mean's magnitude
    MILD: float = 0.05
    # the first radius along each coordinate, a fraction of |x0_j| (Py-BOBYQA's 0.1)
    RADIUS: float = 0.1
    # coordinates below this fraction of the largest |x0_j| take that fraction's radius
    COORDINATE_FLOOR: float = 1e-3
    # the radius (over the first) below which the region hands over to the method
    END_RADIUS: float = 1e-8
    # a step whose actual decrease is this fraction of its prediction, at the radius, doubles it
    GROW_RATIO: float = 0.7
    GROW: float = 2.0
    # below this fraction the radius halves, where the close points are poised
    SHRINK_RATIO: float = 0.1
    SHRINK: float = 0.5
    # poised: the close points' offsets over the radius have a smallest singular value this large
    POISED: float = 0.3
    # the model's points: the nearest POINTS (d+1)(d+2)/2 within REACH radii
    POINTS: int = 2
    REACH: float = 10.0
    # the value and slope columns of the fit scaled up so that their coefficients go unpenalised
    FREE: float = 1e3
    # the Hessian change's penalty: this many residuals' rms over the values' changes' rms
    RIDGE: float = 0.1
    # after this many failed steps in a row that changed f by less than NOISE_CHANGE noises the
    # centre is measured again
    NOISE_STEPS: int = 3
    NOISE_CHANGE: float = 3.0
    # ... this many times; so is a centre no check read noise at before the region ends, and
    # where their median with its value lies NOISE_CHANGE noises above it that was an outlier
    NOISE_CHECK: int = 3
    # ... and where their spread kept this share of the noise, the region hands over to the method
    NOISE_KEPT: float = 0.3
    # below this radius (over the first), until a check measured it, the noise the steps are
    # judged against is at least the fit's residuals' spread: x0's two values put it below a
    # tenth of itself one time in 12
    MISFIT_RADIUS: float = 0.01
    # a noisy region's step that fell more than this many times its prediction is measured
    # CONFIRM times more, its value the median (a low outlier would stay the centre)
    CONFIRM_RATIO: float = 10.0
    CONFIRM: int = 2
    # a step that kept less than this share of its prediction failed (COBYQA's very low ratio)
    FAILED_RATIO: float = 0.01
    # after this many failed steps in a row the model is fitted afresh too (no Hessian carried)
    ALTERNATIVE_AFTER: int = 2
    # ... and replaces the carried one where that one's slope is this many times its own
    ALTERNATIVE_SLOPE: float = 10.0
    # after a failed step the next comes from the fit without a carried Hessian where that fit,
    # made without the step's point, missed its value by at most this share of the carried miss
    FRESH_MISS: float = 0.3
    # an opening region hands over to the quasi-Newton phase after this many evaluations per d
    # (5: fewer of COCO's targets within 10 d and 1000 d; 20: fewer within 100 d and 1000 d)
    OPENING: int = 10
    # ... unless its radius is within this many of the phase's difference steps: it goes on (in
    # float32 it gets there; on COCO's bbob in float64, d = 2 and 3, never within 144)
    OPENING_FINE: float = 10.0


@dataclasses.dataclass(frozen=True)
class StepRule:
    """The step rule of ``learning_rate="auto"`` (`zovh_opt._methods.step_size`)."""

    # the first trial step, as a fraction of the length scale l
    INITIAL_STEP: float = 0.1
    # learning-rate factor after an accepted trial
    GROW: float = 2.0**0.25
    # learning-rate factor after a rejected trial: stationary at a success rate of 4/9
    SHRINK: float = 2.0**-0.2
    # query distance mu sqrt(d) over the trial step length
    SPREAD: float = 1.0
    # a widened run's widening falls as (s / s_0)**WIDENING_DECAY with its step length s
    WIDENING_DECAY: float = 0.125
    # weight of the latest trial in the running geometric mean of step lengths
    TRACKING: float = 0.3
    # batches at a smaller radius before the noise test compares their slopes
    CHECKED: int = 10
    # the trust radius after an accepted trial over its length (with a ceiling)
    TRUST: float = 2.0
    # with noise: the radius keeps mu |g| at least this many noise deviations
    NOISE_SNR: float = 1.0
    # weight of the latest batch in the running noise variance
    NOISE_TRACKING: float = 0.2
    # with noise, the radius's floor keeps mu sqrt(d) within this fraction of l
    NOISE_REACH: float = 0.8
    # and at most this many levels above the steps' (mu sqrt(d) <= 8 steps)
    NOISE_ABOVE: int = 3
    # the model's misfit may add this many noise variances to the pair means
    NOISE_MISFIT: float = 4.0
    # batches at a level before the noise floor compares their spread
    NOISE_CHECKED: int = 3


@dataclasses.dataclass(frozen=True)
class Method:
    """The choice of ZoVH's iteration and the curvature models' iterations (`zovh_opt._methods`)."""

    # below this many evaluations per d, "auto" runs the paper's iteration
    MODEL_MIN_EVALUATIONS_PER_DIMENSION: int = 30
    # with noise, this many times the pairs an iteration
    NOISY_PAIRS: int = 4
    # iterations the budget must still pay for with those pairs
    NOISY_MIN_ITERATIONS: int = 200
    # history="auto": the iterations whose pairs a step uses (the paper's N = 4)
    MODEL_HISTORY: int = 4
    # a flat start (no curvature measured) takes this many times the rule's first step
    FIRST_STEP_RANGE: float = 100.0
    # the full model's first step over l, up to INITIAL_STEP_MAX_DIMENSION
    FULL_INITIAL_STEP: float = 0.3
    # regularization="auto": lambda over the largest curvature term (no Woodbury pole)
    POLE_MARGIN: float = 2.0


@dataclasses.dataclass(frozen=True)
class Curvature:
    """The curvature models' learning rates (`zovh_opt._curvature`)."""

    # beta: the diagonal model's learning rate of its shape (log h per iteration)
    DIAGONAL_SHAPE_RATE: float = 0.05
    # the diagonal model's learning rate of its overall scale
    DIAGONAL_SCALE_RATE: float = 0.5
    # the full model's learning rate of its overall scale, as the diagonal model's
    FULL_SCALE_RATE: float = 0.5
    # the largest change of a log-eigenvalue of the shape in one update
    SHAPE_CLIP: float = 0.3
    # W^{-1} is formed again from W every REFRESH * d updates
    REFRESH: int = 1
    # the largest shape rate (binds up to d = 5: `shape_rate`)
    SHAPE_RATE_CAP: float = 0.15


@dataclasses.dataclass(frozen=True)
class Fit:
    """The least-squares Hessian fit beside the full model (`zovh_opt._curvature.fit`)."""

    # the filter remembers about this many n equations
    MEMORY: float = 3.0
    # prior sd of the scale, in units of the model's first c
    SCALE_PRIOR: float = 10.0
    # prior sd of each entry of the shape, likewise
    SHAPE_PRIOR: float = 0.3
    # the equations' sd at least this times c d (rounding)
    NOISE_FLOOR: float = 1e-8
    # weight of a batch in the running geometric mean of the relative errors
    SCORE_TRACK: float = 0.3
    # relative squared error of the predicted contrasts under which the fit is used
    ACCURATE: float = 0.01
    # the model adopts the fit where its error is below this times the model's
    ADOPT_RATIO: float = 0.5
    # a move toward the fit changes an eigenvalue by at most this factor
    ADOPT_RANGE: float = 10.0
    # the current pairs' error in the gradient's fit, relative to the largest
    BASE_ERROR: float = 1e-6


@dataclasses.dataclass(frozen=True)
class Noise:
    """Finding noise and living with it (`zovh_opt._noise`)."""

    # values at x0 that tell a deterministic objective from a noisy one
    PROBE: int = 2
    # final_evaluations' default once the objective is noisy
    NOISY_EVALUATIONS: int = 10
    # one in this many of a noisy run's evaluations goes to fresh values at its returned point
    FRESH_SHARE: int = 100
    # the most fresh values at a noisy run's returned point
    FRESH_MAX: int = 1000
    # the best point is evaluated again after iterations 4, 8, 16, 32, ...
    RECHECK_FROM: int = 4
    # a value measured again repeats within this many eps of x's dtype
    REPEAT: int = 64
    # robust scales from the median beyond which a value is clipped
    CLIP: float = 3.0
    # robust scales beyond which a pair's residual marks the pair as hit by an outlier
    OUTLIER: float = 8.0
    # batches of this many pairs or more may take the quartile's scale
    QUARTILE_PAIRS: int = 20
    # a noisy batch this many times f's scale above the lowest value is an overreach, dropped
    FAR_ABOVE: float = 1e6
    # the steps and radius after such a batch, relative to before
    FAR_ABOVE_SHRINK: float = 0.1
    # iterations between two measurements of the centre
    CHECK_EVERY: int = 40
    # the steps' length after a return to the best point, over before
    RETURN_FACTOR: float = 0.5
    # standard deviations by which the final iterate must beat the average
    SIGNIFICANCE: float = 2.0
    # polynomial-decay averaging's eta: the newest of k centres has weight 4 / (k + 3)
    DECAY: int = 3


@dataclasses.dataclass(frozen=True)
class Stopping:
    """The default budgets and tolerances (`zovh_opt._driver.stopping`)."""

    # the default budget, maxfev = 1000 d (SciPy's Powell: 1000 d)
    MAXFEV_PER_DIMENSION: int = 1000
    # default ftol with the step rule "auto": the f estimates have stopped decreasing
    FTOL: float = 1e-12
    # iterations of an ftol window at least; by default those of 2 d evaluations
    FTOL_WINDOW: int = 50
    # the method's iterations that decide after a converged phase (or a rugged f's region)
    CONVERGED_WINDOW: int = 10
    # those iterations where the run hops (a longer kick finds more basins)
    HOP_WINDOW: int = 20
    # default xtol = 1e-3 sqrt(eps): 1.5e-11 (float64), 3.5e-7 (float32)
    XTOL_PER_SQRT_EPS: float = 1e-3
    # default flat_iterations: flat batches in a row that end a run on a plateau
    FLAT_ITERATIONS: int = 5


@dataclasses.dataclass(frozen=True)
class Safeguard:
    """Restarts after failures and divergence (`zovh_opt._driver.safeguard`)."""

    # f estimate above its minimum by this many times its scale: divergence
    GROWTH: float = 100.0
    # step (learning rate, with "auto" also smoothing radius) cut at each restart
    BACKOFF: float = 0.25
    # iterations with a non-finite value dropped before that is a failure
    FAILED_IN_A_ROW: int = 10
    # ftol stalls at which the step rule goes on at a finer scale before ftol ends the run
    STALL_RESCALES: int = 3
    # that finer scale: steps (and smoothing radius) this much shorter
    STALL_FACTOR: float = 0.1


@dataclasses.dataclass(frozen=True)
class NewStarts:
    """New starts after convergence (`zovh_opt._driver.new_starts`)."""

    # the j-th widened new start queries min(WIDENING_LIMIT, WIDENING**j) times as far from its
    # centre, relative to its steps, as a first run: f smoothed at a coarser scale
    WIDENING: float = 4.0
    # that factor's largest value
    WIDENING_LIMIT: float = 64.0
    # the spread of the k-th new start is SPREAD_GROWTH**(k - 1) times l / sqrt(d)
    SPREAD_GROWTH: float = 2.0
    # a widened new start's queries reach at most this fraction of the narrowest width
    BOX_REACH: float = 0.1
    # perturbed starts may spend this share of the local ones' evaluations
    PERTURBED_SHARE: float = 0.5
    # runs before the first perturbed start
    PERTURBED_AFTER: int = 2


@dataclasses.dataclass(frozen=True)
class Box:
    """The box map of ``bounds`` (`zovh_opt._driver.bounds`)."""

    # the box map's margin: of the interval's width, or of max(|bound|, scale) one-sided
    MARGIN: float = 0.05


@dataclasses.dataclass(frozen=True)
class Tuning:
    """The whole tuning of a run: one instance of each part's dataclass."""

    dimensions: Dimensions = dataclasses.field(default_factory=Dimensions)
    quasi_newton: QuasiNewton = dataclasses.field(default_factory=QuasiNewton)
    trust_region: TrustRegion = dataclasses.field(default_factory=TrustRegion)
    step_rule: StepRule = dataclasses.field(default_factory=StepRule)
    method: Method = dataclasses.field(default_factory=Method)
    curvature: Curvature = dataclasses.field(default_factory=Curvature)
    fit: Fit = dataclasses.field(default_factory=Fit)
    noise: Noise = dataclasses.field(default_factory=Noise)
    stopping: Stopping = dataclasses.field(default_factory=Stopping)
    safeguard: Safeguard = dataclasses.field(default_factory=Safeguard)
    new_starts: NewStarts = dataclasses.field(default_factory=NewStarts)
    box: Box = dataclasses.field(default_factory=Box)


DEFAULT = Tuning()
_ACTIVE: contextvars.ContextVar[Tuning] = contextvars.ContextVar("zovh_opt_tuning", default=DEFAULT)


def active() -> Tuning:
    """The tuning a run reads now: `DEFAULT`, or the one `using` set."""
    return _ACTIVE.get()


@contextlib.contextmanager
def using(tuning: Tuning) -> Iterator[Tuning]:
    """Run the block with ``tuning`` active (an experiment's variant of `DEFAULT`)."""
    if not isinstance(tuning, Tuning):
        raise TypeError(f"using() expects a zovh_opt.tuning.Tuning, got {type(tuning).__name__}")
    token = _ACTIVE.set(tuning)
    try:
        yield tuning
    finally:
        _ACTIVE.reset(token)
