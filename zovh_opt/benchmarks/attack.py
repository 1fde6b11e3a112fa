"""attack: black-box adversarial attack on a small CNN, iterations to success per method.

The paper's Table 1 (Sec. 6.3, Appx. F.3) at MNIST's dimension ``d = 784``: a CNN of the
paper's shape trained in seconds on scikit-learn's bundled digits (MNIST cannot be downloaded
here), a targeted margin loss in an l-infinity box of 0.2, the paper's settings and each
method's best learning rate, 10 seeds. Needs PyTorch and scikit-learn. The protocol in full:
``docs/benchmarks/paper-experiments.md``, *Black-box adversarial attack*.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from .._methods import METHODS
from ._common import Report, pyplot, run_jobs

NAME = "attack"
SIDE = 28
EPSILON = 0.2
LEARNING_RATES = [0.01, 0.02, 0.05, 0.1]
CONTENDERS = {
    "zo-sgd": ("zo-sgd", {"n_directions": 3}),
    "hizoo": ("hizoo", {"n_directions": 1, "hessian_smoothing": 1e-8}),
    "zoar N=4": ("zoar", {"n_directions": 3, "history": 4}),
    "zovh N=1": ("zovh", {"n_directions": 3, "history": 1, "regularization": 0.1}),
    "zovh N=4": ("zovh", {"n_directions": 3, "history": 4, "regularization": 0.1}),
}
PAPER = {  # Table adversarial: iterations (mean ± std over 10 runs)
    "zo-sgd": "1629 ± 610",
    "hizoo": "1045 ± 305",
    "zoar N=4": "538 ± 113",
    "zovh N=1": "536 ± 133",
    "zovh N=4": "403 ± 76",
}


def network() -> Any:
    """Two convolutional and two fully connected layers, for 28 x 28 grey images."""
    from torch import nn

    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 64),
        nn.ReLU(),
        nn.Linear(64, 10),
    )


def digits() -> tuple[Any, Any, Any, Any]:
    """``load_digits`` upsampled to 28 x 28 in [0, 1], split 75/25 (fixed)."""
    import torch
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    data = load_digits()
    images = torch.tensor(data.images / 16.0, dtype=torch.float32)[:, None]
    images = torch.nn.functional.interpolate(images, size=(SIDE, SIDE), mode="bilinear")
    images = images.clamp(0.0, 1.0).reshape(len(images), -1).numpy()
    return train_test_split(images, data.target, test_size=0.25, random_state=0)


def train(epochs: int, seed: int = 0) -> tuple[dict[str, Any], float, Any, Any]:
    """Train the CNN; return its weights, test accuracy and the test set."""
    import torch

    torch.manual_seed(seed)
    X_train, X_test, y_train, y_test = digits()
    model = network()
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    X = torch.tensor(X_train).reshape(-1, 1, SIDE, SIDE)
    y = torch.tensor(y_train)
    for _ in range(epochs):
        order = torch.randperm(len(X))
        for batch in order.split(64):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(X[batch]), y[batch])
            loss.backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        predicted = model(torch.tensor(X_test).reshape(-1, 1, SIDE, SIDE)).argmax(1).numpy()
    return model.state_dict(), float(np.mean(predicted == y_test)), X_test, y_test


class MarginLoss:
    """The attack objective on perturbations, one per row (``vectorized``)."""

    def __init__(self, weights: dict[str, Any], image: np.ndarray, target: int) -> None:
        import torch

        self.torch = torch
        self.model = network()
        self.model.load_state_dict(weights)
        self.model.eval()
        self.image = torch.tensor(image)
        self.target = int(target)

    def __call__(self, deltas: np.ndarray) -> np.ndarray:
        torch = self.torch
        delta = torch.tensor(np.atleast_2d(deltas), dtype=torch.float32)
        x = (self.image + delta.clamp(-EPSILON, EPSILON)).clamp(0.0, 1.0)
        with torch.no_grad():
            logp = torch.log_softmax(self.model(x.reshape(-1, 1, SIDE, SIDE)), dim=1)
        target = logp[:, self.target].clone()
        logp[:, self.target] = -torch.inf
        return (logp.max(dim=1).values - target).double().numpy()


def attack(job: tuple[str, float, int, dict[str, Any], np.ndarray, int, int]) -> int:
    """Iterations until the iterate fools the model (``max_iterations + 1`` if never)."""
    label, lr, seed, weights, image, target, max_iterations = job
    loss = MarginLoss(weights, image, target)
    method, options = CONTENDERS[label]
    opt = METHODS[method](
        np.zeros(image.shape[0]), rng=seed, learning_rate=lr, smoothing=0.5, **options
    )
    for it in range(1, max_iterations + 1):
        opt.tell(loss(opt.ask()))
        if loss(opt.x)[0] < 0:
            return it
    return max_iterations + 1


def settings(quick: bool) -> dict[str, Any]:
    return {
        "epochs": 4 if quick else 10,
        "seeds": 3 if quick else 10,
        "max_iterations": 1500 if quick else 5000,
        "learning_rates": LEARNING_RATES,
        "smoothing": 0.5,
        "epsilon": EPSILON,
        "contenders": CONTENDERS,
    }


def run(args: argparse.Namespace) -> int:
    s = settings(args.quick)
    report = Report(args, NAME, "Black-box adversarial attack")
    weights, accuracy, X_test, y_test = train(s["epochs"])
    chosen, targets = _images_and_targets(weights, X_test, y_test, s["seeds"])
    iters = _attacks(s, weights, X_test, chosen, targets, args.jobs)
    table = _table(report, s, iters, accuracy, len(y_test))
    _plot(report, table)
    data = {
        "accuracy": accuracy,
        "images": chosen.tolist(),
        "targets": targets.tolist(),
        "iterations": {
            label: {f"{lr:g}": v.tolist() for lr, v in table[label][2].items()}
            for label in CONTENDERS
        },
    }
    path = report.write(s, data)
    print(path.read_text())
    return 0


def _images_and_targets(weights: Any, X_test: Any, y_test: Any, seeds: int) -> tuple:
    """One correctly classified test image per seed, and a target class other than its own."""
    # each seed attacks a different correctly classified test image, towards another class
    import torch

    with torch.no_grad():
        model = network()
        model.load_state_dict(weights)
        model.eval()
        predicted = model(torch.tensor(X_test).reshape(-1, 1, SIDE, SIDE)).argmax(1).numpy()
    correct = np.nonzero(predicted == y_test)[0]
    rng = np.random.default_rng(0)
    chosen = rng.choice(correct, size=seeds, replace=False)
    targets = (y_test[chosen] + rng.integers(1, 10, size=seeds)) % 10
    return chosen, targets


def _attacks(s: dict, weights: Any, X_test: Any, chosen: Any, targets: Any, n_jobs: int) -> dict:
    """Iterations to success, by (method, learning rate, seed)."""
    jobs = [
        (
            label,
            lr,
            seed,
            weights,
            X_test[chosen[seed]],
            int(targets[seed]),
            s["max_iterations"],
        )
        for label in CONTENDERS
        for lr in LEARNING_RATES
        for seed in range(s["seeds"])
    ]
    results = run_jobs(attack, jobs, n_jobs, NAME)
    iters = {(j[0], j[1], j[2]): r for j, r in zip(jobs, results, strict=True)}

    return iters


def _table(report: Report, s: dict, iters: dict, accuracy: float, n_test: int) -> dict:
    """Each method at its best rate: the table; returns (best rate, its runs, all) by method."""
    table = {}
    for label in CONTENDERS:
        by_lr = {
            lr: np.array([iters[label, lr, k] for k in range(s["seeds"])], dtype=float)
            for lr in LEARNING_RATES
        }
        best = min(LEARNING_RATES, key=lambda lr: by_lr[lr].mean())
        table[label] = (best, by_lr[best], by_lr)
    base, base_median = table["zo-sgd"][1].mean(), np.median(table["zo-sgd"][1])
    rows = []
    for label, (best, its, _) in table.items():
        failed = int(np.sum(its > s["max_iterations"]))
        rows.append(
            [
                label,
                f"{best:g}",
                f"{its.mean():.0f} ± {its.std():.0f}",
                f"{base / its.mean():.2f}x",
                f"{np.median(its):.0f}",
                f"{base_median / np.median(its):.2f}x",
                f"{s['seeds'] - failed}/{s['seeds']}",
                PAPER[label],
            ]
        )
    report.text(
        f"CNN test accuracy {accuracy:.3f} on {n_test} held-out digits (28 x 28, upsampled "
        f"from 8 x 8; d = {SIDE * SIDE}). l-infinity box {EPSILON}, mu = {s['smoothing']}, "
        f"K = 3 (HiZOO: 1 direction, 3 evaluations), lambda = 0.1; {s['seeds']} seeds, each a "
        "different image and target class; a run that has not succeeded after "
        f"{s['max_iterations']} iterations "
        f"counts as {s['max_iterations'] + 1}. Learning rate: the value of "
        f"{LEARNING_RATES} with the fewest mean iterations."
    )
    report.table(
        [
            "method",
            "lr",
            "iterations (mean ± std)",
            "speedup",
            "median",
            "speedup (median)",
            "succeeded",
            "paper (MNIST)",
        ],
        rows,
        "Iterations until the perturbed image is misclassified",
    )

    return table


def _plot(report: Report, table: dict) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.boxplot([table[label][1] for label in CONTENDERS], whis=1.5)
    ax.set_xticks(range(1, len(CONTENDERS) + 1), list(CONTENDERS))
    ax.set_ylabel("iterations to success")
    ax.set_title(f"attack on a digits CNN, d = {SIDE * SIDE}")
    fig.tight_layout()
    report.figure(fig)
