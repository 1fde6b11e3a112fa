"""Items 3 and 4 of the driver issue: vectorized evaluation, process pools, map-likes, Dask."""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

import zovh_opt
from zovh_opt.problems import rosenbrock

D = 40
OPTIONS = {"maxiter": 20, "learning_rate": 1e-5}


def sphere(x):
    return float(x @ x)


def sphere_at_barrier(x, barrier):
    """Passes only when another evaluation runs at the same time (else BrokenBarrierError)."""
    barrier.wait()
    return float(x @ x)


def slow_sphere(x, log, seconds):
    """The sphere after ``seconds`` of work; each value is appended to the file ``log``."""
    time.sleep(seconds)
    value = float(x @ x)
    with open(log, "a") as file:
        file.write(f"{value!r}\n")
    return value


def test_vectorized_calls_fun_once_per_iteration_with_all_points(xp):
    shapes = []

    def batched(X):  # row by row: a GPU library's batched sum may round otherwise
        shapes.append(tuple(X.shape))
        return xp.stack([rosenbrock(X[i, ...]) for i in range(X.shape[0])])

    x0 = xp.zeros(D, dtype=xp.float64)
    serial = zovh_opt.minimize(rosenbrock, x0, rng=3, options=OPTIONS)
    res = zovh_opt.minimize(batched, x0, rng=3, vectorized=True, options=OPTIONS)
    assert shapes == [(3, D)] * 20 + [(1, D)]  # 20 iterations and the final evaluation
    assert xp.all(res.x == serial.x) and res.fun == serial.fun and res.nfev == serial.nfev


def test_vectorized_may_return_a_list():
    res = zovh_opt.minimize(
        lambda X: [float(r @ r) for r in X], np.ones(D), rng=0, vectorized=True, options=OPTIONS
    )
    ref = zovh_opt.minimize(sphere, np.ones(D), rng=0, options=OPTIONS)
    assert np.array_equal(res.x, ref.x)


def test_map_like_gets_one_iteration_at_a_time():
    batches = []

    def recording_map(func, iterable):
        items = list(iterable)
        batches.append(len(items))
        return [func(x) for x in items]

    res = zovh_opt.minimize(sphere, np.ones(D), rng=3, workers=recording_map, options=OPTIONS)
    ref = zovh_opt.minimize(sphere, np.ones(D), rng=3, options=OPTIONS)
    assert batches == [3] * 20 + [1]
    assert np.array_equal(res.x, ref.x) and res.fun == ref.fun


def test_thread_pool_map_evaluates_concurrently():
    from concurrent.futures import ThreadPoolExecutor

    barrier = threading.Barrier(2, timeout=30)
    with ThreadPoolExecutor(2) as pool:
        res = zovh_opt.minimize(
            sphere_at_barrier,
            np.ones(D),
            args=(barrier,),
            rng=0,
            workers=pool.map,
            options={**OPTIONS, "n_directions": 4, "final_evaluations": 2},
        )
    assert res.nfev == 20 * 4 + 2


def test_process_pool_evaluates_in_parallel_and_matches_serial():
    with multiprocessing.Manager() as manager:
        barrier = manager.Barrier(2, timeout=60)
        res = zovh_opt.minimize(
            sphere_at_barrier,
            np.ones(D),
            args=(barrier,),
            rng=5,
            workers=2,
            options={**OPTIONS, "n_directions": 4, "final_evaluations": 2},
        )
    ref = zovh_opt.minimize(
        sphere, np.ones(D), rng=5, options={**OPTIONS, "n_directions": 4, "final_evaluations": 2}
    )
    assert np.array_equal(res.x, ref.x) and res.fun == ref.fun and res.nfev == ref.nfev


def test_workers_one_is_serial():
    res = zovh_opt.minimize(lambda x: float(x @ x), np.ones(D), rng=0, workers=1, options=OPTIONS)
    assert res.nit == 20  # a lambda cannot be pickled, so no pool was used


@pytest.mark.slow  # 4 s: in CI's slow run, out of the README's two minutes
def test_dask_local_cluster_as_map_like():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        ) as cluster,
        distributed.Client(cluster) as client,
    ):

        def dask_map(func, points):
            return client.gather(client.map(func, list(points), pure=False))

        res = zovh_opt.minimize(sphere, np.ones(D), rng=9, workers=dask_map, options=OPTIONS)
        executed = client.run(lambda dask_worker: dask_worker.state.executed_count)
    ref = zovh_opt.minimize(sphere, np.ones(D), rng=9, options=OPTIONS)
    assert sum(executed.values()) == res.nfev  # every evaluation ran on the cluster
    assert np.array_equal(res.x, ref.x) and res.fun == ref.fun and res.nfev == ref.nfev


def test_an_unpicklable_fun_with_a_process_pool_fails_at_once():
    """0.1.0 hung here: the PicklingError, then a pool shutdown that deadlocked."""
    start = time.perf_counter()
    with pytest.raises(TypeError, match="must be picklable, and they are not"):
        zovh_opt.minimize(lambda x: float(x @ x), np.ones(20), workers=2)
    assert time.perf_counter() - start < 5
    assert multiprocessing.active_children() == []  # no pool was started


@pytest.mark.parametrize("interrupts", [1, 2])
@pytest.mark.usefixtures("python_sigint")
def test_ctrl_c_with_a_process_pool_returns_what_was_evaluated(interrupts, tmp_path):
    """SIGINT to the main process only (a notebook's interrupt button), in the second
    iteration: its first two points are running, the third is queued. One interrupt cancels the
    queued one and waits for the running ones; a second stops waiting."""
    log, seconds = tmp_path / "values", 0.6
    first = 1.4  # iteration 2 runs its first two points over [1.2, 1.8] s
    timers = [
        threading.Timer(first + 0.1 * k, os.kill, (os.getpid(), signal.SIGINT))
        for k in range(interrupts)
    ]
    start = time.perf_counter()
    for timer in timers:
        timer.start()
    res = zovh_opt.minimize(
        slow_sphere,
        np.ones(D),
        args=(str(log), seconds),
        rng=0,
        workers=2,
        # 3 points per ask; x0 is not measured first
        options={"maxiter": 1000, "maxtime": 60, "curvature": "off", "noisy": False},
    )
    returned = time.perf_counter() - start
    values = [float(v) for v in log.read_text().split()]
    for timer in timers:
        timer.join()
    assert res.status == 6 and "KeyboardInterrupt" in res.message
    assert res.nfev == len(values) and res.fun == min(values)  # nothing obtained is lost
    if interrupts == 1:
        assert res.nfev == 5  # 3 + the two running ones; the queued one was cancelled
        assert returned - first < 2 * seconds  # about one evaluation time
    else:
        assert res.nfev == 3 and returned - first < seconds  # did not wait for the running ones
