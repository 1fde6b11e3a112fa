"""The optimizers, one ask/tell object per method, and the registry ``minimize`` reads."""

from ._base import AskTellMethod, GradientStepMethod
from .hizoo import HiZOO
from .mezo import MeZO
from .zo_sgd import ZOSGD
from .zoar import ZOAR
from .zovh import ZoVH

METHODS: dict[str, type[AskTellMethod]] = {
    cls.name: cls for cls in (ZoVH, ZOSGD, ZOAR, HiZOO, MeZO)
}

__all__ = [
    "METHODS",
    "AskTellMethod",
    "GradientStepMethod",
    "HiZOO",
    "MeZO",
    "ZOAR",
    "ZOSGD",
    "ZoVH",
]
