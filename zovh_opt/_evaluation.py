"""How the points of one iteration get evaluated: serially, vectorized, or by workers.

Each mode turns into one function ``evaluate(points, out)`` that appends the values, as Python
floats, to ``out`` as they arrive, so that an interrupted iteration keeps what it evaluated.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from ._backend import real_scalar, to_host_floats

__all__ = ["evaluator"]


class _Call:
    """``fun`` with its extra arguments bound; picklable when ``fun`` is."""

    def __init__(self, fun: Callable[..., Any], args: tuple) -> None:
        self.fun, self.args = fun, args

    def __call__(self, x: Any) -> Any:
        return self.fun(x, *self.args)


@contextmanager
def evaluator(
    fun: Callable[..., Any], args: tuple, workers: Any, vectorized: bool
) -> Iterator[Callable[[Any, list[float]], None]]:
    """Yield ``evaluate(points, out)`` for the chosen mode; shut a process pool down on exit.

    Parameters
    ----------
    fun, args
        The objective and its extra arguments.
    workers : None, int or map-like callable
        ``None`` or 1: serial; an int >= 2 or -1: a process pool of that size (-1: one worker
        per CPU); a callable ``workers(func, iterable)`` used like ``map``.
    vectorized : bool
        Call ``fun`` once with all points stacked in rows; it returns ``(n_points,)`` values.
    """
    call = _Call(fun, args)
    if not isinstance(vectorized, bool):
        raise TypeError(f"vectorized must be True or False, got {vectorized!r}")
    if vectorized:
        if workers is not None:
            raise ValueError("workers cannot be combined with vectorized=True")

        def evaluate_batch(points: Any, out: list[float]) -> None:
            n = points.shape[0]
            values = to_host_floats(call(points), "the values fun returns with vectorized=True")
            if len(values) != n:
                raise ValueError(
                    f"with vectorized=True, fun must return {n} values (one per row), "
                    f"got {len(values)}"
                )
            out.extend(values)

        yield evaluate_batch
        return

    pool = None
    if workers is None or (_is_int(workers) and workers == 1):
        mapper: Callable[..., Any] = map
    elif callable(workers):
        mapper = workers
    elif _is_int(workers) and (workers == -1 or workers >= 2):
        pool = ProcessPoolExecutor(max_workers=None if workers == -1 else int(workers))
        mapper = pool.map
    else:
        raise ValueError(
            f"workers must be None, -1, an integer >= 1 or a map-like callable, got {workers!r}"
        )

    def evaluate_rows(points: Any, out: list[float]) -> None:
        rows = [points[i, ...] for i in range(points.shape[0])]
        for value in mapper(call, rows):
            out.append(real_scalar(value, "the value returned by fun"))

    try:
        yield evaluate_rows
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
