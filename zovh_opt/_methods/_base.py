"""What every method shares: the iterate, the direction seeds, and the ask/tell protocol."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._backend import ArraySpace, DirectionSource, to_host_floats
from .._options import Option, positive_real, resolve


class AskTellMethod:
    """Base class of the optimizers: explicit state and one ``ask``/``tell`` step.

    ``ask()`` returns the points to evaluate as an ``(n_points, d)`` array in the namespace,
    dtype and device of ``x0``; ``tell(values)`` takes their function values (``(n_points,)``)
    and moves the iterate. ``minimize`` drives exactly this loop; users can drive it themselves.

    Subclasses set ``name``, ``options`` (name -> `Option`) and implement ``_ask``, ``_tell``
    and ``step_norm``; those that keep state across iterations also extend ``restart``. They
    compute in ``self.xp`` on ``self._x`` (`ArraySpace` says why that can differ from the
    caller's namespace) and hand out arrays through ``self.space.to_user``. Function values
    reach ``_tell`` as a NumPy float64 array: the small per-iteration algebra stays on the
    host.

    After each ``tell``, ``amplification`` is the ratio of the step's length to that of the plain
    gradient step the same values give (1 for gradient methods), and ``rejected_steps`` counts
    steps a method refused to take.
    """

    name = ""
    options: dict[str, Option] = {
        "learning_rate": Option(1e-4, positive_real),
        "smoothing": Option(0.1, positive_real),
    }

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        """Validate ``options``, start at ``x0`` and draw directions from ``rng``.

        ``rng`` may also be a `DirectionSource`, shared with other method objects (the
        driver's learning-rate search runs several from one stream). ``x0`` is copied.
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown options {', '.join(unknown)}")
        for name, value in resolve(self.options, options).items():
            setattr(self, name, value)
        self.space = ArraySpace(x0)
        self.xp = self.space.xp
        self._x = self.space.copy_in(x0)
        self.nit = 0
        self.nfev = 0
        self.source = rng if isinstance(rng, DirectionSource) else DirectionSource(rng)
        self.amplification = 1.0
        self.rejected_steps = 0
        self._asked = None

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
    def points_per_iteration(self) -> int:
        """How many points each ``ask`` returns."""
        raise NotImplementedError

    def ask(self) -> Any:
        """Return the points to evaluate next, shape ``(points_per_iteration, d)``."""
        if self._asked is not None:
            raise RuntimeError("ask() was called twice without tell() in between")
        points, asked = self._ask()
        self._asked = (asked,)
        return self.space.to_user(points)

    def tell(self, values: Any) -> None:
        """Take the function values of the last ``ask`` and take one step.

        ``values``: a one-dimensional array of any namespace, or a sequence of real numbers.
        """
        if self._asked is None:
            raise RuntimeError("tell() needs a preceding ask()")
        if type(values) is not np.ndarray or values.dtype != np.float64:
            values = np.asarray(to_host_floats(values, "values"), dtype=np.float64)
        n = self.points_per_iteration
        if values.shape != (n,):
            raise ValueError(f"tell() expects {n} values, got shape {tuple(values.shape)}")
        (asked,), self._asked = self._asked, None
        self._tell(asked, values)
        self.nit += 1
        self.nfev += n

    def discard(self) -> None:
        """Forget the last ``ask`` without a step (its values are missing); the next ``ask``
        draws new directions."""
        self._asked = None

    def restart(self, x: Any, learning_rate: float) -> None:
        """Start afresh from ``x`` (copied) with ``learning_rate``: pending asks and kept
        queries go."""
        self._x = self.space.copy_in(x)
        self.learning_rate = float(learning_rate)
        self.amplification = 1.0
        self._asked = None

    @property
    def step_norm(self) -> float:
        """Euclidean length of the latest step, ``learning_rate * |p|`` (``nan`` before one)."""
        raise NotImplementedError

    def estimates(self) -> dict[str, Any]:
        """Extra fields for the result (``jac``, ``hess_inv``) from the latest queries."""
        return {}

    # helpers for subclasses ---------------------------------------------------------------

    def _points(self, directions: Any, scale: float, *, with_center: bool = False) -> Any:
        """Rows ``x + scale * u`` for the rows ``u`` of ``directions``, in one new array.

        With ``with_center`` the first row is ``x`` itself.
        """
        if not with_center:
            points = directions * scale
            points += self._x
            return points
        points = self.space.empty((directions.shape[0] + 1, self.space.dim))
        points[0, ...] = self._x
        points[1:, ...] = directions * scale
        points[1:, ...] += self._x
        return points

    def _draw(self, n: int) -> Any:
        """``n`` fresh directions, ``(n, d)``: the next block of the run's source."""
        return self.source.draw(self.source.next_block(), n, self.space)

    def _ask(self) -> tuple[Any, Any]:
        raise NotImplementedError

    def _tell(self, asked: Any, values: Any) -> None:
        raise NotImplementedError


class GradientStepMethod(AskTellMethod):
    """A method whose step is ``x <- x - learning_rate * p`` with ``p`` estimated each iteration.

    Subclasses compute ``p`` in ``_tell`` and hand it to ``_move``. ``estimates`` returns ``p``
    as ``jac`` when it is a gradient estimate (``direction_is_gradient``).
    """

    direction_is_gradient = True

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        super().__init__(x0, rng=rng, **options)
        self._direction = None

    def _move(self, direction: Any) -> None:
        self._direction = direction
        self._x = self._x - self.learning_rate * direction

    def restart(self, x: Any, learning_rate: float) -> None:
        super().restart(x, learning_rate)
        self._direction = None

    @property
    def step_norm(self) -> float:
        if self._direction is None:
            return float("nan")
        return self.learning_rate * float(self.xp.linalg.vector_norm(self._direction))

    def estimates(self) -> dict[str, Any]:
        """``jac``: the latest gradient estimate, for methods whose step is one."""
        if self._direction is None or not self.direction_is_gradient:
            return {}
        return {"jac": self.space.to_user(self.xp.asarray(self._direction, copy=True))}
