"""Holding Ctrl-C back while the optimizer's state changes, so that an interrupt never leaves
half an update behind."""

from __future__ import annotations

import signal as _signal_module
import threading
from typing import Any

try:  # the C functions behind `signal`: its wrappers convert to enums, 10 us per step
    from _signal import getsignal, signal  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - other interpreters
    from signal import getsignal, signal

__all__ = ["deferred_interrupts"]

_SIGINT = int(_signal_module.SIGINT)
_DEFAULT = _signal_module.default_int_handler
_MAIN_THREAD = threading.main_thread().ident  # the thread Python delivers signals to


class deferred_interrupts:  # noqa: N801 - used like a function: ``with deferred_interrupts():``
    """Run the block to its end even if SIGINT arrives, then raise ``KeyboardInterrupt``.

    Only where Python delivers SIGINT as ``KeyboardInterrupt`` (the main thread, default
    handler); elsewhere the block runs as it is.
    """

    __slots__ = ("_previous", "_received")

    def __enter__(self) -> None:
        self._previous = None
        if threading.get_ident() != _MAIN_THREAD:
            return
        previous = getsignal(_SIGINT)
        if previous is not _DEFAULT:
            return
        self._received = False
        self._previous = previous
        signal(_SIGINT, self._hold)

    def _hold(self, signum: int, frame: Any) -> None:
        self._received = True

    def __exit__(self, *exc_info: Any) -> None:
        if self._previous is None:
            return
        signal(_SIGINT, self._previous)
        if self._received and exc_info[0] is None:
            raise KeyboardInterrupt
