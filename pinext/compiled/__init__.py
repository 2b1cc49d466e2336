"""Compiled (Numba) rigid-body kernels over a packed Pinocchio model.

Python's per-call overhead dominates ``pin.aba`` for small robots (about 2 µs per call, of
which the C++ work is a fraction). These kernels run inside other ``@njit`` code (a compiled
integrator loop) and equal Pinocchio's results to 1e-12; Pinocchio stays the reference.

.. code-block:: python

    from pinext.compiled import aba, pack

    pm = pack(model)  # raises UnsupportedModel for joints the kernels do not support
    aba(pm, q, v, tau, a_out)  # a_out = pin.aba(model, data, q, v, tau)
    momentum_rhs(pm, q, p, tau, v_out, p_dot_out)  # Celentano (2008): v = M⁻¹p and ṗ
    crba(pm, q, m_out)  # m_out = pin.crba(model, data, q), both triangles
"""

from .aba import aba, aba_from_transforms, joint_transforms, minv_from_transforms, minv_solve
from .crba import crba, crba_from_transforms, ltdl, ltdl_solve
from .events import compiled_events, phase_events
from .model import JOINT_CODES, PackedModel, pack
from .momentum import momentum_rhs, momentum_rhs_crba
from .path import METHODS, enabled, phase_kernel, solve

__all__ = [
    "JOINT_CODES",
    "METHODS",
    "PackedModel",
    "aba",
    "aba_from_transforms",
    "compiled_events",
    "crba",
    "crba_from_transforms",
    "enabled",
    "joint_transforms",
    "ltdl",
    "ltdl_solve",
    "minv_from_transforms",
    "minv_solve",
    "momentum_rhs",
    "momentum_rhs_crba",
    "pack",
    "phase_events",
    "phase_kernel",
    "solve",
]
