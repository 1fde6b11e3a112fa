"""How the points of one iteration get evaluated: serially, vectorized, or by workers.

Each mode turns into one function ``evaluate(out, point, points)``. ``out`` holds one entry per
point of the pending ask, ``None`` where no value is known yet; ``evaluate`` fills those in as
the values arrive, so an interrupted or failed iteration keeps every value it obtained.
``point(i)`` makes point ``i`` as a new array (each call of ``fun`` gets its own, which it may
modify or keep, as in SciPy) and ``points(indices)`` those rows stacked, for ``vectorized``.
"""

from __future__ import annotations

import numbers
import os
import pickle
import signal
from collections.abc import Callable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from .._arrays.backend import real_scalar, to_host_floats

__all__ = ["evaluator"]

Evaluate = Callable[[list, Callable[[int], Any], Callable[[list[int]], Any]], None]


class _Call:
    """``fun`` with its extra arguments bound; picklable when ``fun`` is."""

    def __init__(self, fun: Callable[..., Any], args: tuple) -> None:
        self.fun, self.args = fun, args

    def __call__(self, x: Any) -> Any:
        return self.fun(x, *self.args)


@contextmanager
def evaluator(
    fun: Callable[..., Any], args: tuple, workers: Any, vectorized: bool
) -> Iterator[Evaluate]:
    """Yield ``evaluate(out, point, points)`` for the chosen mode; shut a process pool down on
    exit without waiting for evaluations an interrupt abandoned.

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
        yield lambda out, point, points: _evaluate_batch(call, out, points)
        return
    if workers is None or (_is_int(workers) and workers == 1):
        yield lambda out, point, points: _evaluate_mapped(map, call, out, point)
        return
    if callable(workers):
        yield lambda out, point, points: _evaluate_mapped(workers, call, out, point)
        return
    if not (_is_int(workers) and (workers == -1 or workers >= 2)):
        raise ValueError(
            f"workers must be None, -1, an integer >= 1 or a map-like callable, got {workers!r}"
        )
    try:
        pickle.dumps(call)
    except Exception as error:
        raise TypeError(
            f"workers={workers} runs fun in other processes, so fun and args must be "
            f"picklable, and they are not ({type(error).__name__}: {error}). Define fun at "
            "the top level of a module (not a lambda or a local function), or pass a map-like "
            "callable as workers."
        ) from error
    size = (os.cpu_count() or 1) if workers == -1 else int(workers)
    pool = ProcessPoolExecutor(max_workers=size, initializer=_ignore_interrupts)
    abandoned = [False]
    try:
        yield lambda out, point, points: _evaluate_in_pool(pool, size, call, out, point, abandoned)
    finally:
        pool.shutdown(wait=not abandoned[0], cancel_futures=True)


def _missing(out: list) -> list[int]:
    return [i for i, v in enumerate(out) if v is None]


def _evaluate_batch(call: _Call, out: list, points: Callable[[list[int]], Any]) -> None:
    todo = _missing(out)
    values = to_host_floats(call(points(todo)), "the values fun returns with vectorized=True")
    if len(values) != len(todo):
        raise ValueError(
            f"with vectorized=True, fun must return {len(todo)} values (one per row), "
            f"got {len(values)}"
        )
    for i, value in zip(todo, values, strict=True):
        out[i] = value


def _evaluate_mapped(mapper: Callable[..., Any], call: _Call, out: list, point: Any) -> None:
    todo = _missing(out)
    mapped = mapper(call, (point(i) for i in todo))
    if (
        mapped is None
        or isinstance(mapped, (Mapping, AbstractSet))
        or not hasattr(mapped, "__iter__")
    ):
        raise TypeError(
            "workers must be a map-like callable that returns the values in the order of the "
            f"points (an iterable), got {type(mapped).__name__} from {mapper!r}"
        )
    results = iter(mapped)
    for k, i in enumerate(todo):
        try:
            value = next(results)
        except StopIteration:
            raise ValueError(
                f"workers returned {k} values for {len(todo)} points; a map-like callable must "
                "return one value per point, in order"
            ) from None
        out[i] = real_scalar(value, "the value returned by fun")


def _evaluate_in_pool(
    pool: ProcessPoolExecutor, size: int, call: _Call, out: list, point: Any, abandoned: list
) -> None:
    """Evaluate the missing points with at most ``size`` of them submitted at a time (the
    rest wait here, not in the pool's queue, so that they can be cancelled); keep every value
    that arrives. On an interrupt, submit no more and wait for the running evaluations (about
    one evaluation time); on a second interrupt, stop waiting and leave them unobserved."""
    todo = iter(_missing(out))
    running: dict[Future, int] = {}

    def submit_next() -> None:
        i = next(todo, None)
        if i is not None:
            running[pool.submit(call, point(i))] = i

    try:
        for _ in range(size):
            submit_next()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                i = running.pop(future)
                out[i] = real_scalar(future.result(), "the value returned by fun")
                submit_next()
    except KeyboardInterrupt:
        try:
            wait(running)
        except KeyboardInterrupt:
            abandoned[0] = True
        _collect(running, out)
        raise
    except BaseException:
        abandoned[0] = True
        _collect(running, out)
        raise


def _collect(running: dict[Future, int], out: list) -> None:
    """Keep the values of the evaluations that have finished well."""
    for future, i in running.items():
        if future.done() and not future.cancelled() and future.exception() is None:
            try:
                out[i] = real_scalar(future.result(), "the value returned by fun")
            except (TypeError, ValueError):
                pass


def _ignore_interrupts() -> None:
    """Workers ignore SIGINT: a Ctrl-C reaches the main process, which decides what to wait
    for, instead of killing workers halfway through an evaluation."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)
