"""Compiled (Numba) rigid-body kernels over a packed Pinocchio model.

Python's per-call overhead dominates ``pin.aba`` for small robots (about 2 µs per call, of
which the C++ work is a fraction). These kernels run inside other ``@njit`` code (a compiled
integrator loop) and equal Pinocchio's results to 1e-12; Pinocchio stays the reference.

.. code-block:: python

    from pinext.compiled import aba, pack

    pm = pack(model)  # raises UnsupportedModel for joints the kernels do not support
    aba(pm, q, v, tau, a_out)  # a_out = pin.aba(model, data, q, v, tau)
"""

from .aba import aba, joint_transforms
from .model import JOINT_CODES, PackedModel, pack
from .path import METHODS, compiled_events, enabled, phase_kernel, solve

__all__ = [
    "JOINT_CODES",
    "METHODS",
    "PackedModel",
    "aba",
    "compiled_events",
    "enabled",
    "joint_transforms",
    "pack",
    "phase_kernel",
    "solve",
]
