"""What every method shares: the iterate, the direction seeds, and the ask/tell protocol."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._arrays.backend import ArraySpace, DirectionSource, norm, to_host_floats
from .._noise import robust as _robust
from ..tuning import active
from . import step_size as _step_size
from .option_specs import Option, positive_or_auto, positive_real, resolve
from .step_size import StepSizeControl

# Bounds of the integer options: beyond them a run cannot be meant (the directions of one
# iteration, or the kept queries, would be a matrix of at least 10^4 rows of length d).
MAX_DIRECTIONS = 10_000
MAX_HISTORY = 10_000

# Algorithm 1's constants where the step rule is the paper's (a float learning rate) and the
# smoothing radius is left "auto" (Appx. F.2: mu = lambda = 0.1)
PAPER_SMOOTHING = PAPER_REGULARIZATION = 0.1


class PendingPoints:
    """The points of a method's pending ask, made from its layout (`AskTellMethod`'s part
    that turns directions into points): ``_layout`` gives ``(directions, scales,
    with_center)``, and the points are ``x`` first when ``with_center``, then ``x + s * u``
    for each ``s`` in ``scales`` and each row ``u``, all at once or one at a time, bit for bit
    the same."""

    def pending_points(self) -> Any:
        """The points of the pending ``ask`` again, bit for bit, as a new array."""
        directions, scales, center = self._pending_layout()
        if not center and len(scales) == 1:
            points = directions * scales[0]
            points += self._x
            return self.space.to_user(points)
        n, first = directions.shape[0], int(center)
        points = self.space.empty((first + n * len(scales), self.space.dim))
        if center:
            points[0, ...] = self._x
        for j, scale in enumerate(scales):
            rows = slice(first + j * n, first + (j + 1) * n)
            points[rows, ...] = directions * scale
            points[rows, ...] += self._x
        return self.space.to_user(points)

    def pending_point(self, i: int) -> Any:
        """Row ``i`` of `pending_points`, bit for bit, as a new ``(d,)`` array."""
        directions, scales, center = self._pending_layout()
        if center and i == 0:
            return self.space.to_user(self.xp.asarray(self._x, copy=True))
        j, n = i - int(center), directions.shape[0]
        row = directions[j % n, ...] * scales[j // n]
        row += self._x
        return self.space.to_user(row)

    def _pending_layout(self) -> tuple[Any, tuple[float, ...], bool]:
        """The pending points as ``(directions, scales, with_center)``: ``x`` first when
        ``with_center``, then ``x + s * u`` for each ``s`` in ``scales`` and each row ``u``."""
        if not self._asked:
            raise RuntimeError("there is no pending ask")
        return self._layout()

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        raise NotImplementedError


class BuildChoices:
    """How a method adapts its options before a run's iteration is built
    (`zovh_opt._methods.build`): to the budget, to noise known before the first iteration,
    to a checkpoint's options, and which class runs them. The defaults keep the options as
    given and run them with the class itself; ``"zovh"`` overrides them."""

    @classmethod
    def options_for_budget(
        cls, options: dict[str, Any], dim: int, maxfev: int | None
    ) -> dict[str, Any]:
        """The options to run with when the run's budget is known (`zovh_opt.Optimizer`
        asks before it builds the method): ``options`` themselves, unless a method's
        ``"auto"`` choices depend on the budget."""
        return options

    @classmethod
    def options_for_noise(
        cls, options: dict[str, Any], dim: int, maxfev: int | None
    ) -> dict[str, Any]:
        """The options to run with when the objective is known to be noisy before the first
        iteration (``noisy=True``, or ``"auto"`` that found noise at ``x0``): ``options``
        themselves, unless a method's ``"auto"`` choices depend on the noise."""
        return options

    @classmethod
    def options_from_checkpoint(cls, options: dict[str, Any]) -> dict[str, Any]:
        """The options a checkpoint's run continues with: its own (``"zovh"`` reads the
        meaning its ``"auto"`` had when the checkpoint was written)."""
        return options

    @classmethod
    def iteration_class(cls, options: dict[str, Any], dim: int) -> type[AskTellMethod]:
        """The class that runs ``options`` in ``dim`` dimensions: this one (``"zovh"``
        chooses among three)."""
        return cls


