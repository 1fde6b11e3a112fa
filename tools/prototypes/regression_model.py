"""Prototype, outside the package: the full curvature model replaced by a least-squares fit.
Not a part of zovh_opt; kept so that the next step starts from numbers (docs, *Theory*, *The
least-squares fit beside the full model*, "The fit in place of the model").

The package's full model moves by the paper's estimator (eq. (9)) at a rate ``O(P / d^2)``: a
stochastic-gradient (Kaczmarz) step on the least-squares fit of the pairs' curvature. Here the
model *is* that fit, solved: a Kalman filter on the Hessian's ``d (d + 1) / 2`` entries from
exact second differences (each batch also evaluates its centre: ``2 P + 1`` points), with
forgetting and a random walk matched to the innovations (``WALK``); the gradient is the
weighted least-squares fit of the current and the kept pairs' transported differences; the
step rule judges a trial by ``f`` at its centre, halves the trust radius below a rejected
trial (``TRUST_SHRINK``) and, with a deterministic objective, tries again from the centre at
once (``RETRY``).

It patches ``zovh_opt._methods.zovh_full`` as it was at commit 99fec66 (before the fit entered
the package); run it there::

    git worktree add /tmp/before 99fec66
    PYTHONPATH=/tmp/before python tools/prototypes/regression_model.py quick 10
    PYTHONPATH=/tmp/before python tools/prototypes/regression_model.py coco --suite bbob \
        --dim 10 --instances 1-3 --budget 1000 --solvers zovh --no-cocopp --jobs 1

(``--jobs 1``: the patch lives in this process; the switches below are module constants,
``tools/prototypes/variant.py`` sets them from the command line.) Measured: d = 10, evaluations
to ``1e-8`` (3 seeds; the package's full model then): the sphere 91 (466-596), a rotated
ellipsoid of condition ``1e6`` 192-214 (3659-4059), rotated Rosenbrock 1945-3024 on COCO's
f8; COCO ``bbob``, instances 1-3, ``1000 d``, the fraction of triples within ``100 d`` /
``1000 d``: d = 10, 0.157 / 0.427 against 0.177 / 0.458 (``REFRAME = 100``: 0.134 / 0.353;
``RETRY = False`` with the package's shrink: 0.137 / 0.412); d = 2, 0.262 / 0.603 against
0.225 / 0.622; d = 5, 0.179 / 0.454 against 0.176 / 0.486. Lost on f13 (the ridge), the
``T_osz`` ellipsoids and the rugged f15-f18. Not adopted.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from quick_problems import quick

from zovh_opt._methods import zovh_full as zf
from zovh_opt._methods.zovh import ZoVH
from zovh_opt._step_size import StepSizeControl

MEMORY = 3.0  # equations remembered, in units of the n = d (d + 1) / 2 unknowns
REFRAME = 1e300  # re-whiten the filter's frame when the model's condition in it exceeds this
ADAPT_R = False  # the equations' variance from the innovations (else a rounding floor)
R_TRACK = 0.1  # its running mean's weight
WALK = True  # the random walk matched to the innovations (covariance matching)
RETRY = True  # a rejected trial: a new trial from the centre at once (deterministic f)
ERR_TRACK = 0.2  # weight of a batch in the running relative error of the predictions
BASE_ERROR = 1e-6  # the current pairs' error in the gradient's fit, relative to the largest
TRUST_SHRINK = 0.5  # the trust radius below a rejected trial (the package: 2**-0.2)
SHRINK_RATE = 2.0**-0.2  # the rate after a rejected trial, as the package's
SCALE_PRIOR = 10.0  # prior sd of the scale, in units of the first c
SHAPE_PRIOR = 0.3  # prior sd of each entry of the shape, likewise
EIG_FLOOR = 1e-10  # eigenvalues by magnitude, at least this times the largest


def helmert(P):
    """P x (P - 1) orthonormal columns orthogonal to the ones vector."""
    q, _ = np.linalg.qr(np.column_stack([np.ones(P), np.eye(P)[:, : P - 1]]))
    return q[:, 1:]


def magnitude_whitening(K):
    """``(c, Q, scaled)`` of a symmetric ``K`` by its eigenvalues' magnitudes (floored at
    ``EIG_FLOOR`` times the largest): ``c`` their geometric mean, ``Q`` the eigenvectors,
    ``scaled`` the magnitudes over ``c``; None where ``K`` has no finite, nonzero spectrum."""
    if not np.isfinite(K).all():
        return None
    lam, Q = np.linalg.eigh(K)
    mag = np.abs(lam)
    top = mag.max()
    if not (np.isfinite(top) and top > 0):
        return None
    lam_p = np.maximum(mag, EIG_FLOOR * top)
    c = float(np.exp(np.mean(np.log(lam_p))))
    return c, Q, lam_p / c


def congruence(T, upper):
    """The ``n x n`` matrix of ``vech(K) -> vech(T^T K T)`` (``upper``: the upper triangle's
    indices, the order of vech)."""
    d, n = T.shape[0], len(upper[0])
    L = np.empty((n, n))
    for k in range(n):
        i, j = upper[0][k], upper[1][k]
        E = np.zeros((d, d))
        E[i, j] = E[j, i] = 1.0
        L[:, k] = (T.T @ E @ T)[upper]
    return L


class RegressionCurvature:
    def __init__(self, space, pairs):
        self.space = space
        d = space.dim
        self.d, self.P = d, pairs
        self.iu = np.triu_indices(d)
        self.mult = np.where(self.iu[0] == self.iu[1], 1.0, 2.0)
        self.n = len(self.iu[0])
        self.C = helmert(pairs)
        self.gamma = 1.0 - pairs / (MEMORY * self.n)
        self.curvature = math.nan
        self.whitening = None
        self.inverse_whitening = None
        self.updates = 0

    @property
    def ready(self):
        return self.whitening is not None

    def start(self, curvature):
        d = self.d
        c = float(curvature)
        self.curvature = c
        self.F = np.eye(d)
        self.Finv = np.eye(d)
        self.kappa = c * np.eye(d)[self.iu]
        diag = (self.iu[0] == self.iu[1]).astype(float)
        # the scale very uncertain, the shape less (Frobenius-invariant: off-diagonals / 2)
        shape = SHAPE_PRIOR**2 * np.where(diag > 0, 1.0, 0.5)
        self.Sigma = (c * c) * (SCALE_PRIOR**2 * np.outer(diag, diag) + np.diag(shape))
        self.shape_walk = np.where(diag > 0, 1.0, 0.5)
        self.R = math.nan
        self.rel_error2 = math.nan
        self.whitening, self.inverse_whitening = np.eye(d), np.eye(d)
        self.H = c * np.eye(d)

    def K(self):
        K = np.zeros((self.d, self.d))
        K[self.iu] = self.kappa
        return K + np.triu(K, 1).T

    def whiten(self, U, whitening=None):
        W = self.whitening if whitening is None else whitening
        return U if W is None else U @ W.T

    def hessian_times(self, v, inverse_whitening=None):
        Wi = self.inverse_whitening if inverse_whitening is None else inverse_whitening
        return (Wi @ v) @ Wi

    def learn(self, weights, drawn, directions, *, in_place):
        """(Unused: the prototype's iteration calls `learn_pairs`.)"""

    def learn_pairs(self, second, directions):
        """Fit ``v_m^T K v_m = second_m`` (second differences ``(y+ + y- - 2 f(x)) / mu^2``
        along the points' directions ``w_m``, ``v_m = F^{-1} w_m``)."""
        P = self.P
        c = self.curvature
        V = np.asarray(directions) @ self.Finv.T
        a = V[:, self.iu[0]] * V[:, self.iu[1]] * self.mult
        if not (np.isfinite(a).all() and np.isfinite(second).all()):
            return
        Sigma = self.Sigma / self.gamma
        e = second - a @ self.kappa
        ratio = float(e @ e) / max(float(second @ second), 1e-300)
        self.rel_error2 = (
            ratio
            if math.isnan(self.rel_error2)
            else (self.rel_error2 + ERR_TRACK * (ratio - self.rel_error2))
        )
        AS = a @ Sigma
        predicted = AS @ a.T
        floor = (1e-8 * c * self.d) ** 2
        R = floor
        if ADAPT_R:
            # measurement variance (noise and misfit): the innovations' excess over the
            # model's own uncertainty, a running mean
            excess = max(0.0, (float(e @ e) - float(np.trace(predicted))) / P)
            self.R = excess if math.isnan(self.R) else self.R + R_TRACK * (excess - self.R)
            R = max(self.R, floor)
        self.walk_size = 0.0  # the last batch's random walk, for a trace
        if WALK:
            walk = self.shape_walk * (c * c)
            spread = float(np.sum(a * walk * a))
            q = (float(e @ e) - float(np.trace(predicted)) - P * R) / spread if spread > 0 else 0.0
            self.walk_size = q = max(0.0, q)
            if q > 0:
                Sigma = Sigma + q * np.diag(walk)
                AS = a @ Sigma
                predicted = AS @ a.T
        S = predicted + R * np.eye(P)
        try:
            gain = np.linalg.solve(S, AS).T  # n x P
        except np.linalg.LinAlgError:
            return
        kappa = self.kappa + gain @ e
        Sigma = Sigma - gain @ AS
        if not (np.isfinite(kappa).all() and np.isfinite(Sigma).all()):
            return
        self.kappa = kappa
        self.Sigma = 0.5 * (Sigma + Sigma.T)
        self._derive()

    def _derive(self):
        K = self.K()
        whitening = magnitude_whitening(K)
        if whitening is None:
            return
        c, Q, scaled = whitening
        T = Q / np.sqrt(scaled)  # F^{-1} W
        self.curvature = c
        self.whitening = self.F @ T
        self.inverse_whitening = (Q.T * np.sqrt(scaled)[:, None]) @ self.Finv
        self.H = self.Finv.T @ K @ self.Finv
        if scaled.max() / scaled.min() > REFRAME:
            self._reframe(T)

    def _reframe(self, T):
        """Frame F <- F T: K <- T^T K T, the covariance with it."""
        L = congruence(T, self.iu)
        self.kappa = L @ self.kappa
        self.Sigma = L @ self.Sigma @ L.T
        self.F = self.F @ T
        self.Finv = np.linalg.solve(T, self.Finv)

    def transport(self):
        def move(rows, deltas, displacement):
            return deltas + rows @ (self.H @ displacement)

        return move

    def gradient_of(self, direction, inverse_whitening):
        return self.hessian_times(direction, inverse_whitening)

    @property
    def snapshot(self):
        return self.inverse_whitening

    def inverse(self):
        W = self.whitening
        return W @ W.T / self.curvature

    def state(self):
        raise NotImplementedError


class FastControl(StepSizeControl):
    """The step rule with a trust radius that halves below a rejected trial (deterministic
    values; with noise as the library's)."""

    def _reject(self):
        if self.noisy or self.ceiling is None:
            return super()._reject()
        self.learning_rate *= SHRINK_RATE
        self.trust_radius = min(self.trust_radius, self.trial_length) * TRUST_SHRINK
        self.rejected += 1


class CentreBatches:
    """Mixin of a full iteration whose batches evaluate their centre too: ``2 P + 1`` points,
    the centre first, and the step rule's fast trust radius (`FastControl`)."""

    def __init__(self, x0, *, rng=None, **options):
        super().__init__(x0, rng=rng, **options)
        if self.control is not None:
            old = self.control
            self.control = FastControl(old.dim, old.scale, ceiling=old.ceiling)

    @property
    def points_per_iteration(self):
        return 2 * self.n_directions + 1

    def _layout(self):
        return self._whitened, (self.smoothing, -self.smoothing), True

    def pair_split(self, rows):
        P = self.n_directions
        return rows[1 : P + 1], rows[P + 1 :]


class RegressionZoVH(CentreBatches, zf.FullCurvatureZoVH):
    """The full iteration with the centre evaluated in every batch and the fit as its model."""

    def _f_estimate(self, values, mean):
        if not self.model.ready:
            self._start(values)
        return float(values[0])

    def _tell(self, values, *, direction=True):
        self._batch = values
        super()._tell(values, direction=direction)

    def _step_and_learn(self, deltas, c, weights, *, keep):
        step = None if deltas is None else self._newton_step(deltas, c)
        values = self._batch
        plus, minus = self.pair_split(values)
        mu = self.smoothing
        second = (plus + minus - 2.0 * values[0]) / (mu * mu)
        self.model.learn_pairs(second, self._whitened)
        return step

    def _new_model(self):
        return RegressionCurvature(self.space, self.n_directions)

    def tell(self, values):
        control = self.control
        before = None if control is None else control.rejected
        super().tell(values)
        if (
            RETRY
            and control is not None
            and not self.robust
            and control.rejected > before
            and self.model.ready
            and self._kept
        ):  # undone: a deterministic centre needs no new measurement; step again from it
            self._direction = self._newton_step(None, self.model.curvature)[0]
            self._trial()

    def _newton_step(self, deltas, c):
        """The weighted least-squares gradient in whitened coordinates: a kept equation's
        error is about ``eps c |u'| |dz|`` (``eps`` the model's relative curvature error,
        ``dz`` the whitened move since it was measured), the current batch's ``BASE_ERROR``
        of its own size; ``deltas`` None: the kept pairs alone."""
        P = self.n_directions
        M = P * (1 + len(self._kept))
        rows, values, errors = [], [], []
        scale = 0.0
        if deltas is not None:
            rows.append(np.asarray(self._drawn))
            values.append(np.asarray(deltas))
            errors.append(np.zeros(P))
            scale = np.abs(deltas).max()
        Wi = self.model.inverse_whitening
        move = self.model.transport()
        eps = math.sqrt(self.model.rel_error2) if not math.isnan(self.model.rel_error2) else 1.0
        for kept in self._kept:
            kr = self._kept_rows(kept)
            rz = kr @ Wi.T
            dz = Wi @ (np.asarray(self._x) - np.asarray(kept.centre))
            rows.append(rz)
            moved = move(kr, kept.deltas, self._x - kept.centre)
            values.append(moved)
            errors.append(eps * c * np.linalg.norm(rz, axis=1) * np.linalg.norm(dz))
            scale = max(scale, np.abs(moved).max())
        Z = np.vstack(rows)
        b = np.concatenate(values)
        sigma = np.concatenate(errors) + BASE_ERROR * (scale + 1e-300)
        ok = np.isfinite(b) & np.isfinite(sigma) & np.isfinite(Z).all(axis=1) & (sigma > 0)
        try:
            g_z = np.linalg.lstsq(Z[ok] / sigma[ok, None], b[ok] / sigma[ok], rcond=1e-12)[0]
        except np.linalg.LinAlgError:
            g_z = np.zeros(Z.shape[1])
        step = (self.model.whitening @ g_z) / c
        return step, M


def patch():
    ZoVH.iterations["full"] = RegressionZoVH


if __name__ == "__main__":
    if sys.argv[1] == "quick":
        quick(int(sys.argv[2]), {"library": zf.FullCurvatureZoVH, "regression": RegressionZoVH})
    else:
        patch()
        from zovh_opt.benchmarks.__main__ import main

        sys.exit(main(sys.argv[1:]))
