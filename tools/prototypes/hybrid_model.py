"""Prototype, outside the package: the library's full model with a least-squares fit beside it.
Not a part of zovh_opt: the design that entered it (``zovh_opt._curvature_fit``) grew from this
file, whose switches reproduce the variants the docs' theory page measures (*The
least-squares fit beside the full model*).

The library's iteration (``FullCurvatureZoVH``) runs unchanged, and beside its multiplicative
model ``L`` a Kalman filter ``Q`` fits the Hessian to the pairs' centred curvature contrasts
(``P - 1`` a batch, fixed frame, forgetting, a random walk sized by covariance matching).
Before either learns from a batch, both predict its contrasts; running geometric means of
their relative squared errors decide: where ``Q``'s is below ``ADOPT`` times ``L``'s (and below
``ADOPT_MAX``), ``L`` moves toward ``Q`` (by at most ``ADOPT_RANGE`` per eigenvalue, with
``PD_ONLY`` only toward a positive definite one); with ``LS_GRADIENT``, where the better
score (``GRADIENT_ANY``; else ``L``'s) is below ``GRADIENT_MAX`` the step's gradient is the
weighted least-squares fit of the current and kept pairs.

It patches ``zovh_opt._methods.zovh_full`` as it was at commit 99fec66; run it there
(``PYTHONPATH`` on a worktree of it), with the switches set by ``tools/prototypes/variant.py``::

    python tools/prototypes/variant.py hybrid_model '{"LS_GRADIENT": true, "PD_ONLY": true,
        "ADOPT_MAX": 0.01, "GRADIENT_MAX": 0.01, "ADOPT_RANGE": 10}' coco --suite bbob \
        --dim 10 --instances 1-3 --budget 1000 --solvers zovh --no-cocopp --jobs 1

Those settings (configuration B) are the package's. Measured on COCO ``bbob``, ``1000 d``,
against the library then, instances 1-3: configuration B 0.654 / 0.498 / 0.478 / 0.410
against 0.622 / 0.486 / 0.458 / 0.407 at d = 2 / 5 / 10 / 20 (instances 4-5: 0.560 / 0.560
/ 0.472 against 0.558 / 0.544 / 0.435); without the clip (``ADOPT_RANGE`` = 1e300) f12 and
f13 at d = 2 (instances 1-6) reached 0.52-0.55 of their targets against the library's 0.72.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from zovh_opt._methods import zovh_full as zf
from zovh_opt._methods.zovh import ZoVH

MEMORY = 3.0  # the filter remembers about this many n equations
SCALE_PRIOR = 10.0  # prior sd of the scale, in units of the model's first c
SHAPE_PRIOR = 0.3  # prior sd of each entry of the shape, likewise
SCORE_TRACK = 0.3  # weight of a batch in the scores' running geometric means
ADOPT = 0.5  # Q's score under this times L's: L moves toward Q
WALK = True  # the filter's random walk matched to the innovations
LS_GRADIENT = False  # the fitted gradient where a score is under GRADIENT_MAX
ADOPT_MAX = 1e300  # and Q's score under this
PD_ONLY = False  # adopt only a positive definite Q (relative to L)
ADOPT_RANGE = 1e300  # at most this factor per eigenvalue in one move
GRADIENT_ANY = True  # the better of the two scores (else L's) for the fitted gradient
GRADIENT_MAX = 0.1
BASE_ERROR = 1e-6  # the current pairs' error in the gradient's fit, relative to the largest


def helmert(P):
    q, _ = np.linalg.qr(np.column_stack([np.ones(P), np.eye(P)[:, : P - 1]]))
    return q[:, 1:]


class ContrastFilter:
    """Kalman fit of ``H`` (x coordinates) to centred second differences."""

    def __init__(self, d, P):
        self.d, self.P = d, P
        self.iu = np.triu_indices(d)
        self.diag = (self.iu[0] == self.iu[1]).astype(float)
        self.mult = np.where(self.diag > 0, 1.0, 2.0)
        self.n = len(self.iu[0])
        self.C = helmert(P)
        self.gamma = 1.0 - (P - 1) / (MEMORY * self.n)
        self.ready = False

    def start(self, c):
        self.kappa = c * self.diag
        shape = SHAPE_PRIOR**2 * np.where(self.diag > 0, 1.0, 0.5)
        self.Sigma = (c * c) * (SCALE_PRIOR**2 * np.outer(self.diag, self.diag) + np.diag(shape))
        self.walk = np.where(self.diag > 0, 1.0, 0.5)
        self.ready = True

    def H(self):
        K = np.zeros((self.d, self.d))
        K[self.iu] = self.kappa
        return K + np.triu(K, 1).T

    def features(self, directions):
        a = directions[:, self.iu[0]] * directions[:, self.iu[1]] * self.mult
        return self.C.T @ a

    def predict(self, directions):
        return self.features(directions) @ self.kappa

    def learn(self, contrasts, directions, c):
        a = self.features(directions)
        y = self.C.T @ contrasts
        if not (np.isfinite(a).all() and np.isfinite(y).all()):
            return
        Sigma = self.Sigma / self.gamma
        e = y - a @ self.kappa
        AS = a @ Sigma
        predicted = AS @ a.T
        R = (1e-8 * c * self.d) ** 2
        if WALK:
            walk = self.walk * (c * c)
            spread = float(np.sum(a * walk * a))
            q = (float(e @ e) - float(np.trace(predicted)) - len(y) * R) / spread
            if spread > 0 and q > 0:
                Sigma = Sigma + q * np.diag(walk)
                AS = a @ Sigma
                predicted = AS @ a.T
        S = predicted + R * np.eye(len(y))
        try:
            gain = np.linalg.solve(S, AS).T
        except np.linalg.LinAlgError:
            return
        kappa = self.kappa + gain @ e
        Sigma = Sigma - gain @ AS
        if np.isfinite(kappa).all() and np.isfinite(Sigma).all():
            self.kappa, self.Sigma = kappa, 0.5 * (Sigma + Sigma.T)


class HybridZoVH(zf.FullCurvatureZoVH):
    def __init__(self, x0, *, rng=None, **options):
        super().__init__(x0, rng=rng, **options)
        self.shadow = ContrastFilter(self.space.dim, self.n_directions)
        self.scores = [math.nan, math.nan]  # L, Q
        self.adopted = 0
        self._adopt = False

    def _step_and_learn(self, deltas, c, weights, *, keep):
        step = None if deltas is None else self._newton_step(deltas, c)
        if weights is not None:
            self._compare_and_learn(weights, c)
            rows_kept = self.history > 1 and self.directions == "vectors"
            self.model.learn(weights, self._drawn, self._whitened, in_place=not rows_kept)
            if self._adopt:
                self._take_shadow()
        return step

    def _compare_and_learn(self, weights, c):
        P = self.n_directions
        U = np.asarray(self._drawn)
        Wd = np.asarray(self._whitened)  # x-space directions
        sq = np.sum(U * U, axis=1)
        # measured centred contrasts of w^T H w: 2 r / mu^2 + c (|u|^2 - mean)
        contrasts = 2.0 * (P - 1) * np.asarray(weights) + c * (sq - sq.mean())
        if not self.shadow.ready:
            self.shadow.start(c)
        y = self.shadow.C.T @ contrasts
        norm = float(y @ y) + 1e-300
        pred_L = self.shadow.C.T @ (c * (sq - sq.mean()))
        pred_Q = self.shadow.predict(Wd)
        errors = [float((y - p) @ (y - p)) / norm for p in (pred_L, pred_Q)]
        for k in range(2):  # geometric running means (a contrast near 0 inflates one error)
            e = math.log(max(errors[k], 1e-300))
            s = self.scores[k]
            s = e if math.isnan(s) else math.log(s) + SCORE_TRACK * (e - math.log(s))
            self.scores[k] = math.exp(s)
        self._adopt = self.scores[1] < ADOPT * self.scores[0] and self.scores[1] < ADOPT_MAX
        self.shadow.learn(contrasts, Wd, c)

    def _take_shadow(self):
        m = self.model
        H = self.shadow.H()
        W, c = np.asarray(m.whitening), m.curvature
        X = W.T @ H @ W / c  # the fit relative to the model, in its whitened coordinates
        rho, V = np.linalg.eigh(0.5 * (X + X.T))
        if not (np.isfinite(rho).all() and rho.min() > 0):
            return
        rho = np.exp(np.clip(np.log(rho), -math.log(ADOPT_RANGE), math.log(ADOPT_RANGE)))
        scale = float(np.exp(np.mean(np.log(rho))))
        m.curvature = c * scale
        m.whitening = W @ (V * np.sqrt(scale / rho))
        shrink = np.sqrt(rho / scale)[:, None]
        m.inverse_whitening = (V.T * shrink) @ np.asarray(m.inverse_whitening)
        m.updates = 0
        self.adopted += 1

    def _newton_step(self, deltas, c):
        used = self.scores[1] if self.adopted and ADOPT_MAX > 0 else self.scores[0]
        score = min(self.scores) if GRADIENT_ANY else used
        accurate = not math.isnan(used) and score < GRADIENT_MAX
        if not (LS_GRADIENT and accurate):
            return super()._newton_step(deltas, c)
        P = self.n_directions
        M = P * (1 + len(self._kept))
        rows = [np.asarray(self._drawn)]
        values = [np.asarray(deltas)]
        errors = [np.zeros(P)]
        scale = float(np.abs(deltas).max())
        Wi = np.asarray(self.model.inverse_whitening)
        move = self.model.transport()
        score = (
            min(s for s in self.scores if not math.isnan(s))
            if not all(math.isnan(s) for s in self.scores)
            else 1.0
        )
        eps = math.sqrt(score)
        for kept in self._kept:
            kr = np.asarray(self._kept_rows(kept))
            rz = kr @ Wi.T
            dz = Wi @ (np.asarray(self._x) - np.asarray(kept.centre))
            moved = np.asarray(move(kr, kept.deltas, self._x - kept.centre))
            rows.append(rz)
            values.append(moved)
            errors.append(eps * c * np.linalg.norm(rz, axis=1) * np.linalg.norm(dz))
            scale = max(scale, float(np.abs(moved).max()))
        Z, b = np.vstack(rows), np.concatenate(values)
        sigma = np.concatenate(errors) + BASE_ERROR * (scale + 1e-300)
        ok = np.isfinite(b) & np.isfinite(sigma) & np.isfinite(Z).all(axis=1) & (sigma > 0)
        try:
            g_z = np.linalg.lstsq(Z[ok] / sigma[ok, None], b[ok] / sigma[ok], rcond=1e-12)[0]
        except np.linalg.LinAlgError:
            return super()._newton_step(deltas, c)
        return (np.asarray(self.model.whitening) @ g_z) / c, M


def patch():
    ZoVH.iterations["full"] = HybridZoVH


if __name__ == "__main__":
    patch()
    from zovh_opt.benchmarks.__main__ import main

    sys.exit(main(sys.argv[1:]))
