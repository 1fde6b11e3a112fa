"""Do the pairs' curvature values find an off-axis direction at large d? (issue #31)

L-BFGS-B leads the default on COCO's rotated discus (f11: one stiff direction) and bent cigar
(f12: one flat direction) at d = 80-320, where a diagonal model cannot whiten the Hessian and
a rank-one correction would. Before building one into the model, this asks whether the pairs
the model already measures reveal that direction. In whitened coordinates a pair along
``w ~ N(0, I)`` measures ``c = w^T H w`` (exactly, on a quadratic), and the paper's estimator
gives ``E[(c - tr H) w w^T] = 2 H``; so ``(H - tr(H)/d I) V`` is estimated without bias from a
batch of ``P`` pairs at ``O(P d k)`` cost, and a block power iteration on it should find the
directions where the Hessian departs most from its mean: the discus's stiff one, the cigar's
flat one, the two leading ones of a spectrum ``(1e4, 1e2, 1, ..., 1)``.

Three rules, each printing the median over 3 seeds of the cosine between the learned
``k``-dimensional subspace and the true one after 5 ... 200 batches:

* ``oja``: ``V <- qr(V + 0.5 H_hat V / |H_hat V|)`` (Oja's rule with a normalised step);
* ``averaged``: ``Y <- (1 - a) Y + a (H - tr/d) V``, ``a = max(1/t, 0.02)``, ``V = qr(Y)``;
* ``pooled``: one power step from the summed products of 20 batches.

Measured (d = 80, P = 10): the discus's direction reaches a cosine of 0.68 / 0.37 / 0.69 after
200 batches (4000 evaluations, 50 d), the cigar's and the two-direction case's never above
0.2. The reason is the estimator's variance: along ``V ~ v`` a pair's product has noise
``lambda (v.w)^3 (e.w)`` in each of the ``d`` other coordinates, about ``lambda sqrt(15 d P) /
(2 (P - 1))`` per batch against the signal ``2 lambda``: a signal-to-noise ratio of 0.3 per
batch at d = 80 (0.2 at d = 320, P = 16), and for the cigar the ``d - 1`` stiff directions
put ``1e6`` of noise on a departure of ``1e6``. Not adopted: the subspace has to come from
elsewhere (the gradient estimates, or pairs placed in a candidate subspace, which measure
``V^T H V`` exactly but find no new direction).

    python tools/prototypes/pair_subspace.py            # under a second
"""

from __future__ import annotations

import numpy as np

D, P, BATCHES, REPORT = 80, 10, 200, (5, 10, 20, 40, 80, 160, 200)


def hessian(name: str, basis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rotated Hessian and the directions it departs along."""
    lam = np.ones(D)
    if name == "discus":
        lam[0] = 1e6
    elif name == "cigar":
        lam[:] = 1e6
        lam[0] = 1.0
    else:  # "two"
        lam[:2] = [1e4, 1e2]
    k = 2 if name == "two" else 1
    return basis * lam @ basis.T, basis[:, :k]


def departure_times(W: np.ndarray, H: np.ndarray, V: np.ndarray) -> np.ndarray:
    """The batch's unbiased estimate of ``(H - tr(H)/d I) V`` from its pairs' values."""
    c = np.einsum("pi,ij,pj->p", W, H, W)
    level = c.mean() / D
    c = c - c.mean()
    return (W.T * c) @ (W @ V) / (2 * (P - 1)) - level * V


def run(rule: str, H: np.ndarray, target: np.ndarray, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    k = target.shape[1]
    V, _ = np.linalg.qr(rng.standard_normal((D, k)))
    Y, cosines = np.zeros((D, k)), []
    for t in range(BATCHES):
        product = departure_times(rng.standard_normal((P, D)), H, V)
        if rule == "oja":
            V, _ = np.linalg.qr(V + 0.5 * product / np.linalg.norm(product, axis=0).max())
        elif rule == "averaged":
            a = max(1.0 / (t + 1), 0.02)
            Y = (1 - a) * Y + a * product
            V, _ = np.linalg.qr(Y)
        else:  # pooled
            Y += product
            if (t + 1) % 20 == 0:
                V, _ = np.linalg.qr(Y)
                Y[:] = 0
        cosines.append(float(np.linalg.svd(target.T @ V, compute_uv=False).min()))
    return cosines


def main() -> None:
    basis, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((D, D)))
    print(f"d = {D}, P = {P}: median cosine (3 seeds) after " + ", ".join(map(str, REPORT)))
    for name in ("discus", "cigar", "two"):
        H, target = hessian(name, basis)
        for rule in ("oja", "averaged", "pooled"):
            runs = np.array([run(rule, H, target, seed) for seed in range(3)])
            row = " ".join(f"{np.median(runs[:, b - 1]):5.2f}" for b in REPORT)
            print(f"{name:7s} {rule:9s} {row}")


if __name__ == "__main__":
    main()
