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

    Subclasses set ``name``, ``options`` (name -> `Option`) and implement ``_ask`` and ``_tell``.
    """

    name = ""
    options: dict[str, Option] = {
        "learning_rate": Option(1e-4, positive_real),
        "smoothing": Option(0.1, positive_real),
    }

    def __init__(self, x0: Any, *, rng: Any = None, **options: Any) -> None:
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown options {', '.join(unknown)}")
        for name, value in resolve(self.options, options).items():
            setattr(self, name, value)
        self.xp = namespace_of(x0)
        self.x = x0
        self.nit = 0
        self.nfev = 0
        self.seeds = SeedSource(rng)
        self._asked = None

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
