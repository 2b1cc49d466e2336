"""Built-in control laws evaluated inside the compiled right-hand side.

:func:`cartesian_torques` is :class:`pinext.control.cartesian.CartesianPD`, on the law's own
statements (:func:`~pinext.control.cartesian.desired`, :func:`~pinext.control.cartesian.wrench`,
which its Python ``__call__`` uses too): the frame's
placement and its Jacobian in world axes from :mod:`pinext.compiled.frames` (a weld block to
the world, :func:`pinext.compiled.frames._columns`), the gravity torque from the RNEA at zero
velocity (:func:`pinext.compiled.rnea.nonlinear_effects`), the rotation error through
:func:`pinext.simulation.forms.log3`:

.. math::

    \\tau = g(q) + J_p^T\\,[K_p (p_d - p) + D_p (\\dot p_d - \\dot p)]
          + J_\\omega^T\\,[K_r \\log(R_d R^T) - D_r \\omega] - D_q \\dot q.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pinocchio as pin

from ..control.cartesian import desired, wrench
from ..simulation.component import FRAME_WELD, FrameRows
from ..simulation.controls import kernel_form
from ..simulation.forms import frame_selection, log3
from . import frames as _frames
from .aba import joint_transforms
from .rnea import nonlinear_effects
from .spatial import helper, kernel


class CartesianLaw(NamedTuple):
    """A :class:`pinext.control.cartesian.CartesianPD` as arrays, with its workspace."""

    work: _frames.FrameWork  # the frame as a weld block to the world (rows: its Jacobian)
    rotation: np.ndarray  # (3, 3) R_d
    start: np.ndarray  # (3,) the path's start [m]
    t0: np.ndarray  # (moves,) [s]
    t1: np.ndarray  # (moves,) [s]
    delta: np.ndarray  # (moves, 3) [m]
    gains: np.ndarray  # (9,) kp (3), dp (3), kr, dr, dq
    gravity: np.ndarray  # (nv,) workspace: g(q)
    zeros: np.ndarray  # (nv,) a null velocity
    scratch: np.ndarray  # (3, 3) workspace: R_d Rᵀ
    target: np.ndarray  # (6,) workspace: p_d, ṗ_d
    error: np.ndarray  # (3,) workspace: log(R_d Rᵀ)
    load: np.ndarray  # (6,) workspace: the law's force and moment


def cartesian_law(controller: Any, model: pin.Model) -> CartesianLaw | None:
    """The compiled form of a controller whose kernel form is ``"cartesian_pd"``
    (:meth:`pinext.control.cartesian.CartesianPD.kernel_form`) on ``model``, else None."""
    form = kernel_form(controller, model)
    if form is None or form.kind != "cartesian_pd":
        return None
    law = form.law
    frame = model.frames[law.frame_id]
    block = FrameRows.block(FRAME_WELD, frame.parentJoint, frame.placement, 0, pin.SE3.Identity())
    path = law.path
    return CartesianLaw(
        _frames.work(block, model.njoints, model.nv),
        np.ascontiguousarray(law.rotation),
        np.array(path.start, dtype=float),
        np.array(path.t0, dtype=float),
        np.array(path.t1, dtype=float),
        np.array(path.delta, dtype=float).reshape(-1, 3),
        law.gains,
        np.zeros(model.nv),
        np.zeros(model.nv),
        np.zeros((3, 3)),
        np.zeros(6),
        np.zeros(3),
        np.zeros(6),
    )


#: No Cartesian law (the default of :class:`pinext.compiled.phase.PhaseKernel`).
NONE = CartesianLaw(
    _frames.NONE, np.eye(3), np.zeros(3), np.zeros(0), np.zeros(0), np.zeros((0, 3)),
    np.zeros(0), np.zeros(0), np.zeros(0), np.zeros((3, 3)), np.zeros(6), np.zeros(3),
    np.zeros(6),
)  # fmt: skip


@helper
def cartesian_torques(pm, law, t, q, v, u):
    """u = the law's torques at (t, q, v) (module docstring)."""
    fw = law.work
    rows = fw.rows
    nv = v.size
    joint_transforms(pm, q)
    nonlinear_effects(pm, law.zeros, law.gravity)  # g(q)
    _frames._kinematics(pm, fw)
    _frames._frame(pm, fw, rows.joint_a[0], rows.rot_a, rows.pos_a, 0, 0)
    jac = fw.jac
    for i in range(6):
        for c in range(nv):
            jac[i, c] = 0.0
    frame_selection(FRAME_WELD, fw.orient[1], rows.normals[0], fw.frame[1, 2], fw.select, fw.rate)
    _frames._columns(pm, fw, rows.joint_a[0], 0, 1.0, 6, jac, 0)
    target, error, out = law.target, law.error, law.load
    desired(law.start, law.t0, law.t1, law.delta, t, target)
    rate = fw.phi  # (6,) scratch: [ṗ, ω] = J v
    for i in range(6):
        acc = 0.0
        for c in range(nv):
            acc += jac[i, c] * v[c]
        rate[i] = acc
    rot, m = fw.orient[0], law.scratch  # R and R_d Rᵀ
    for r in range(3):
        for c in range(3):
            m[r, c] = (
                law.rotation[r, 0] * rot[c, 0]
                + law.rotation[r, 1] * rot[c, 1]
                + law.rotation[r, 2] * rot[c, 2]
            )
    e0, e1, e2 = log3(m)
    error[0] = e0
    error[1] = e1
    error[2] = e2
    wrench(law.gains, target, fw.frame[0, 0], rate, error, out)
    for c in range(nv):
        acc = law.gravity[c] - law.gains[8] * v[c]
        for i in range(6):
            acc += jac[i, c] * out[i]
        u[c] = acc


@kernel
def sample_torques(pm, law, t, x, out):
    """out[k] = the law's torques at (t[k], x[k]) for every sample k (x: the public states of
    a Euclidean model)."""
    nv = out.shape[1]
    for k in range(t.size):
        cartesian_torques(pm, law, t[k], x[k, :nv], x[k, nv : 2 * nv], out[k])
