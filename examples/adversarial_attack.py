"""A black-box adversarial attack: change a classifier's answer from its outputs alone.

A small CNN is trained on scikit-learn's handwritten digits (upsampled to 28 x 28, d = 784).
The attacker sees only the model's output probabilities. ZoVH searches a perturbation
``delta``, each pixel within +-0.2, that makes the model predict a chosen target class: it
minimises the margin loss max_{j != t} log p_j - log p_t, which is negative exactly when the
target wins. ``ftarget`` stops the run at the first query that fools the model. This is the
paper's attack experiment for one image (``python -m zovh_opt.benchmarks attack`` runs all of
it).

Run:  python examples/adversarial_attack.py            (3 images, about 8 s)
      python examples/adversarial_attack.py --quick    (1 image, about 10 s: mostly training)
Needs PyTorch and scikit-learn; without them it says so and exits with status 0.
"""

import argparse
import importlib.util

import numpy as np

import zovh_opt

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--quick", action="store_true", help="attack one image")
args = parser.parse_args()
missing = [m for m in ("torch", "sklearn") if importlib.util.find_spec(m) is None]
if missing:
    print(f"This example needs {' and '.join(missing)}: pip install torch scikit-learn")
    raise SystemExit(0)

from zovh_opt.benchmarks.attack import EPSILON, MarginLoss, train  # noqa: E402 (needs torch)

images = 1 if args.quick else 3
epochs, maxiter = 10, 3000

weights, accuracy, X_test, y_test = train(epochs)
print(f"CNN trained for {epochs} epochs on the digits: test accuracy {accuracy:.3f}\n")
rng = np.random.default_rng(0)
for index in rng.permutation(len(X_test))[:images]:
    image, label = X_test[index], int(y_test[index])
    target = int(rng.choice([c for c in range(10) if c != label]))
    loss = MarginLoss(weights, image, target)
    res = zovh_opt.minimize(
        loss,
        np.zeros(image.shape[0]),
        rng=0,
        vectorized=True,
        options={
            "learning_rate": 0.01,  # the best of the paper's grid for ZoVH here
            "smoothing": 0.5,
            "ftarget": 0.0,  # stop at the first perturbation the model falls for
            "maxiter": maxiter,
        },
    )
    delta = np.clip(res.x, -EPSILON, EPSILON)
    fooled = bool(loss(res.x)[0] < 0)
    print(
        f"image {index:3d}: digit {label} -> target {target}: "
        f"{'fooled' if fooled else 'not fooled'} after {res.nfev} queries "
        f"({res.nit} iterations), max |delta| = {np.abs(delta).max():.2f}"
    )
