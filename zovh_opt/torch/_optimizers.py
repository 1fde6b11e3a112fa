"""ZoVH, MeZO and HiZOO as ``torch.optim`` optimizers that perturb a model in place from seeds.

Each ``step(closure)`` calls the closure a fixed number of times under ``torch.no_grad()``,
moving the parameters in place between calls along directions drawn again from their seeds
(`_inplace.Directions`), and ends with the parameters at the new iterate. The estimators are
the package's (`zovh_opt.estimators`); the history is scalars and seeds. Theory:
``docs/theory.md``, *Fine-tuning in place*.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch

from .. import estimators
from .._methods.option_specs import integer_between, non_negative_real, positive_real
from ._inplace import Directions, Draw, Entry, Workspace, mix

STATE_KEY = "zeroth_order"  # the state_dict entry of the run's scalars, seeds and Gram matrix
BIG = 2**62  # the largest seed or count: a 64-bit integer


def _plus_minus(seeds: list[int], k: int, mu: float) -> list[tuple[list[Draw], float]]:
    """The two passes of direction ``k``'s pair: from the last query (or ``theta``) to
    ``theta + mu u_k``, then to ``theta - mu u_k``; each with the side it ends on."""
    into_plus = [Draw(seeds[k], shift=mu)] + ([Draw(seeds[k - 1], undo=mu)] if k else [])
    return [(into_plus, mu), ([Draw(seeds[k], undo=-mu, shift=-mu)], -mu)]


class ZerothOrderOptimizer(torch.optim.Optimizer):
    """What the three optimizers share: groups, seeds, closure calls and their state.

    Subclasses define `_step`, which calls `_evaluate` and moves the parameters through
    ``self.directions`` (`_inplace.Directions`); a step's directions have the seeds
    ``mix(seed, step, k)``.
    """

    points_per_step: int  # closure calls of one step

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        *,
        seed: int,
        smoothing: float,
        n_directions: int,
        chunk: int | None,
    ) -> None:
        super().__init__(params, {"lr": non_negative_real("lr", lr)})
        for group in self.param_groups:
            group["lr"] = non_negative_real("lr", group["lr"])
        self.seed = integer_between(0, BIG)("seed", seed)
        self.smoothing = positive_real("smoothing", smoothing)
        self.n_directions = integer_between(1, BIG)("n_directions", n_directions)
        self.directions = Directions(chunk)
        self.steps = 0  # steps taken (the seeds' stream position)
        self.skipped_steps = 0  # steps whose closure returned a value that is not finite

    def _entries(self) -> list[Entry]:
        """The trainable parameters with their group's rate, in a fixed order."""
        entries, index = [], 0
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    if p.is_sparse or not p.is_contiguous():
                        raise ValueError("zeroth-order optimizers need dense, contiguous params")
                    entries.append(Entry(index, p, group["lr"]))
                index += 1
        return entries

    def _seeds(self) -> list[int]:
        return [mix(self.seed, self.steps, k) for k in range(self.n_directions)]

    @staticmethod
    def _evaluate(closure: Callable[[], Any]) -> float:
        loss = closure()
        return float(loss.item() if isinstance(loss, torch.Tensor) else loss)

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> float:  # type: ignore[override]
        """One step: ``points_per_step`` calls of ``closure``; returns the step's loss estimate.

        A step whose closure returns a value that is not finite leaves the parameters as they
        were (restored), warns, and counts in ``skipped_steps``.
        """
        if closure is None:
            raise ValueError(f"{type(self).__name__}.step needs a closure that returns the loss")
        loss = self._step(self._entries(), closure)
        self.steps += 1
        return loss

    def _skip(self, entries: list[Entry], restore: list[Draw]) -> float:
        self.directions.sweep(entries, restore)
        self.skipped_steps += 1
        warnings.warn(
            f"{type(self).__name__}: the closure returned a value that is not finite; the step "
            "was skipped and the parameters restored",
            RuntimeWarning,
            stacklevel=4,
        )
        return math.nan

    def _step(self, entries: list[Entry], closure: Callable[[], Any]) -> float:
        raise NotImplementedError

    def _run_state(self) -> dict[str, Any]:
        return {"seed": self.seed, "steps": self.steps, "skipped_steps": self.skipped_steps}

    def _load_run_state(self, state: dict[str, Any]) -> None:
        self.seed, self.steps = int(state["seed"]), int(state["steps"])
        self.skipped_steps = int(state["skipped_steps"])

    def state_dict(self) -> dict[str, Any]:
        """torch's state dict, with the run's seeds and history under ``"zeroth_order"``."""
        state = super().state_dict()
        state[STATE_KEY] = {"method": type(self).__name__, **self._run_state()}
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a `state_dict` of the same optimizer class; the run continues bit for bit."""
        state_dict = dict(state_dict)
        run = state_dict.pop(STATE_KEY, None)
        if run is None or run.get("method") != type(self).__name__:
            found = None if run is None else run.get("method")
            raise ValueError(
                f"this state dict is not a {type(self).__name__}'s (its optimizer: {found})"
            )
        super().load_state_dict(state_dict)
        self._load_run_state(run)


class ZoVH(ZerothOrderOptimizer):
    r"""ZoVH (the paper's Algorithm 1) fine-tuning a model in place, without gradients.

    Each step draws ``K`` Gaussian directions ``u_k`` over all trainable parameters, calls the
    closure at ``theta + mu u_k`` (``K`` forward passes), keeps the last ``N`` steps' seeds and
    values, and moves ``theta <- theta - lr p`` with ``p`` the bias-corrected
    inverse-Hessian-gradient product of all ``M = N K`` kept queries (eq. (16) for ``N = 1``,
    eq. (122) for ``N > 1``, with the diagonal inverse of eq. (15)). Directions are drawn
    again from their seeds, a chunk of one parameter at a time: the history is ``M`` values,
    ``M`` seeds and the ``M x M`` Gram matrix of the kept directions.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups, as for any ``torch.optim`` optimizer; a group may set
        its own ``lr``. Parameters with ``requires_grad=False`` are not touched.
    lr : float
        Learning rate ``eta`` (the paper's grid for OPT: 1e-4, 5e-5, 1e-5).
    seed : int
        The directions' seed: the same seed, model and closure give the same run.
    smoothing : float
        ``mu``, the perturbation's scale (1e-2 in the paper's Appx. E).
    n_directions : int
        ``K``, closure calls per step (3 in the paper's Appx. E).
    history : int
        ``N``, the steps whose queries are reused (1 or 2 in Appx. E); ``N K >= 3``.
    regularization : float
        ``lambda`` of ``(H + lambda I)^-1`` (0.5 in Appx. E).
    chunk : int or None
        Elements drawn at once (``None``: by device); changes the directions, not the method.

    Examples
    --------
    >>> import torch
    >>> from zovh_opt.torch import ZoVH
    >>> _ = torch.manual_seed(0)
    >>> model = torch.nn.Linear(4, 1)
    >>> x, y = torch.randn(32, 4), torch.zeros(32, 1)
    >>> opt = ZoVH(model.parameters(), lr=1e-2, seed=0)
    >>> def closure():
    ...     return torch.nn.functional.mse_loss(model(x), y)
    >>> first = closure().item()
    >>> for _ in range(300):
    ...     loss = opt.step(closure)
    >>> bool(closure().item() < first / 2)
    True
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        *,
        seed: int = 0,
        smoothing: float = 1e-2,
        n_directions: int = 3,
        history: int = 1,
        regularization: float = 0.5,
        chunk: int | None = None,
    ) -> None:
        super().__init__(
            params, lr, seed=seed, smoothing=smoothing, n_directions=n_directions, chunk=chunk
        )
        self.history = integer_between(1, BIG)("history", history)
        self.regularization = positive_real("regularization", regularization)
        if self.history * self.n_directions < 3:
            raise ValueError(
                "history * n_directions must be >= 3 (the leave-one-out correction divides by "
                f"M - 2), got {self.history} * {self.n_directions}"
            )
        self.points_per_step = self.n_directions
        self._kept_seeds: list[int] = []  # the kept queries, oldest first
        self._kept_values: list[float] = []
        self._gram = np.zeros((0, 0))

    def _step(self, entries: list[Entry], closure: Callable[[], Any]) -> float:
        mu, K = self.smoothing, self.n_directions
        new = self._seeds()
        n_old = min(len(self._kept_seeds), (self.history - 1) * K)
        old = self._kept_seeds[len(self._kept_seeds) - n_old :]
        values, block = [], None
        for k in range(K):
            # from the last query (or theta) to theta + mu u_k; the pass into the last query
            # also forms the Gram rows of the new directions
            moves = {k: Draw(new[k], shift=mu)}
            if k:
                moves[k - 1] = Draw(new[k - 1], undo=-mu)
            if k == K - 1:
                draws = [moves.get(j, Draw(s)) for j, s in enumerate(new)] + [Draw(s) for s in old]
                block = self.directions.sweep(entries, draws, rows=range(K))
            else:
                self.directions.sweep(entries, list(moves.values()))
            values.append(self._evaluate(closure))
            if not math.isfinite(values[-1]):
                return self._skip(entries, [Draw(new[k], undo=-mu)])
        self._push(new, values, old, block)
        c = estimators.newton_coefficients(
            self._gram, np.asarray(self._kept_values), mu, self.regularization, exact=False
        )
        last = len(self._kept_seeds) - 1
        draws = [
            Draw(s, undo=-mu if m == last else 0.0, step=-float(c[m]))
            for m, s in enumerate(self._kept_seeds)
        ]
        self.directions.sweep(entries, draws)
        return float(np.mean(values))

    def _push(self, new: list[int], values: list[float], old: list[int], block: Any) -> None:
        """Keep the new queries, drop those older than ``history`` steps, extend the Gram."""
        K, n_old = self.n_directions, len(old)
        start = len(self._kept_seeds) - n_old
        gram = np.empty((n_old + K, n_old + K))
        gram[:n_old, :n_old] = self._gram[start:, start:]
        gram[n_old:, n_old:] = block[:, :K]
        gram[n_old:, :n_old] = block[:, K:]
        gram[:n_old, n_old:] = block[:, K:].T
        self._gram = gram
        self._kept_seeds = self._kept_seeds[start:] + new
        self._kept_values = self._kept_values[start:] + values

    def _run_state(self) -> dict[str, Any]:
        return {
            **super()._run_state(),
            "kept_seeds": list(self._kept_seeds),
            "kept_values": list(self._kept_values),
            "gram": self._gram.tolist(),
            "config": [self.n_directions, self.history, self.smoothing, self.regularization],
        }

    def _load_run_state(self, state: dict[str, Any]) -> None:
        super()._load_run_state(state)
        self._kept_seeds = [int(s) for s in state["kept_seeds"]]
        self._kept_values = [float(v) for v in state["kept_values"]]
        self._gram = np.array(state["gram"], dtype=float).reshape(len(self._kept_seeds), -1)


class MeZO(ZerothOrderOptimizer):
    r"""MeZO (Malladi et al., 2023): SPSA steps on a model perturbed in place from seeds.

    Each step calls the closure at ``theta + mu u_k`` and ``theta - mu u_k`` for ``K``
    directions (``2K`` forward passes) and moves
    ``theta <- theta - lr / K sum_k (y+_k - y-_k) / (2 mu) u_k``. It returns the mean of the
    ``2K`` values.

    Parameters
    ----------
    params, lr, seed, chunk
        As for `ZoVH`.
    smoothing : float
        ``mu`` (MeZO's ``eps``, 1e-3 by default as in MeZO's code).
    n_directions : int
        ``K``, the directions of a step (1: MeZO's SPSA step).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        *,
        seed: int = 0,
        smoothing: float = 1e-3,
        n_directions: int = 1,
        chunk: int | None = None,
    ) -> None:
        super().__init__(
            params, lr, seed=seed, smoothing=smoothing, n_directions=n_directions, chunk=chunk
        )
        self.points_per_step = 2 * self.n_directions

    def _step(self, entries: list[Entry], closure: Callable[[], Any]) -> float:
        mu, K, seeds = self.smoothing, self.n_directions, self._seeds()
        values, slopes = [], []
        for k, s in enumerate(seeds):
            for draws, side in _plus_minus(seeds, k, mu):
                self.directions.sweep(entries, draws)
                values.append(self._evaluate(closure))
                if not math.isfinite(values[-1]):
                    return self._skip(entries, [Draw(s, undo=-side)])
            slopes.append((values[-2] - values[-1]) / (2 * mu * K))
        draws = [
            Draw(s, undo=mu if k == K - 1 else 0.0, step=-slopes[k]) for k, s in enumerate(seeds)
        ]
        self.directions.sweep(entries, draws)
        return float(np.mean(values))

    def _run_state(self) -> dict[str, Any]:
        return {**super()._run_state(), "config": [self.n_directions, self.smoothing]}


class HiZOO(ZerothOrderOptimizer):
    r"""HiZOO (Zhao et al., 2025): steps preconditioned by a diagonal Hessian, in place.

    HiZOO keeps a diagonal Hessian estimate ``Sigma`` (ones at first; a tensor of each
    parameter's size, in ``state[p]["hessian"]``) and perturbs along ``Sigma^{-1/2} u_k``. A
    step calls the closure at ``theta`` and at ``theta +- mu Sigma^{-1/2} u_k`` (``2K + 1``
    forward passes), then updates

    .. math::
        \Sigma \leftarrow (1 - \alpha) \Sigma + \alpha \Big| \Sigma \odot \frac{1}{2K}
        \sum_k \frac{y^+_k - 2 y_0 + y^-_k}{\mu^2} u_k \odot u_k \Big|, \qquad
        \theta \leftarrow \theta - \eta\, \Sigma^{-1/2} \frac1K \sum_k
        \frac{y^+_k - y^-_k}{2\mu} u_k ,

    as `zovh_opt.HiZOO` does on a vector. It returns ``y_0``, the loss at ``theta``.

    Parameters
    ----------
    params, lr, seed, chunk
        As for `ZoVH`.
    smoothing : float
        ``mu`` (1e-3 by default).
    n_directions : int
        ``K`` (1: HiZOO's three forward passes a step).
    alpha : float
        The Hessian's smoothing factor, in ``[0, 1]`` (1e-8 in HiZOO's and the paper's runs).
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float,
        *,
        seed: int = 0,
        smoothing: float = 1e-3,
        n_directions: int = 1,
        alpha: float = 1e-8,
        chunk: int | None = None,
    ) -> None:
        super().__init__(
            params, lr, seed=seed, smoothing=smoothing, n_directions=n_directions, chunk=chunk
        )
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 <= alpha <= 1:
            raise ValueError(f"alpha must be a number in [0, 1], got {alpha!r}")
        self.alpha = float(alpha)
        self.points_per_step = 2 * self.n_directions + 1

    def _hessian(self, entry: Entry) -> torch.Tensor:
        state = self.state[entry.param]
        if "hessian" not in state:
            state["hessian"] = torch.ones_like(entry.param, memory_format=torch.contiguous_format)
        return state["hessian"].view(-1)

    def _root(self, entry: Entry, start: int, n: int) -> torch.Tensor:
        """``Sigma^{1/2}`` on a chunk: HiZOO's directions are ``Sigma^{-1/2} u``."""
        return self._hessian(entry)[start : start + n].sqrt()

    def _step(self, entries: list[Entry], closure: Callable[[], Any]) -> float:
        mu, K, seeds = self.smoothing, self.n_directions, self._seeds()
        y0 = self._evaluate(closure)
        if not math.isfinite(y0):
            return self._skip(entries, [])
        curvature, slopes = [], []
        for k, s in enumerate(seeds):
            pair = []
            for draws, side in _plus_minus(seeds, k, mu):
                self.directions.sweep(entries, draws, scale=self._root)
                pair.append(self._evaluate(closure))
                if not math.isfinite(pair[-1]):
                    self.directions.sweep(entries, [Draw(s, undo=-side)], scale=self._root)
                    return self._skip(entries, [])
            curvature.append((pair[0] - 2 * y0 + pair[1]) / (2 * K) / mu / mu)
            slopes.append((pair[0] - pair[1]) / (2 * mu * K))
        self._update(entries, seeds, curvature, slopes)
        return y0

    def _update(
        self, entries: list[Entry], seeds: list[int], curvature: list, slopes: list
    ) -> None:
        """Back from the last query, then the Hessian's moving average and the preconditioned
        step, chunk by chunk."""
        mu, alpha = self.smoothing, self.alpha

        def work(space: Workspace, entry: Entry, number: int, start: int, piece: Any) -> None:
            hessian = self._hessian(entry)[start : start + piece.numel()]
            estimate = space.accumulate(piece, 0)
            gradient = space.accumulate(piece, 1)
            for k, (s, c, g) in enumerate(zip(seeds, curvature, slopes, strict=True)):
                u = space.draw(s, entry, number, piece, 0)
                if k == len(seeds) - 1:  # the last query was theta - mu Sigma^{-1/2} u
                    back = estimate.copy_(u).mul_(mu).div_(hessian.sqrt())
                    piece.copy_(back.add_(piece))
                    estimate.zero_()
                gradient.add_(u, alpha=g)
                estimate.addcmul_(u, u, value=c)
            estimate.mul_(hessian).abs_()
            hessian.mul_(1 - alpha).add_(estimate, alpha=alpha)
            if entry.lr != 0.0:
                piece.copy_(gradient.div_(hessian.sqrt()).mul_(-entry.lr).add_(piece))

        self.directions.each(entries, work)

    def _run_state(self) -> dict[str, Any]:
        return {**super()._run_state(), "config": [self.n_directions, self.smoothing, self.alpha]}
