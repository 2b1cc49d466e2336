"""The engine's caches of a System, kept beside it rather than in it.

A :class:`pinext.System` is the frozen assembly of a robot and its components; what the
engine derives from it to run faster (the packed model of the compiled kernels, the linear
forms of its phases, a scratch ``pin.Data``) lives here, keyed weakly by the System, and goes
when the System goes. Nothing else writes into a System.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["cache"]

_CACHES: weakref.WeakKeyDictionary[Any, dict[str, dict]] = weakref.WeakKeyDictionary()


def cache(system: Any, name: str) -> dict:
    """The engine's cache ``name`` of ``system``: a dict, empty at first, dropped with the
    System (``"compiled"``, ``"linear_forms"``, ``"phase_kernels"``, ``"chart"``)."""
    return _CACHES.setdefault(system, {}).setdefault(name, {})
