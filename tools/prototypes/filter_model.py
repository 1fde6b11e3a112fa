"""Prototype, outside the package: a Kalman filter on the whole local quadratic model.
Not a part of zovh_opt; kept so that the next step starts from numbers (docs, *Theory*, *The
least-squares fit beside the full model*: "A filter on the whole local quadratic").

State at the current point ``x`` (in a frame ``F``, ``z = F^{-1} (y - x)``):
``theta = (phi, g, vech K)`` with ``f(x + F z) ~ phi + g^T z + z^T K z / 2``. A batch at ``x``
(``f(x)`` and ``P`` antithetic pairs ``f(x +- mu w_m)``) observes ``theta`` linearly; a move
``s`` of the point carries it exactly on a quadratic (``phi += g^T s + s^T K s / 2``,
``g += K s``), with process noise for the third-order terms whose size is matched to the
innovations. The step is the Newton step of the model (eigenvalues by magnitude), judged by
``f`` at the trial (the batch's centre value).

Measured, d = 10 (3 seeds, evaluations to ``1e-8``): the sphere 80-91, a rotated ellipsoid of
condition ``1e6`` 136-180; on rotated Rosenbrock it does not converge: the matched process
noise swings over nearly twenty decades and the model's condition reaches ``1e15``. Not
adopted. It patches ``zovh_opt._methods.zovh_full`` as it was at commit 99fec66; run it there
(``PYTHONPATH`` on a worktree of it)::

    python tools/prototypes/filter_model.py quick D
"""

from __future__ import annotations

import math
import sys

import numpy as np
from quick_problems import quick
from regression_model import RETRY, CentreBatches, congruence, magnitude_whitening

from zovh_opt._methods import zovh_full as zf
from zovh_opt._methods.zovh import ZoVH

SCALE_PRIOR = 10.0
SHAPE_PRIOR = 0.3
REFRAME = 100.0
ROUNDING = 1e-13
Q_TRACK = 1.0


class QuadraticFilter:
    """The filter's state and algebra (host float64)."""

    def __init__(self, d):
        self.d = d
        self.iu = np.triu_indices(d)
        self.diag = (self.iu[0] == self.iu[1]).astype(float)
        self.mult = np.where(self.diag > 0, 1.0, 2.0)
        self.n = len(self.iu[0])
        self.D = 1 + d + self.n
        self.ready = False
        self.q = 0.0
        self.moved = np.zeros(d)  # frame displacement since the last observation

    # indices
    @property
    def sg(self):
        return slice(1, 1 + self.d)

    @property
    def sk(self):
        return slice(1 + self.d, self.D)

    def start(self, f0, gscale, c):
        d = self.d
        self.F, self.Finv = np.eye(d), np.eye(d)
        self.theta = np.zeros(self.D)
        self.theta[0] = f0
        self.theta[self.sk] = c * self.diag
        S = np.zeros((self.D, self.D))
        S[0, 0] = (10 * (abs(f0) + gscale)) ** 2
        S[self.sg, self.sg] = (10 * gscale) ** 2 * np.eye(d)
        shape = SHAPE_PRIOR**2 * np.where(self.diag > 0, 1.0, 0.5)
        S[self.sk, self.sk] = (c * c) * (
            SCALE_PRIOR**2 * np.outer(self.diag, self.diag) + np.diag(shape)
        )
        self.Sigma = S
        self.walk = np.where(self.diag > 0, 1.0, 0.5)
        self.ready = True
        self.derive()

    def K(self):
        K = np.zeros((self.d, self.d))
        K[self.iu] = self.theta[self.sk]
        return K + np.triu(K, 1).T

    def features(self, V):
        return V[:, self.iu[0]] * V[:, self.iu[1]] * self.mult

    def move(self, s):
        """Carry the state along the move ``s`` (x-space)."""
        sig = self.Finv @ s
        K = self.K()
        d = self.d
        T = np.eye(self.D)
        g = self.theta[self.sg]
        Ks = K @ sig
        # phi' = phi + g^T sig + sig^T K sig / 2 ; g' = g + K sig ; linear in theta:
        T[0, self.sg] = sig
        T[0, self.sk] = 0.5 * self.features(sig[None, :])[0]
        # g'_i = g_i + sum_j K_ij sig_j : d x n block
        B = np.zeros((d, self.n))
        for k, (i, j) in enumerate(zip(*self.iu, strict=True)):
            B[i, k] += sig[j]
            if i != j:
                B[j, k] += sig[i]
        T[self.sg, self.sk] = B
        theta = self.theta.copy()
        theta[0] += g @ sig + 0.5 * sig @ Ks
        theta[self.sg] = g + Ks
        self.theta = theta
        self.Sigma = T @ self.Sigma @ T.T
        self.moved += sig

    def process_noise(self):
        """The unit process noise of the accumulated move (third-order terms)."""
        r2 = float(self.moved @ self.moved)
        q = np.zeros(self.D)
        q[0] = r2**3 / 36.0
        q[self.sg] = r2**2 / 4.0
        q[self.sk] = r2 * self.walk
        return q

    def observe(self, values, directions, mu, noise_var=0.0):
        """A batch at the current point: ``values[0] = f(x)``, then ``f(x + mu w_m)``,
        then ``f(x - mu w_m)`` for the rows ``w_m`` of ``directions`` (x-space)."""
        P = directions.shape[0]
        V = directions @ self.Finv.T
        a = 0.5 * mu * mu * self.features(V)
        obs = np.zeros((2 * P + 1, self.D))
        obs[:, 0] = 1.0
        obs[1 : P + 1, self.sg] = mu * V
        obs[P + 1 :, self.sg] = -mu * V
        obs[1 : P + 1, self.sk] = a
        obs[P + 1 :, self.sk] = a
        e = values - obs @ self.theta
        OS = obs @ self.Sigma
        predicted = OS @ obs.T
        R = (ROUNDING * np.abs(values).max()) ** 2 + noise_var
        qunit = self.process_noise()
        spread = float(np.einsum("ij,j,ij->", obs, qunit, obs))
        excess = float(e @ e) - float(np.trace(predicted)) - len(values) * R
        q_inst = max(0.0, excess / spread) if spread > 0 else 0.0
        self.q = q_inst if Q_TRACK >= 1 else max(q_inst, (1 - Q_TRACK) * self.q)
        if self.q > 0 and spread > 0:
            self.Sigma = self.Sigma + np.diag(self.q * qunit)
            OS = obs @ self.Sigma
            predicted = OS @ obs.T
        R = max(R, 1e-13 * float(np.diag(predicted).max()))
        S = predicted + R * np.eye(len(values))
        gain = np.linalg.solve(S, OS).T
        self.theta = self.theta + gain @ e
        Sig = self.Sigma - gain @ OS
        self.Sigma = 0.5 * (Sig + Sig.T)
        self.moved = np.zeros(self.d)
        self.innovation = float(e @ e) / max(float(values @ values), 1e-300)
        self.derive()

    def derive(self):
        whitening = magnitude_whitening(self.K())
        if whitening is None:
            return
        c, Q, scaled = whitening
        T = Q / np.sqrt(scaled)
        self.c = c
        self.W = self.F @ T
        self.Wi = (Q.T * np.sqrt(scaled)[:, None]) @ self.Finv
        if scaled.max() / scaled.min() > REFRAME:
            self.reframe(T)

    def reframe(self, T):
        M = np.zeros((self.D, self.D))
        M[0, 0] = 1.0
        M[self.sg, self.sg] = T.T
        M[self.sk, self.sk] = congruence(T, self.iu)
        self.theta = M @ self.theta
        self.Sigma = M @ self.Sigma @ M.T
        self.moved = np.linalg.solve(T, self.moved)
        self.F = self.F @ T
        self.Finv = np.linalg.solve(T, self.Finv)

    def newton(self):
        """``A^{-1} g`` in x-space (A: the model with eigenvalues by magnitude)."""
        g_x = self.Finv.T @ self.theta[self.sg]
        return self.W @ (self.W.T @ g_x) / self.c

    def hessian(self):
        return self.Finv.T @ self.K() @ self.Finv


