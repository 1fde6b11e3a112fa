"""A noisy objective: what the default does with it, and what ``noisy=False`` would report.

The objective is a quadratic in d = 500 whose every value carries Gaussian noise (a stand-in for
a Monte-Carlo simulation or a lab measurement). The default ``noisy="auto"`` evaluates x0 twice,
sees two different values, and treats the objective as noisy: ``fun`` is a fresh mean at the
returned point, with its standard error and the noise's standard deviation. ``noisy=False``
reports the lowest value seen instead, biased low by the noise. The script prints how far each
reported value is from the true f at the reported point.

Run:  python examples/noisy_objective.py            (about 3 s)
      python examples/noisy_objective.py --quick    (about 1 s, for CI)
"""

import argparse

import numpy as np

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--sigma", type=float, default=1.0, help="noise standard deviation")
parser.add_argument("--quick", action="store_true", help="a short run")
args = parser.parse_args()
d, maxfev = (100, 3_000) if args.quick else (500, 30_000)


def true_f(x: np.ndarray) -> float:
    return float(x @ x)


def make_noisy(seed: int):
    """A fresh noisy objective; each call adds Gaussian noise of standard deviation sigma."""
    noise = np.random.default_rng(seed)
    return lambda x: true_f(x) + args.sigma * noise.standard_normal()


x0 = np.ones(d)
print(f"|x|^2 in d = {d}, noise sigma = {args.sigma}, f(x0) = {true_f(x0):g}\n")
for noisy in ("auto", False):
    res = zovh_opt.minimize(make_noisy(1), x0, rng=0, options={"maxfev": maxfev, "noisy": noisy})
    truth = true_f(res.x)
    line = f"noisy={noisy!s:5}  reported fun = {res.fun:8.4f}   true f(x) = {truth:8.4f}   "
    line += f"error = {res.fun - truth:+.4f}"
    if noisy == "auto":
        line += f"  (standard error {res.fun_std_error:.4f}, noise_std {res.noise_std:.3f})"
    print(line)
    if noisy == "auto":
        print(f"{'':13}{res.message}")
print(
    "\nWith noisy=False fun is the lowest noisy value seen, biased low; by default the run"
    "\nnotices the noise and fun is the mean of fresh evaluations at x, with its standard error."
)
