"""Compiled kernels that say so when their first call compiles them.

Numba compiles a kernel at its first call in a fresh installation (seconds to tens of
seconds; later processes load it from Numba's disk cache). :class:`FirstCallNotice` wraps the
kernels of a module for their first call only, so that the wait is not silent.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

_OWN = frozenset({"_kernels", "_message", "_after", "_said", "_notice"})


class FirstCallNotice:
    """The kernels of a module (or any namespace), each wrapped for its first call only.

    A first call still running after ``after`` seconds prints ``message`` on stderr, once per
    process for this object. After its first call a kernel is stored on this object and
    called directly: no cost on later calls.

    Args:
        kernels: The module or namespace whose attributes are the kernels.
        message: The line to print.
        after: Seconds a first call may take before the line is printed.
    """

    def __init__(self, kernels: Any, message: str, after: float = 0.5) -> None:
        self._kernels, self._message, self._after = kernels, message, after
        self._said = False

    def _notice(self) -> None:
        if not self._said:
            self._said = True
            print(self._message, file=sys.stderr, flush=True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in _OWN:  # (a copy or a pickle before __init__)
            raise AttributeError(name)
        kernel = getattr(self._kernels, name)
        if not callable(kernel):
            return kernel

        def first_call(*args: Any) -> Any:
            timer = threading.Timer(self._after, self._notice)
            timer.daemon = True
            timer.start()
            try:
                return kernel(*args)
            finally:
                timer.cancel()
                setattr(self, name, kernel)

        return first_call
