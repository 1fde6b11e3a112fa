"""Curvature off the axes at large d: two designs tried outside the package (issue #31).

The design the large-d issue proposes keeps the Hessian restricted to the span of the last
``m`` steps and takes the Newton step there. Before measuring that Hessian with pairs (which
costs evaluations), this prototype gives it for free: the exact gradient and Hessian of the
smooth benchmark's ``deblur-1d`` problem (``d = 2000``), restricted to
``span(p, s_1, ..., s_m)`` (``p`` the method's direction, ``s_j`` the last steps), and the
step minimises the quadratic exactly in that span. Two settings, 300 iterations each:

* ``clean``: plain random descent, ``p = (1/M) sum_m u_m u_m^T g`` from ``M`` fresh Gaussian
  directions and the exact gradient (no zovh);
* ``zovh``: the default diagonal model (``curvature="diagonal"``), its direction replaced by
  the oracle's subspace step before each trial.

A second design needs no measurement at all: heavy-ball momentum on the accepted steps,
``x <- c - eta p + beta (c - c_prev)`` (the path of the steps is where conjugate gradients
get their speed). ``momentum`` runs the default diagonal model with it.

Prints the relative gap ``(f - f*) / (f(x0) - f*)`` after 100, 200, 300 iterations.

    python tools/prototypes/large_d_curvature.py            # 3 min on one core
"""

from __future__ import annotations

import warnings

import numpy as np

from zovh_opt import ZoVH
from zovh_opt._methods.zovh_preconditioned import PreconditionedZoVH
from zovh_opt.benchmarks.smooth import make_problem

PROBLEM = make_problem("deblur-1d", 2000)


def _blur(v: np.ndarray) -> np.ndarray:
    return PROBLEM._blur(v.reshape(PROBLEM.shape)).ravel()


def hessian_times(v: np.ndarray) -> np.ndarray:
    return _blur(_blur(v)) + PROBLEM.lam * v


def gradient(x: np.ndarray) -> np.ndarray:
    return _blur(_blur(x) - PROBLEM.b.ravel()) + PROBLEM.lam * x


def subspace_step(p: np.ndarray, steps: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """The exact minimiser's step within ``span(p, steps)`` (``x - step`` is the minimiser)."""
    V, _ = np.linalg.qr(np.stack([p, *steps], 1))
    T = V.T @ np.stack([hessian_times(v) for v in V.T], 1)
    return V @ np.linalg.solve(T, V.T @ gradient(x))


def gap(x: np.ndarray) -> float:
    f0 = PROBLEM(np.zeros(PROBLEM.dim))
    return (PROBLEM(x) - PROBLEM.f_opt) / (f0 - PROBLEM.f_opt)


def clean(M: int, m: int, iterations: int = 300) -> list[float]:
    rng, d = np.random.default_rng(0), PROBLEM.dim
    x, steps, out = np.zeros(d), [], []
    for it in range(1, iterations + 1):
        U = rng.standard_normal((M, d))
        p = U.T @ (U @ gradient(x)) / M
        step = (
            subspace_step(p, steps[:m], x) if m else p * (p @ gradient(x)) / (p @ hessian_times(p))
        )
        x = x - step
        steps.insert(0, -step)
        if it % 100 == 0:
            out.append(gap(x))
    return out


class OracleSubspace(PreconditionedZoVH):
    """The default diagonal iteration with its direction replaced by the oracle's step."""

    memory = 16

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._steps: list[np.ndarray] = []
        self._last_centre = None

    def _trial(self) -> None:
        c = self._centre
        if self._last_centre is not None and c is not self._last_centre:
            self._steps.insert(0, np.asarray(c - self._last_centre))
            del self._steps[self.memory :]
        self._last_centre = c
        if self._direction is not None and (self._steps or self.memory == 0):
            self._direction = subspace_step(np.asarray(self._direction), self._steps, c)
        super()._trial()


class Momentum(PreconditionedZoVH):
    """The default diagonal iteration with heavy-ball momentum on its accepted steps."""

    beta = 0.5

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._last_centre = None

    def _trial(self) -> None:
        c, last = self._centre, self._last_centre
        self._last_centre = c
        super()._trial()
        if last is not None and c is not last and self._direction is not None:
            self._x = self._x + self.beta * (c - last)


def zovh(iteration: type, iterations: int = 300) -> list[float]:
    ZoVH.iterations["diagonal"] = iteration
    try:
        opt = ZoVH(np.zeros(PROBLEM.dim), rng=0, curvature="diagonal")
        out = []
        for it in range(1, iterations + 1):
            X = opt.ask()
            opt.tell(np.array([PROBLEM(x) for x in X]))
            if it % 100 == 0:
                out.append(gap(np.asarray(opt.centre)))
        return out
    finally:
        ZoVH.iterations["diagonal"] = PreconditionedZoVH


def main() -> None:
    warnings.simplefilter("ignore")
    show = lambda v: " ".join(f"{g:.2e}" for g in v)  # noqa: E731
    print("setting, M or P, m: gap after 100 / 200 / 300 iterations")
    for M in (13, 52):
        for m in (0, 16):
            print(f"clean, M = {M}, m = {m} (0: exact line search): {show(clean(M, m))}")
    print(f"zovh default model, P = 13: {show(zovh(PreconditionedZoVH))}")
    for m in (0, 16):
        OracleSubspace.memory = m
        print(f"zovh with the oracle, m = {m}: {show(zovh(OracleSubspace))}")
    for beta in (0.5, 0.8):
        Momentum.beta = beta
        print(f"zovh with momentum, beta = {beta}: {show(zovh(Momentum))}")
    print("(evaluations per iteration: zovh 26; the measured subspace would add 2 m + 2)")


if __name__ == "__main__":
    main()