class MethodState:
    """A method's checkpoint (`AskTellMethod`'s part that turns what changes during a run into
    plain data and arrays, and back); subclasses that keep more extend ``state`` and
    ``load_state``."""

    def state(self) -> dict[str, Any]:
        """Everything that changes during a run, as plain data and arrays (a checkpoint's
        part for this method; the options and the direction source are stored beside it)."""
        return {
            "x": self._x,
            "scale": self.scale,
            "learning_rate": self._rate,
            "smoothing": self.smoothing,
            "control": None if self.control is None else self.control.state(),
            "centre": None if self.control is None else self._centre,
            "step_length": self._step_length,
            "nit": self.nit,
            "nfev": self.nfev,
            "amplification": self.amplification,
            "rejected_steps": self.rejected_steps,
            "robust": self.robust,
            "asked": self._asked,
            "rows": None if self._rows is None else [self._rows[0], self._rows[1].shape[0]],
        }

    def load_state(self, state: dict[str, Any]) -> None:
        """Continue from a `state` of a method built with the same options and source."""
        self._x = self.vector(state["x"])
        if (state["control"] is None) != (self.control is None):
            raise ValueError("the step rule of the state and of the options disagree")
        if "scale" in state:  # checkpoints written before it was kept
            self.scale = positive_real("scale", state["scale"])
        elif self.control is not None:
            self.scale = positive_real("scale", state["control"]["scale"])
        if self.control is None:
            self._rate = positive_real("learning_rate", state["learning_rate"])
        else:
            self.control.load_state(state["control"])
            self._centre = self.vector(state["centre"])
        self.smoothing = positive_real("smoothing", state["smoothing"])
        self._step_length = float(state["step_length"])
        self.nit, self.nfev = int(state["nit"]), int(state["nfev"])
        self.amplification = float(state["amplification"])
        self.rejected_steps = int(state["rejected_steps"])
        self.robust = bool(state.get("robust", False))  # checkpoints before it: never
        self._asked = bool(state["asked"])
        rows = state["rows"]
        self._rows = None if rows is None else (int(rows[0]), self._draw_rows(*rows))
        self._check_pending()

    def _check_pending(self) -> None:
        """Raise ``ValueError`` if a loaded pending ask has no directions, or the reverse."""
        if self._asked != (self._rows is not None):
            raise ValueError("the pending ask and its directions disagree")

    def vector(self, host: Any) -> Any:
        """A ``(d,)`` host array of a checkpoint as a compute array (checked); ``None`` as
        it is."""
        if host is None:
            return None
        if host.shape != (self.space.dim,):
            raise ValueError(f"expected shape ({self.space.dim},), got {host.shape}")
        return self.space.from_numpy(host)


