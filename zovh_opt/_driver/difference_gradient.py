"""The quasi-Newton phase's gradients by forward differences, ask by ask (`QuasiNewtonPhase`).

A gradient is ``d`` forward differences with steps ``sqrt(eps) max(|x_i|, l / sqrt(d))``
made exact in ``x``'s precision, in asks of at most `BLOCK` points; its first ask measures
the centre again where noise is not ruled out (a value that does not repeat ends the phase:
noise); a coordinate whose forward value is not finite is measured backwards, then both ways
at half the step and a quarter where that fails too. Where the trust region may follow (``d
<= 20``) the first gradient also probes for ruggedness, and measures the values that read it
again where they may hold an outlier (theory page, *Mild noise at small d*, *The probe*). The
steps and line searches: `zovh_opt._driver.quasi_newton`.
"""

from __future__ import annotations

import math
from typing import Any

from .._noise.monitor import repeats
from ..tuning import active

__all__ = ["DifferenceGradient", "unrounded_steps"]


def unrounded_steps(x: Any, floor: float, eps: float, xp: Any) -> Any:
    """The forward-difference steps of the coordinates ``x``, ``sqrt(eps) max(|x_j|, floor)``
    (``floor``: ``l / sqrt(d)``), before the rounding that makes them exact in ``x``'s
    precision."""
    return math.sqrt(eps) * xp.maximum(xp.abs(x), xp.full_like(x, floor))