class FilterZoVH(CentreBatches, zf.FullCurvatureZoVH):
    """The full iteration on the filter: ``2 P + 1`` points a batch (`CentreBatches`, with
    the regression prototype's trust rule and its switches)."""

    def __init__(self, x0, *, rng=None, **options):
        super().__init__(x0, rng=rng, **options)
        self.filter = QuadraticFilter(self.space.dim)

    def _prepare(self):
        U = self._draw(self.n_directions)
        self._drawn = U
        W = self.filter.W if self.filter.ready else np.eye(self.space.dim)
        self._whitened = U @ W.T
        self._sq_norms = np.sum(U * U, axis=1)

    def _f_estimate(self, values, mean):
        return float(values[0])

    def tell(self, values):
        if not self._asked:
            raise RuntimeError("tell() needs a preceding ask()")
        values = np.asarray(values, dtype=np.float64)
        self._asked = False
        control, flt = self.control, self.filter
        P = self.n_directions
        n = len(values)
        self.nit += 1
        self.nfev += n
        self._rows = None
        if not np.isfinite(values).all():
            control.missing()
            if flt.ready:
                flt.move(np.asarray(self._centre - self._x))
            self._x = self._centre
            return
        if not flt.ready:
            mu = self.smoothing
            delta = (values[1 : P + 1] - values[P + 1 :]) / (2 * mu)
            gscale = float(np.abs(delta).max()) + 1e-300
            length = float(np.linalg.norm(delta @ self._whitened))
            c = length / ((self.space.dim + P + 1) * 0.1 * self.scale) if length > 0 else 1.0
            flt.start(float(values[0]), gscale, c)
        verdict = control.judge(float(values[0]))
        flt.observe(values, np.asarray(self._whitened), self.smoothing)
        mean = values.mean()
        spread = math.sqrt(((values - mean) ** 2).sum() / (n - 1))
        if control.observe(spread, math.nan) and self._adapt_smoothing:
            self._set_smoothing(control.smoothing)
        if verdict is False:
            flt.move(np.asarray(self._centre - self._x))
            self._x = self._centre
            if not RETRY:
                return
        elif verdict:
            self._centre = self._x
        self._direction = flt.newton()
        self._gradient_scale = None
        self._trial_move()

    def _trial_move(self):
        norm = float(np.linalg.norm(self._direction))
        if not (math.isfinite(norm) and norm > 0):
            return
        rate = self.control.rate_for(norm)
        before = self._x
        self._x = self._x - rate * self._direction
        self.filter.move(np.asarray(self._x - before))
        self._step_length = rate * norm
        if self.control.stepped(self._step_length) and self._adapt_smoothing:
            self._set_smoothing(self.control.smoothing)

    def estimates(self):
        return {}


def patch():
    ZoVH.iterations["full"] = FilterZoVH


if __name__ == "__main__":
    if sys.argv[1] == "quick":
        quick(int(sys.argv[2]), {"library": zf.FullCurvatureZoVH, "filter": FilterZoVH})
    else:
        patch()
        from zovh_opt.benchmarks.__main__ import main

        sys.exit(main(sys.argv[1:]))
