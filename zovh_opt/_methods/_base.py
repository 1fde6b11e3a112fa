"""What every method shares: the iterate, the direction seeds, and the ask/tell protocol."""

from __future__ import annotations

from typing import Any

from array_api_compat import device as _device

from .._backend import SeedSource, namespace_of
from .._options import Option, positive_real, resolve


class AskTellMethod:
    """Base class of the optimizers: explicit state and one ``ask``/``tell`` step.

    ``ask()`` returns the points to evaluate as an ``(n_points, d)`` array in the namespace,
    dtype and device of ``x0``; ``tell(values)`` takes their function values (``(n_points,)``)
    and moves the iterate. ``minimize`` drives exactly this loop; users can drive it themselves.

    Subclasses set ``name``, ``options`` (name -> `Option`) and implement ``_ask``, ``_tell``
    and ``step_norm``; those that keep state across iterations also extend ``restart``.

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

        ``rng`` may also be a `SeedSource`, shared with other method objects (the driver's
        learning-rate search runs several from one stream).
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown options {', '.join(unknown)}")
        for name, value in resolve(self.options, options).items():
            setattr(self, name, value)
        self.xp = namespace_of(x0)
        self.x = x0
        self.nit = 0
        self.nfev = 0
        self.seeds = rng if isinstance(rng, SeedSource) else SeedSource(rng)
        self.amplification = 1.0
        self.rejected_steps = 0
        self._asked = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        del state["xp"]  # modules do not pickle; the namespace is found again from x
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.xp = namespace_of(self.x)

    @property
    def points_per_iteration(self) -> int:
        """How many points each ``ask`` returns."""
        raise NotImplementedError

    def ask(self) -> Any:
        """Return the points to evaluate next, shape ``(points_per_iteration, d)``."""
        if self._asked is not None:
            raise RuntimeError("ask() was called twice without tell() in between")
        points, self._asked = self._ask()
        return points

    def tell(self, values: Any) -> None:
        """Take the function values of the last ``ask`` and take one step."""
        if self._asked is None:
            raise RuntimeError("tell() needs a preceding ask()")
        n = self.points_per_iteration
        if tuple(values.shape) != (n,):
            raise ValueError(f"tell() expects {n} values, got shape {tuple(values.shape)}")
        asked, self._asked = self._asked, None
        self._tell(asked, values)
        self.nit += 1
        self.nfev += n

    def restart(self, x: Any, learning_rate: float) -> None:
        """Start afresh from ``x`` with ``learning_rate``: pending asks and kept queries go."""
        self.x = x
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

    def _points(
        self, center: Any, directions: Any, scale: float, *, with_center: bool = False
    ) -> Any:
        """Rows ``center + scale * u``, one per direction, written into one new array.

        With ``with_center`` the first row is ``center`` itself.
        """
        first = 1 if with_center else 0
        points = self.xp.empty(
            (first + len(directions), center.shape[0]), dtype=center.dtype, device=_device(center)
        )
        if with_center:
            points[0, :] = center
        for i, u in enumerate(directions):
            points[first + i, :] = center + scale * u
        return points

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
        self.x = self.x - self.learning_rate * direction

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
        return {"jac": self._direction}