class DifferenceGradient:
    """The gradient's asks and their values, mixed into `QuasiNewtonPhase`, whose state they
    read and write: ``x``, ``fx`` (in the phase's unit), ``g``, ``measured``, ``retry``,
    ``recheck``, ``centre_known``, ``probing``, ``wide``, ``caps``, ``eps``, ``length`` and
    the phase's end (``ended``); a value that does not repeat calls the phase's
    ``_found_noise``, a complete gradient its ``_gradient_complete``."""

    def _gradient_size(self) -> int:
        """The points of a gradient's next ask (or of the probe's wide pair, or its repeats)."""
        if self.wide is not None:
            return len(self.probed) if self.repeating else 2
        if self._retrying:
            return len(self.retry)
        return (
            min(active().quasi_newton.BLOCK - int(self._with_centre()), self.dim - self.measured)
            + int(self._with_centre())
            + int(self._with_probe())
        )

    def _gradient_point(self, i: int) -> Any:
        """Point ``i`` of a gradient's ask (module docstring), a new array in the phase's
        namespace."""
        if self.wide is not None:
            return self._wide_points()[i]
        row = self.xp.asarray(self.x, copy=True)
        moved = self._moved(i)
        if moved is not None:
            j, sign = moved
            row[j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1, sign)
        return row

    def _gradient_points(self) -> Any:
        """A gradient's ask as one new ``(n, d)`` array in the phase's namespace (one copy of
        ``x`` a row, where stacked rows take two)."""
        if self.wide is not None:
            return self.xp.stack(self._wide_points())
        block = self.space.empty((self.size(), self.dim))
        block[...] = self.x
        if self._retrying:  # a few rows: each its own step
            for i in range(block.shape[0]):
                j, sign = self._moved(i)
                block[i, j : j + 1] = self.x[j : j + 1] + self._steps(j, j + 1, sign)
            return block
        probe = int(self._with_probe())
        n, centre, start = block.shape[0] - probe, int(self._with_centre()), self.measured
        steps = self._steps(start, start + n - centre)  # the block's steps in one pass
        for i in range(n - centre):
            j = start + i
            block[centre + i, j : j + 1] = self.x[j : j + 1] + steps[i : i + 1]
        if probe:
            block[n, 0:1] = self.x[0:1] + self._steps(0, 1, -1.0)
        return block

    def _tell_gradient(self, values: list[float]) -> bool:
        """A gradient's values (in the phase's unit): the differences, the centre's repeat,
        the backward retries and the probe; True when the gradient is complete."""
        if self.wide is not None:
            if self.repeating:
                rugged = self._probe_repeated(values)
            else:
                rugged = self._noise_like(*values)
                quiet = self._second(*values) < active().quasi_newton.ROUGH_QUIET * self.wide
                if rugged and quiet:
                    self.repeating = True  # (an outlier among the probe's values?)
                    return False
            if rugged:
                self.ended = "rugged"
            self.wide, self.probed, self.repeating = None, [], False
            return False
        if self._retrying:
            return self._tell_retry(values)
        probe = values.pop() if self._with_probe() else None
        centre = self._with_centre()
        repeated = not math.isnan(self.fx)  # f(x) came before: this ask repeats it, or x0's did
        self.probing = self.centre_known = False
        if centre:
            value, values = values[0], values[1:]
            if math.isnan(self.fx):
                self.fx = self.f_start = value
            elif not repeats(value, self.fx, self.eps):  # (shifts a difference by 64 eps f / h)
                self._found_noise(self.fx, value, at_centre=True)
                return False
        start, n = self.measured, len(values)
        failed = [start + i for i, v in enumerate(values) if not math.isfinite(v)]
        if (
            not math.isfinite(self.fx)
            or len(self.retry) + len(failed) > active().quasi_newton.MAX_RETRIES
        ):
            self.ended = "non-finite values"
            return False
        self.retry += failed  # (their differences are 0 until measured backwards)
        differences = [v - self.fx if math.isfinite(v) else 0.0 for v in values]
        steps = self._steps(start, start + n)
        self.g[start : start + n] = self.space.from_host(differences) / steps
        self.measured += n
        if self.measured < self.dim or self.retry:
            return False
        complete = self._gradient_complete()
        if probe is not None and not self.done:  # (the probe's ask held the whole gradient)
            self.wide = self._ruggedness(values[0], probe, max(map(abs, differences)))
            unverified = [] if repeated else [self.fx]
            self.probed = [] if self.wide is None else [values[0], probe, *unverified]
        return complete

    @property
    def difference_step(self) -> float:
        """``h``: the largest of the phase's difference steps at its point (`_steps`)."""
        if self.caps is not None:
            return float(self.xp.max(self.xp.minimum(self._unrounded_steps(self.x), self.caps)))
        largest = float(self.xp.max(self.xp.abs(self.x)))
        return math.sqrt(self.eps) * max(largest, self._step_floor)

    @property
    def _step_floor(self) -> float:
        """The smallest ``|x_j|`` a difference step scales with: ``l / sqrt(d)``."""
        return self.length / math.sqrt(self.dim)

    @property
    def _retrying(self) -> bool:
        """Whether the pending ask measures backwards the coordinates whose forward value
        was not finite (the gradient's forward values are all in)."""
        return not self.searching and self.measured == self.dim and bool(self.retry)

    def _with_centre(self) -> bool:
        """Whether the pending ask starts with the centre (a gradient's first ask, when
        ``f(x)`` is unknown or rechecked)."""
        again = self.recheck and not self.centre_known
        return not self.searching and self.measured == 0 and (again or math.isnan(self.fx))

    def _with_probe(self) -> bool:
        """Whether the pending ask ends with ``x - h_0 e_0`` (the first gradient where the
        phase probes and the whole gradient fits one ask)."""
        whole = self.dim + 2 <= active().quasi_newton.BLOCK
        return self.probing and whole and not self.searching and self.measured == 0

    def _steps(self, start: int, stop: int, sign: float = 1.0) -> Any:
        """The difference steps of coordinates ``start:stop``, made exact in ``x``'s
        precision (``(x + h) - x``; with ``sign = -1`` the backward ones, ``(x - h) - x``)."""
        xp, x = self.xp, self.x[start:stop]
        h = self._unrounded_steps(x)
        if self.caps is not None:
            h = xp.minimum(h, self.caps[start:stop])
        return (x + sign * h) - x

    def _unrounded_steps(self, x: Any) -> Any:
        return unrounded_steps(x, self._step_floor, self.eps, self.xp)

    def _moved(self, i: int) -> tuple[int, float] | None:
        """The coordinate that row ``i`` of a gradient ask moves, and its step's factor (``-1``:
        backwards; after a failed value, `_retry_factor`); ``None`` for the centre."""
        if self._retrying:
            return self.retry[i], self._retry_factor
        if self._with_probe() and i == self.size() - 1:
            return 0, -1.0
        j = self.measured + i - int(self._with_centre())
        return (j, 1.0) if j >= self.measured else None

    def _wide_points(self) -> list[Any]:
        """``x + W h_0 e_0`` and ``x - W h_0 e_0`` (``W`` = `ROUGH_WIDTH`), or where the probe's
        values are measured again (`_probe_repeated`), ``x + h_0 e_0``, ``x - h_0 e_0`` and
        ``x`` (as many as ``probed``); new arrays."""
        if self.repeating:
            steps = [self._steps(0, 1), self._steps(0, 1, -1.0), None][: len(self.probed)]
        else:
            steps = [self._wide_step(1.0), self._wide_step(-1.0)]
        rows = []
        for step in steps:
            row = self.xp.asarray(self.x, copy=True)
            if step is not None:
                row[0:1] = self.x[0:1] + step
            rows.append(row)
        return rows

    def _probe_repeated(self, values: list[float]) -> bool:
        """Whether the values that read ruggedness (``probed``: ``f(x + h_0 e_0)``,
        ``f(x - h_0 e_0)``, and ``f(x)`` where no repeat has confirmed it) repeat when
        measured again, asked where the second difference at ``W h_0`` was below `ROUGH_QUIET`
        of the reading: ruggedness of the reading's size would show there too. Noise in a
        fraction of the calls (bbob-noisy's Cauchy outliers) reads so when one of the values
        was an outlier; it does not repeat, and the phase ends on noise (`_found_noise`)."""
        for i, (before, value) in enumerate(zip(self.probed, values, strict=False)):
            if math.isfinite(value) and not repeats(value, before, self.eps):
                self._found_noise(before, value, at_centre=i == 2)
                return False
        return True

    def _wide_step(self, sign: float) -> Any:
        """``+- W h_0``, made exact in ``x_0``'s precision."""
        width = active().quasi_newton.ROUGH_WIDTH
        x = self.x[0:1]
        return (x + sign * width * self._steps(0, 1)) - x

    def _second(self, forward: float, backward: float) -> float:
        """``|f(x + s e_0) + f(x - s e_0) - 2 f(x)|`` (``nan`` where a value failed)."""
        if not (math.isfinite(forward) and math.isfinite(backward)):
            return math.nan
        return abs(forward + backward - 2.0 * self.fx)

    def _ruggedness(self, forward: float, backward: float, first: float) -> float | None:
        """The ruggedness the probe reads, the larger of its second difference and the
        largest first difference ``first``, where ``f`` is rugged at the differences' scale:
        the second difference ``f(x + h e_0) + f(x - h e_0) - 2 f(x)`` above `ROUGH_FLOOR` eps
        ``|f|`` (a smooth ``f`` gives ``h^2 f''``, about eps ``|f|``) and above `ROUGH_SHARE`
        of ``first`` (a smooth ``f`` gives ``h f'' / f'`` of it, about ``sqrt(eps)``): the
        gradient then reads the ruggedness, not a slope (Moré and Wild's noise estimate at
        its smallest; theory page, *Mild noise at small d*). ``None`` where it is not."""
        rules = active().quasi_newton
        second = self._second(forward, backward)
        scale = max(abs(forward), abs(backward), abs(self.fx))
        rough = second > rules.ROUGH_FLOOR * self.eps * scale and second > rules.ROUGH_SHARE * first
        return max(second, first) if rough else None

    def _noise_like(self, forward: float, backward: float) -> bool:
        """Whether the ruggedness the probe read (``wide``, the larger of its second and first
        differences) is noise-like: the second difference at ``W h`` (``W`` = `ROUGH_WIDTH`)
        at most `ROUGH_GROWTH` times it. Noise, a solver's tolerance, keeps its amplitude at
        every step; a function rugged at every scale (Katsuura's) grows with the step, about
        ``W`` times, and a smooth ``f`` at a stationary point ``W^2`` times (theory page,
        *Mild noise at small d*, *The probe*)."""
        return self._second(forward, backward) <= active().quasi_newton.ROUGH_GROWTH * self.wide

    @property
    def _retry_factor(self) -> float:
        """The step, in ``h_j``, at which the pending retry ask measures its coordinates:
        ``-1``, then ``1/2``, ``-1/2``, ``1/4``, ``-1/4`` where the values failed again."""
        k = self.retried
        return (-1.0) ** (k + 1) * 0.5 ** ((k + 1) // 2)

    def _tell_retry(self, values: list[float]) -> bool:
        """The values of a retry ask (at ``x + c h_j e_j``, ``c`` = `_retry_factor`) of the
        coordinates ``j`` whose forward value failed: their differences; the coordinates that
        failed again are asked again, and the phase ends where `RETRY_ASKS` asks failed."""
        factor, failed = self._retry_factor, []
        for j, v in zip(self.retry, values, strict=True):
            if math.isfinite(v):
                step = self._steps(j, j + 1, factor)
                self.g[j : j + 1] = self.space.from_host([v - self.fx]) / step
            else:
                failed.append(j)
        self.retry, self.retried = failed, self.retried + 1
        if failed and self.retried >= active().quasi_newton.RETRY_ASKS:
            self.ended = "non-finite values"
            return False
        if failed:
            return False
        self.retried = 0
        return self._gradient_complete()
