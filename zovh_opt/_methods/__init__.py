"""The optimizers, one ask/tell object per method, and the registry ``minimize`` reads."""

from ._base import AskTellMethod
from .zo_sgd import ZOSGD
from .zovh import ZoVH

METHODS: dict[str, type[AskTellMethod]] = {cls.name: cls for cls in (ZoVH, ZOSGD)}

__all__ = ["METHODS", "AskTellMethod", "ZOSGD", "ZoVH"]
