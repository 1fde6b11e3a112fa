"""Zeroth-order fine-tuning of PyTorch models in inference memory (the paper's Appx. E).

`ZoVH`, `MeZO` and `HiZOO` are ``torch.optim.Optimizer`` subclasses: ``loss =
opt.step(closure)`` calls ``closure()`` a few times under ``torch.no_grad()``, perturbing the
parameters in place along Gaussian directions drawn again from seeds, so a step needs no
gradient and no copy of the model. Guide: ``docs/user-guide/finetuning.md``.
"""

try:
    import torch as _torch  # noqa: F401
except ImportError as error:  # pragma: no cover - the package's tests run with and without torch
    raise ImportError(
        "zovh_opt.torch needs PyTorch: pip install 'zovh-opt[torch]' (or install torch as "
        "https://pytorch.org says for your platform)"
    ) from error

from ._optimizers import HiZOO, MeZO, ZerothOrderOptimizer, ZoVH

__all__ = ["HiZOO", "MeZO", "ZoVH", "ZerothOrderOptimizer"]
