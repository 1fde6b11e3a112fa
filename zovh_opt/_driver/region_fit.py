"""The trust region's quadratic model (`zovh_opt._driver.trust_region`): a weighted
least-squares fit of the change of the last Hessian over the points nearest the centre,
held back by a ridge. Host float64, ``O(d^2)`` unknowns. Evidence: the theory page, *The
region's fit: far points weigh less, the change is held back*.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ..tuning import active
from .coordinates import power_of_two_near

__all__ = ["fit_model", "fresh_fit_missed_less", "least_squares"]


def least_squares(rows: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares solution (LAPACK's ``gelsd``); where its SVD does not
    converge (it happened once at d = 20 on finite rows of magnitude 1e3: bbob f24 instance 5),
    a complete orthogonal factorisation (``gelsy``), which has no iteration to fail."""
    try:
        return np.linalg.lstsq(rows, rhs, rcond=None)[0]
    except np.linalg.LinAlgError:
        return scipy.linalg.lstsq(rows, rhs, lapack_driver="gelsy")[0]


def fit_model(
    points: np.ndarray,
    values: np.ndarray,
    centre: np.ndarray,
    f_centre: float,
    radius: float,
    prior: np.ndarray,
    misfit: bool = False,
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """The model's gradient and Hessian at ``centre`` (in the region's coordinates ``u``):
    least squares over the nearest ``points`` of the change of the Hessian ``prior``, the
    point ``r`` from the centre weighted ``1 / (1 + (r / radius)^3)`` (a quadratic's error
    grows as ``r^3``: far points must not set the slope), the change held back by
    `_ridge`; with ``misfit``, the spread of the fit's residuals too (``1.4826 MAD``),
    else ``None``."""
    d = centre.shape[0]
    offsets = points - centre
    distance = np.linalg.norm(offsets, axis=1)
    unknowns = (d + 1) * (d + 2) // 2
    nearest = np.argsort(distance, kind="stable")[: active().trust_region.POINTS * unknowns]
    near = nearest[distance[nearest] <= active().trust_region.REACH * radius]
    if near.size < d + 1:
        near = nearest[: d + 1]
    s = offsets[near] / radius
    changes = values[near] - f_centre
    largest = float(np.max(np.abs(changes)))
    # the fit in a unit of f near its changes (a power of two, exact): f of 1e154 would
    # overflow the squares, and 1e-300 underflow them
    unit = power_of_two_near(largest) if math.isfinite(largest) and largest > 0 else 1.0
    rest = (
        values[near] - f_centre - 0.5 * np.einsum("ni,ij,nj->n", s, prior, s) * (radius * radius)
    ) / unit
    iu = np.triu_indices(d)
    quadratic = s[:, iu[0]] * s[:, iu[1]]
    quadratic[:, iu[0] == iu[1]] *= 0.5
    free = active().trust_region.FREE  # the value and slope columns: barely penalised
    a = np.hstack([free * np.ones((near.size, 1)), free * s, quadratic])
    weights = 1.0 / (1.0 + (distance[near] / radius) ** 3)
    rows, rhs = _ridge(a * weights[:, None], rest * weights, changes / unit * weights, d)
    solution = least_squares(rows, rhs)
    spread = None
    if misfit:
        spread = 1.4826 * float(np.median(np.abs(a @ solution - rest))) * unit
    solution = solution * unit
    change = np.zeros((d, d))
    change[iu] = solution[d + 1 :]
    change = change + change.T - np.diag(np.diag(change))
    return free * solution[1 : d + 1] / radius, prior + change / (radius * radius), spread


def fresh_fit_missed_less(
    points: np.ndarray,
    values: np.ndarray,
    centre: np.ndarray,
    f_centre: float,
    radius: float,
    step: np.ndarray,
    value: float,
    predicted: float,
) -> bool:
    """Whether a model fitted without a carried Hessian (from zero) and without the failed
    ``step``'s point would have missed its ``value`` by at most `FRESH_MISS` of the carried
    model's miss (its ``predicted`` decrease against the actual). The carried Hessian holds
    curvature seen far away (f6's is ``10^4`` times larger across the minimum), and the points
    near the centre may have learned otherwise."""
    share = active().trust_region.FRESH_MISS
    others = ~np.all(points == step, axis=1)
    if not share > 0 or np.count_nonzero(others) < centre.shape[0] + 1:
        return False  # (the rule off: no fit)
    prior = np.zeros((centre.shape[0], centre.shape[0]))
    g, h, _ = fit_model(points[others], values[others], centre, f_centre, radius, prior)
    s = step - centre
    actual = f_centre - value
    fresh = -float(g @ s + 0.5 * s @ h @ s)
    return abs(fresh - actual) < share * abs(predicted - actual)


def _ridge(
    rows: np.ndarray, rhs: np.ndarray, changes: np.ndarray, d: int
) -> tuple[np.ndarray, np.ndarray]:
    """The fit's rows with a penalty on each coefficient of the Hessian's change: `RIDGE`
    times the residuals' root mean square over that of the values' ``changes`` from the
    centre's (both weighted). Interpolating about as many points as unknowns would put their
    noise, or a far point's higher-order terms, into the Hessian and through it into the
    slope; the penalty holds the change back as far as the last model misses the values, and
    lets it through where the misfit is small against what ``f`` varies by."""
    ridge = active().trust_region.RIDGE
    scale = float(np.sqrt(np.mean(changes**2)))
    if not ridge > 0 or not scale > 0:
        return rows, rhs
    penalty = ridge * float(np.sqrt(np.mean(rhs**2))) / scale
    unknowns = rows.shape[1] - d - 1
    penalty_rows = np.hstack([np.zeros((unknowns, d + 1)), penalty * np.eye(unknowns)])
    return np.vstack([rows, penalty_rows]), np.concatenate([rhs, np.zeros(unknowns)])
