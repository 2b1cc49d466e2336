"""A compliant contact layer, compiled: the contact with a model (d) environment while the tool
presses its layer (:class:`pinext.simulation.forms.Layer`; Vukobratović & Potkonjak
§20.5.3), with the laws of :mod:`pinext.simulation.forms` that the Python path's components
call too (:func:`~pinext.simulation.forms.kelvin_voigt`,
:func:`~pinext.simulation.forms.mass_acceleration`, :func:`~pinext.simulation.forms.damper_power`).

The tool point's normal row on the environment's plane (its Jacobian from
:mod:`pinext.compiled.frames` at the configuration, before the ABA that uses the force) gives
the layer's compression rate ``ẇ = ṡ_e − J v``; the layer pushes the robot and the mass with

.. math::

    F = k_c w + c_c \\dot w, \\qquad \\tau \\mathrel{+}= J^T F, \\qquad
    m_e \\ddot s_e = -k s_e - b \\dot s_e - F,

and dissipates ``b ṡ_e² + c_c ẇ²``, as :class:`pinext.contact.ContactComponent` does with
:class:`pinext.contact.deformation.SeriesCompliance` for a rigid tool.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..simulation.forms import Layer, damper_power, kelvin_voigt, mass_acceleration, series_rate
from . import frames as _frames
from .spatial import helper


class LayerWork(NamedTuple):
    """A :class:`pinext.simulation.forms.Layer` as arrays, with its workspace."""

    work: _frames.FrameWork  # the tool point's row on the plane (its env: s_e's index)
    constants: np.ndarray  # (5,) 1/m_e, k, b, k_c, c_c, or (7,) with k_t, d_t first; empty: none
    out: np.ndarray  # (2,) the layer's force F [N] and the dissipated power [W]


def layer_work(layer: Layer | None, nj: int, nv: int, index: np.ndarray) -> LayerWork:
    """The compiled form of ``layer`` on a model of nj joints and nv dofs, its state indices
    taken through ``index`` (public -> internal); :data:`NONE` for None."""
    if layer is None:
        return NONE
    block = layer.block._replace(env=index[layer.block.env])
    return LayerWork(
        _frames.work(block, nj, nv), np.array(layer.constants, dtype=float), np.zeros(2)
    )


#: No layer (the default of :class:`pinext.compiled.phase.PhaseKernel`).
NONE = LayerWork(_frames.NONE, np.zeros(0), np.zeros(2))


@helper
def press(pm, lw, y, nv, lin):
    """The layer's torques added to ``lin[:nv]``, the derivatives of its states (s_e, ṡ_e, w)
    written into lin (the part of the linear form after the torques), its force and
    dissipation into ``lw.out`` (module docstring), once
    :func:`pinext.compiled.aba.joint_transforms` has run at the state's q."""
    fw = lw.work
    rows = fw.rows
    _frames._kinematics(pm, fw)
    jac = fw.jac
    _frames.normal_row(pm, fw, rows, 0, jac, 0)
    rate = 0.0
    for c in range(nv):
        rate += jac[0, c] * y[nv + c]
    e = rows.env[0]
    s_e, sd_e, w = y[e], y[e + 1], y[e + 2]
    constants = lw.constants
    inverse_mass, k, b = constants[0], constants[1], constants[2]
    wdot = sd_e - rate
    if constants.size == 5:  # one spring and damper: the layer's, or its series with a tool
        k_c, c_c = constants[3], constants[4]
        force = kelvin_voigt(k_c, c_c, w, wdot)
        dissipated = damper_power(c_c, wdot)
    else:  # a tool and a layer both damped in series: the tool's compression w_t a state
        k_t, d_t, k_c, c_c = constants[3], constants[4], constants[5], constants[6]
        w_t = y[e + 3]
        rate_t = series_rate(k_t, d_t, k_c, c_c, w, w_t, wdot)
        force = kelvin_voigt(k_t, d_t, w_t, rate_t)
        dissipated = damper_power(d_t, rate_t) + damper_power(c_c, wdot - rate_t)
        lin[e + 3 - nv] = rate_t
    for c in range(nv):
        lin[c] += jac[0, c] * force
    lin[e - nv] = sd_e
    lin[e + 1 - nv] = mass_acceleration(inverse_mass, k, b, s_e, sd_e, force)
    lin[e + 2 - nv] = wdot
    lw.out[0] = force
    lw.out[1] = damper_power(b, sd_e) + dissipated
