r"""ZoVH's curvature model: a diagonal estimate of the Hessian, accumulated across iterations.

At ``d >> M`` one iteration's Hessian estimate cannot shape a step (the Woodbury inverse of
eq. (15) tends to :math:`I/\lambda`), but it measures the Hessian's diagonal without bias,
with noise that averages out over iterations. The model keeps a scale :math:`c` (a float) and
a shape :math:`\log(h / c)` (an array of mean 0), whitens the queries with
:math:`s = (c / h)^{1/2}`, and moves :math:`\log h` by each iteration's clipped relative
error: the scale at rate 1/2, the shape at `SHAPE_RATE`; ``h > 0`` always, so the Newton step
is a descent direction along the gradient estimate. The update in full: the theory page,
*The run's parts in detail*.
"""

from __future__ import annotations

import math
from typing import Any

from array_api_compat import device as _device

from .._arrays.backend import ArraySpace, namespace_of
from ..estimators import SymmetricOperator
from ..tuning import active


class DiagonalCurvature:
    """The model ``h`` (module docstring) of one run, on the run's device.

    Parameters
    ----------
    space : ArraySpace
        The run's namespace, dtype and device.
    """

    def __init__(self, space: ArraySpace) -> None:
        self.space = space
        self.curvature = math.nan  # c = geomean(h), a float: f -> 2^k f scales it exactly
        self.shape = None  # log(h / c), mean 0, (d,); set by `start`
        self.whitening = None  # s = (c / h)^(1/2); None before `start` (s = 1)

    @property
    def ready(self) -> bool:
        """Whether the model has a scale (`start` was called)."""
        return self.shape is not None

    def start(self, curvature: float) -> None:
        """Begin as ``h = curvature`` in every coordinate."""
        space = self.space
        self.curvature = float(curvature)
        self.shape = space.zeros((space.dim,))
        self._refresh()

    def update(self, error: Any) -> float | None:
        r"""Move ``log h`` by the measured error ``e`` of the model in whitened coordinates.
        Returns :math:`\kappa` with :math:`h_{new} = \kappa\, h\, e^{\beta \rho}` (the part
        of the change that is not local to each coordinate), or None where nothing was
        learned."""
        xp = self.space.xp
        rho = xp.clip(error / self.curvature, -1.0, 1.0)
        mean = float(xp.mean(rho))
        if not math.isfinite(mean):  # values too large to difference: nothing learned
            return None
        self.curvature *= math.exp(active().curvature.DIAGONAL_SCALE_RATE * mean)
        rho -= mean
        rho *= active().curvature.DIAGONAL_SHAPE_RATE
        self.shape += rho
        recentred = float(xp.mean(self.shape))
        self.shape -= recentred  # mean 0 up to rounding: keep it there
        self._refresh()
        return math.exp(
            (active().curvature.DIAGONAL_SCALE_RATE - active().curvature.DIAGONAL_SHAPE_RATE) * mean
            - recentred
        )

    @property
    def snapshot(self) -> Any:
        """What `gradient_of` needs of the model that forms a direction: ``s``."""
        return self.whitening

    def gradient_of(self, direction: Any, whitening: Any) -> Any:
        """``direction / s^2`` for the ``s`` the direction was formed with (a new array):
        ``diag(h) direction / c``."""
        return direction / (whitening * whitening)

    def _refresh(self) -> None:
        half = self.shape * -0.5
        self.whitening = self.space.xp.exp(half)

    def inverse_diagonal(self) -> Any:
        """``1 / h``, the model's estimate of the inverse Hessian's diagonal (a new array)."""
        inverse = self.space.xp.exp(-self.shape)
        inverse /= self.curvature
        return inverse

    def state(self) -> dict[str, Any]:
        return {"curvature": self.curvature, "shape": self.shape}

    def load_state(self, state: dict[str, Any]) -> None:
        shape, curvature = state["shape"], float(state["curvature"])
        if shape is None:
            self.curvature, self.shape, self.whitening = math.nan, None, None
            return
        if shape.shape != (self.space.dim,) or not math.isfinite(float(abs(shape).sum())):
            raise ValueError(f"the curvature model's shape must be {self.space.dim} finite numbers")
        if not (math.isfinite(curvature) and curvature > 0):
            raise ValueError(f"the curvature model's scale must be > 0, got {curvature!r}")
        self.curvature = curvature
        self.shape = self.space.from_numpy(shape)
        self._refresh()


class DiagonalOperator(SymmetricOperator):
    """``diag(v)`` as a linear operator with the interface of `InverseHessianOperator`.

    ``v`` stays in its namespace and on its device; ``scipy.sparse.linalg.aslinearoperator``
    turns one with NumPy arrays into a SciPy operator.

    Parameters
    ----------
    diagonal : array, shape (d,)
    """

    def __init__(self, diagonal: Any) -> None:
        self._v = diagonal
        d = diagonal.shape[0]
        self.shape = (d, d)
        self.dtype = diagonal.dtype
        self.ndim = 2

    def diagonal(self) -> Any:
        """The diagonal, a new array."""
        xp = namespace_of(self._v)
        return xp.asarray(self._v, copy=True)

    def matvec(self, v: Any) -> Any:
        """Return ``A @ v`` for ``v`` of shape ``(d,)`` or ``(d, 1)``."""
        xp = namespace_of(v)
        if v.ndim == 2:
            return xp.reshape(self.matvec(xp.reshape(v, (-1,))), (-1, 1))
        return self._v * v

    def matmat(self, V: Any) -> Any:
        """Return ``A @ V`` for ``V`` of shape ``(d, n)``."""
        return self._v[:, None] * V

    def todense(self) -> Any:
        """Return the dense ``(d, d)`` array (costs :math:`O(d^2)` memory)."""
        xp = namespace_of(self._v)
        d = self.shape[0]
        return xp.eye(d, dtype=self._v.dtype, device=_device(self._v)) * self._v[None, :]

    def __repr__(self) -> str:
        return f"<{self.shape[0]}x{self.shape[1]} DiagonalOperator with dtype={self.dtype}>"
