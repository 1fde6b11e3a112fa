"""Threads for the CPU's draws of direction rows.

NumPy's generators release the GIL while they fill an array, so rows that are random streams
of their own (`zovh_opt._arrays.backend.RowStreams`) can be drawn side by side, each task with a
generator of its own: the bits are those of the rows drawn one after the other, whatever the
number of threads. Tasks go to a queue that the pool's threads take from; a caller that waits
for a batch (`Batch.finish`) takes from the queue too, so work it does between starting a
batch and finishing it (the step's products of the span drawn before) overlaps the draws,
and it never idles while draws remain. The draws use as many threads as the process may use
cores, at most ``OMP_NUM_THREADS`` where that is set (the variable that already limits
NumPy's BLAS; the benchmarks that run several jobs at once set it to 1).
"""

from __future__ import annotations

import collections
import os
import threading
from collections.abc import Callable, Sequence

__all__ = ["MIN_NUMBERS_PER_THREAD", "Batch", "groups", "run", "threads"]

# A thread's share of a draw is at least this many numbers (about 0.3 ms of draws on the CI
# machine class, against some 30 us to hand a task to a thread and wait for it).
MIN_NUMBERS_PER_THREAD = 1 << 15
MAX_THREADS = 16

_cv = threading.Condition()
_queue: collections.deque = collections.deque()  # (batch, task), oldest first
_workers: list[threading.Thread] = []
_threads: int | None = None


def threads() -> int:
    """How many threads the draws use, the caller's included (1: the caller's alone)."""
    global _threads
    if _threads is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        try:
            limit = int(os.environ.get("OMP_NUM_THREADS", "") or cores)
        except ValueError:  # OpenMP's lists ("4,2"): their first level
            limit = int(os.environ["OMP_NUM_THREADS"].split(",")[0] or cores)
        _threads = max(1, min(cores, limit, MAX_THREADS))
    return _threads


def groups(items: int, numbers_each: int) -> list[range]:
    """Items ``0 .. items - 1`` of ``numbers_each`` numbers each, in contiguous groups, one a
    thread: as many as `threads` allows with `MIN_NUMBERS_PER_THREAD` numbers each or more."""
    k = min(threads(), items, max(1, items * numbers_each // MIN_NUMBERS_PER_THREAD))
    bounds = [items * g // k for g in range(k + 1)]
    return [range(bounds[g], bounds[g + 1]) for g in range(k)]


class Batch:
    """Tasks handed to the pool's threads now (`start`), finished later by the caller."""

    def __init__(self, tasks: Sequence[Callable[[], None]]) -> None:
        self._left = len(tasks)
        self._error: BaseException | None = None
        self._tasks = list(tasks)

    def start(self) -> Batch:
        """Queue the tasks (run them at once, in order, where there is one thread)."""
        tasks, self._tasks = self._tasks, []
        if threads() == 1 or len(tasks) <= 1:
            for task in tasks:
                self._run(task)
            return self
        with _cv:
            _ensure_workers()
            _queue.extend((self, task) for task in tasks)
            _cv.notify_all()
        return self

    def finish(self) -> None:
        """Return when every task has ended, running queued tasks meanwhile (any batch's,
        oldest first); raise the first error a task raised."""
        while True:
            with _cv:
                if self._left == 0:
                    break
                if not _queue:
                    _cv.wait()
                    continue
                batch, task = _queue.popleft()
            batch._run(task)
            del batch, task
        if self._error is not None:
            raise self._error

    def _run(self, task: Callable[[], None]) -> None:
        try:
            task()
        except BaseException as exc:  # the waiting caller raises it
            with _cv:
                self._error = self._error if self._error is not None else exc
        with _cv:
            self._left -= 1
            if self._left == 0:
                _cv.notify_all()


def run(tasks: Sequence[Callable[[], None]]) -> None:
    """Run ``tasks`` on the caller's and the pool's threads; return when all have ended."""
    Batch(tasks).start().finish()


def _ensure_workers() -> None:  # under _cv
    while len(_workers) < threads() - 1:
        worker = threading.Thread(target=_work, name="zovh-draws", daemon=True)
        worker.start()
        _workers.append(worker)


def _work() -> None:
    while True:
        with _cv:
            while not _queue:
                _cv.wait()
            batch, task = _queue.popleft()
        batch._run(task)
        del batch, task  # the task's arrays are the caller's to free


def _forget() -> None:  # a forked child has none of its parent's threads
    global _cv, _queue, _workers, _threads
    _cv, _queue, _workers, _threads = threading.Condition(), collections.deque(), [], None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)