class AskTellMethod(BuildChoices, PendingPoints, MethodState):
    """Base class of the optimizers: explicit state and one ``ask``/``tell`` step.

    ``ask()`` returns the points to evaluate as an ``(n_points, d)`` array in the namespace,
    dtype and device of ``x0``; ``tell(values)`` takes their function values (``(n_points,)``)
    and moves the iterate. ``minimize`` drives exactly this loop; users can drive it themselves.

    The choice of options before a run is built is `BuildChoices`' job, the checkpoint
    `MethodState`'s. Subclasses set
    ``name``, ``options`` (name -> `Option`) and implement ``_prepare`` (draw the directions
    of the next ask), ``_layout`` (the pending points as directions and
    scales, from which `pending_points` and `pending_point` make them bit for bit), ``_tell``
    and ``step_norm``; those that keep state across iterations also extend ``restart``,
    ``discard``, ``state`` and ``load_state``. They compute in ``self.xp`` on ``self._x``
    (`ArraySpace` says why that can differ from the caller's namespace) and hand out arrays
    through ``self.space.to_user``. Function values reach ``_tell`` as a NumPy float64 array:
    the small per-iteration algebra stays on the host.

    **Step rule.** A float ``learning_rate`` is the paper's Algorithm 1: ``x <- x - eta p``
    after every ``tell``. ``learning_rate="auto"`` (the default) hands the rate, and with
    ``smoothing="auto"`` the smoothing radius, to a `StepSizeControl` (``control``): each
    step is a trial that the next batch's mean accepts or undoes (`zovh_opt._methods.step_size`); a
    ``tell`` then computes the direction (``_tell``; not for an undone trial) and ``_move``
    takes the step only when the rule calls for a trial.

    After each ``tell``, ``amplification`` is the ratio of the step's length to that of the plain
    gradient step the same values give (1 for gradient methods), and ``rejected_steps`` counts
    steps a method refused to take.
    """

    name = ""
    # the step rule's largest rate, for methods whose direction is a step of its own
    rate_ceiling: float | None = None
    options: dict[str, Option] = {
        "learning_rate": Option("auto", positive_or_auto),
        "smoothing": Option("auto", positive_or_auto),
    }

    @property
    def iteration(self) -> str:
        """What one iteration of this run is, for ``result().iteration``: the method's name,
        or for ``"zovh"`` which of its iterations ``curvature`` and the budget chose."""
        return self.name

    @property
    def initial_step(self) -> float:
        """The step rule's first step over the length scale l (`zovh_opt._methods.step_size`)."""
        return active().step_rule.INITIAL_STEP

    def __init__(
        self,
        x0: Any,
        *,
        rng: Any = None,
        scale: float | None = None,
        first_step: float | None = None,
        **options: Any,
    ) -> None:
        """Validate ``options``, start at ``x0`` and draw directions from ``rng``.

        ``rng`` may also be a `DirectionSource`, shared with other method objects (the
        driver's learning-rate search runs several from one stream). ``x0`` is copied.
        ``scale`` is the problem's length scale ``l``: by default ``|x0|``, or ``sqrt(d)``
        when ``x0 = 0``; with the step rule the first step is ``first_step * l`` long, by
        default the iteration's `initial_step` (`zovh_opt._methods.step_size`).
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            who = self.name or type(self).__name__
            raise TypeError(f"{who}: unknown options {', '.join(unknown)}")
        resolved = resolve(self.options, options)
        rate, smoothing = resolved.pop("learning_rate"), resolved.pop("smoothing")
        for name, value in resolved.items():
            setattr(self, name, value)
        self.space = ArraySpace(x0)
        self.xp = self.space.xp
        self._x = self.space.copy_in(x0)
        self.control: StepSizeControl | None = None
        self._adapt_smoothing = False
        self._rate = math.nan
        if scale is None:
            scale = _step_size.length_scale(norm(self._x, self.xp), self.space.dim)
        self.scale = float(scale)
        if rate == "auto":
            self.control = StepSizeControl(
                self.space.dim,
                self.scale,
                ceiling=self.rate_ceiling,
                first_step=self.initial_step if first_step is None else first_step,
            )
            self._adapt_smoothing = smoothing == "auto"
        else:
            self._rate = rate
        if smoothing == "auto":
            smoothing = PAPER_SMOOTHING if self.control is None else self.control.smoothing
        self.smoothing = smoothing
        # the last accepted point of the step rule "auto" (steps make new arrays: no copy)
        self._centre = None if self.control is None else self._x
        self._step_length = math.nan  # of the latest step
        self.nit = 0
        self.nfev = 0
        self.source = rng if isinstance(rng, DirectionSource) else DirectionSource(rng)
        self.amplification = 1.0
        self.rejected_steps = 0
        self.noise_variance = math.nan  # an upper bound from the latest batch, where known
        self.robust = False  # the objective is noisy: robust statistics (`noise_found`)
        self._asked = False
        self._rows: tuple[int, Any] | None = None  # block number and directions of the ask

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["xp"]  # modules do not pickle; the space finds the namespace again
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.xp = self.space.xp

    @property
    def x(self) -> Any:
        """The current iterate, in the caller's namespace (a view: do not write into it)."""
        return self.space.to_user(self._x)

    @property
    def learning_rate(self) -> float:
        """The rate of the steps: fixed, or the step rule's current one (``nan`` before the
        first direction)."""
        return self._rate if self.control is None else self.control.learning_rate

    @property
    def centre(self) -> Any:
        """The step rule's centre, the last accepted point (the iterate with a fixed rate)."""
        return self.space.to_user(self._x if self.control is None else self._centre)

    @property
    def points_per_iteration(self) -> int:
        """How many points each ``ask`` returns."""
        raise NotImplementedError

    @property
    def asked(self) -> bool:
        """True between an ``ask`` and its ``tell`` (or `discard`)."""
        return self._asked

    def ask(self) -> Any:
        """Return the points to evaluate next, shape ``(points_per_iteration, d)``: a new
        array, the caller's to keep or modify."""
        self.prepare()
        return self.pending_points()

    def prepare(self) -> None:
        """Start the next ask without making its points: draw its directions. The points are
        then `pending_points` (or one at a time, `pending_point`)."""
        if self._asked:
            raise RuntimeError("ask() was called twice without tell() in between")
        self._prepare()
        self._asked = True

    def tell(self, values: Any) -> None:
        """Take the function values of the last ``ask`` and take one step.

        ``values``: a one-dimensional array of any namespace, or a sequence of real numbers.
        """
        if not self._asked:
            raise RuntimeError("tell() needs a preceding ask()")
        if type(values) is not np.ndarray or values.dtype != np.float64:
            values = np.asarray(to_host_floats(values, "values"), dtype=np.float64)
        n = self.points_per_iteration
        if values.shape != (n,):
            raise ValueError(f"tell() expects {n} values, got shape {tuple(values.shape)}")
        self._asked = False
        control = self.control
        if control is None:
            self._tell(values)
            self._move(self._rate)
        elif not np.isfinite(values).all():
            self._missing()
        else:
            listed = values.tolist()
            mean = sum(listed) / n
            verdict = control.judge(self._f_estimate(values, mean))
            self._tell(values, direction=verdict is not False)  # an undone trial: no step
            if self.robust:
                spread = _robust.scale(values)
            else:
                squares = sum((v - mean) * (v - mean) for v in listed)
                spread = math.sqrt(squares / (n - 1)) if n > 1 else math.nan
            noisy = control.observe(spread, self.noise_variance) and self._adapt_smoothing
            if noisy:  # the radius went back up: the kept queries and the direction go
                self._set_smoothing(control.smoothing)
            if verdict is False:
                self._x = self._centre  # undone; the next ask measures the centre again
            else:
                if verdict:
                    self._centre = self._x
                if not noisy:
                    self._trial()
        self._rows = None
        self.nit += 1
        self.nfev += n

    def noise_found(self, variance: float) -> None:
        """The objective is noisy, with about this ``variance`` at ``x0`` (in the run's unit
        of ``f``, `StepSizeControl.noise_in_unit`): batches are read with robust statistics
        (`zovh_opt._noise.robust`) and the step rule keeps the smoothing radius above the noise
        (`zovh_opt._methods.step_size`)."""
        self.robust = True
        if self.control is not None:
            self.control.noise_found(variance)

    def value_at_centre(self, value: float) -> None:
        """``f`` at the current centre, measured outside the batches (the driver's
        measurement of ``x0``), before the next `tell`; a method that can use it does (a
        curvature model's first step from a flat start), the others ignore it."""

    def f_estimate(self, values: Any) -> float:
        """The estimate of ``f`` at the pending ask's centre from its ``values`` (NumPy
        float64), which the step rule judges by: their mean, less the smoothing bias where the
        method knows it. Call before ``tell``."""
        listed = values.tolist()
        return self._f_estimate(values, sum(listed) / len(listed))

    def _f_estimate(self, values: np.ndarray, mean: float) -> float:
        """The step rule's estimate of ``f`` at the batch's centre: the mean of its values
        (a method that knows their bias can remove it)."""
        return mean

    def _trial(self) -> None:
        """Step rule "auto": step from the centre along the direction just computed."""
        norm = self.direction_norm
        if not (math.isfinite(norm) and norm > 0):
            return  # no direction (yet): the next batch measures the centre again
        rate = self.control.rate_for(norm)
        self._move(rate)
        self._step_length = rate * norm
        if self.control.stepped(self._step_length) and self._adapt_smoothing:
            self._set_smoothing(self.control.smoothing)

    def _missing(self) -> None:
        """The pending ask has no (usable) values: a trial of the step rule is undone."""
        if self.control is not None:
            self.control.missing()
            self._x = self._centre

    def discard(self) -> None:
        """Forget the last ``ask`` without a step (its values are missing); the next ``ask``
        draws new directions. With ``learning_rate="auto"`` a trial step is undone."""
        if self._asked:
            self._missing()
        self._asked = False
        self._rows = None

    def restart(self, x: Any, learning_rate: float) -> None:
        """Start afresh from ``x`` (copied) with ``learning_rate`` (a fixed rate): pending asks
        and kept queries go."""
        self._discard_all()
        self._x = self.space.copy_in(x)
        self._rate = float(learning_rate)
        self.amplification = 1.0

    def shorten(self, factor: float, *, stalled: bool = False) -> None:
        """Step rule "auto": start afresh from the centre with steps (and, when it adapts, the
        smoothing radius) ``factor`` times as long; pending asks and kept queries go. After a
        stall (``stalled``) the radius may go below the slope test's floor."""
        self._discard_all()
        self.control.shorten(factor, stalled=stalled)
        self._x = self._centre
        if self._adapt_smoothing:
            self._set_smoothing(self.control.smoothing)
        self.amplification = 1.0

    def return_to(self, x: Any, factor: float) -> None:
        """Step rule "auto": start afresh from ``x`` (copied) as the centre, with steps
        ``factor`` times as long, from a measurement of it (`shorten`)."""
        self._centre = self.space.copy_in(x)
        self.shorten(factor)

    @property
    def widens(self) -> bool:
        """Whether `widen` acts: the step rule with ``smoothing="auto"``."""
        return self._adapt_smoothing

    def widen(self, factor: float, reach: float = math.inf) -> None:
        """Before the first ``ask``: with the step rule and ``smoothing="auto"``, query
        ``factor`` times as far from the centre, relative to the steps, as the rule's
        default, the widened ``mu sqrt(d)`` kept within ``reach``
        (`zovh_opt._methods.step_size.StepSizeControl.widen`); otherwise nothing."""
        if self._adapt_smoothing:
            self.control.widen(factor, reach)
            self._set_smoothing(self.control.smoothing)

    def _discard_all(self) -> None:
        self._asked = False
        self._rows = None

    def _set_smoothing(self, smoothing: float) -> None:
        """Query at radius ``smoothing`` from the next ask on."""
        self.smoothing = smoothing

    @property
    def direction_norm(self) -> float:
        """``|p|`` of the direction the latest ``tell`` computed (0 when it gave none)."""
        raise NotImplementedError

    @property
    def step_norm(self) -> float:
        """Euclidean length of the latest step, ``learning_rate * |p|`` (``nan`` before one;
        with a fixed rate computed when asked for, a pass over ``d`` for gradient methods)."""
        if self.control is None:
            return self._rate * self.direction_norm if self.nit else math.nan
        return self._step_length

    def _move(self, learning_rate: float) -> None:
        """``x <- x - learning_rate * p`` with the direction of the latest ``_tell`` (no step
        where it gave none)."""
        raise NotImplementedError

    def estimates(self) -> dict[str, Any]:
        """Extra fields for the result (``jac``, ``hess_inv``) from the latest queries."""
        return {}

    # helpers for subclasses ---------------------------------------------------------------

    def _draw(self, n: int) -> Any:
        """``n`` fresh directions, ``(n, d)``: the next block of the run's source, kept as
        the pending ask's rows until its ``tell``."""
        block = self.source.next_block()
        self._rows = (block, self._draw_rows(block, n))
        return self._rows[1]

    def _draw_rows(self, block: int, n: int) -> Any:
        return self.source.draw(int(block), int(n), self.space)

    def _prepare(self) -> None:
        """Draw what the next ``ask`` needs."""
        raise NotImplementedError

    def _tell(self, values: Any, *, direction: bool = True) -> None:
        """Take the batch's values; form the step's direction unless ``direction`` is False
        (the batch judged a trial that is undone, so no step follows: a method may then skip
        the ``O(d)`` work of the direction and keep the previous one)."""
        raise NotImplementedError


