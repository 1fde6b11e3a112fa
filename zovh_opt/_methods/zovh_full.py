"""ZoVH with a full curvature model accumulated across iterations (``curvature="full"``)."""

from __future__ import annotations

from typing import Any

from .._full_curvature import FullCurvature
from .zovh_preconditioned import PreconditionedZoVH


class FullCurvatureZoVH(PreconditionedZoVH, curvature="full"):
    r"""ZoVH whose curvature is a full (``d x d``) model learned across iterations.

    The iteration of `PreconditionedZoVH` with the model :math:`A = c W^{-T} W^{-1}` of
    `zovh_opt._full_curvature` in place of the diagonal one: the pairs are
    :math:`f(x \pm \mu W u_m)`, the step is the model's Newton step
    :math:`\frac{M}{c (d + M + 1)} W \hat g_z \approx \frac{M}{d + M + 1} A^{-1} \nabla f`,
    kept pairs are moved to the current point with :math:`A`, and the model learns from the
    outer products :math:`u_m u_m^T` where the diagonal one takes :math:`u_m^2`, with a
    multiplicative update that keeps it positive definite. ``hess_inv`` is
    :math:`A^{-1}`, a ``(d, d)`` array.

    Costs per iteration: the whitening of the ``P`` draws and the model's update,
    :math:`O(P d^2)`, and every ``d`` iterations one inverse, :math:`O(d^3)`; memory: ``W``,
    :math:`W^{-1}` and, per kept iteration, its ``W`` (shared while the model is
    unchanged) besides the diagonal iteration's vectors.
    """

    model_kind = "full"
    iteration = "full curvature model (curvature='full')"

    def _new_model(self) -> FullCurvature:
        return FullCurvature(self.space, self.n_directions)

    def _hess_inv(self) -> Any:
        """The model's :math:`A^{-1}`, a ``(d, d)`` array in the user's namespace."""
        return self.space.to_user(self.model.inverse())

    def _model_array(self, host: Any) -> Any:
        """A checkpoint's ``W`` or ``W^{-1}`` (``(d, d)``)."""
        if host is None:
            return None
        d = self.space.dim
        if host.shape != (d, d):
            raise ValueError(f"expected shape ({d}, {d}), got {host.shape}")
        return self.space.from_numpy(host)