class ReusesQueries:
    """Mixin for methods whose directions are the blocks of a `QueryHistory`,
    ``self.queries``: the pending ask is the history's pending block, and restarts, discards
    and checkpoints carry the history along. Put it before the base class."""

    def _discard_all(self) -> None:
        super()._discard_all()
        self.queries.clear()

    def _set_smoothing(self, smoothing: float) -> None:
        super()._set_smoothing(smoothing)
        self.queries.clear()  # taken at another radius

    def discard(self) -> None:
        super().discard()
        self.queries.discard()

    def state(self) -> dict[str, Any]:
        return {**super().state(), "queries": self.queries.state()}

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self.queries.load_state(state["queries"])
        if self._asked != self.queries.pending:
            raise ValueError("the pending ask and the query history disagree")

    def _check_pending(self) -> None:
        """Checked in `load_state` once the history is loaded."""

    def _prepare(self) -> None:
        self.queries.new_block()

    def _layout(self) -> tuple[Any, tuple[float, ...], bool]:
        return self.queries.new_block(), (self.smoothing,), False


class GradientStepMethod(AskTellMethod):
    """A method whose step is ``x <- x - learning_rate * p`` with ``p`` estimated each iteration.

    Subclasses compute ``p`` in ``_tell`` and keep it as ``_direction``. ``estimates`` returns
    ``p`` as ``jac`` when it is a gradient estimate (``direction_is_gradient``).
    """

    direction_is_gradient = True

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        self._direction = None

    def state(self) -> dict[str, Any]:
        return {**super().state(), "direction": self._direction}

    def load_state(self, state: dict[str, Any]) -> None:
        super().load_state(state)
        self._direction = self.vector(state["direction"])

    @property
    def direction_norm(self) -> float:
        if self._direction is None:
            return 0.0
        return norm(self._direction, self.xp)

    def _move(self, learning_rate: float) -> None:
        if self._direction is None:
            return
        self._x = self._x - learning_rate * self._direction

    def _discard_all(self) -> None:
        super()._discard_all()
        self._direction = None

    def estimates(self) -> dict[str, Any]:
        """``jac``: the latest gradient estimate, for methods whose step is one."""
        if self._direction is None or not self.direction_is_gradient:
            return {}
        return {"jac": self.space.to_user(self.xp.asarray(self._direction, copy=True))}
