"""Built-in control laws evaluated inside the compiled right-hand side.

:func:`cartesian_torques` is :class:`pinext.control.cartesian.CartesianPD`: the frame's
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

from ..simulation.component import FRAME_WELD, FrameRows
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


def cartesian_law(law: Any, model: pin.Model) -> CartesianLaw | None:
    """The compiled form of a :class:`pinext.control.cartesian.CartesianPD` on ``model``."""
    from ..control.cartesian import CartesianPD  # the plug-in layer: only to recognise it

    if type(law) is not CartesianPD:
        return None
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
        np.r_[law.kp, law.dp, law.kr, law.dr, law.dq].astype(float),
        np.zeros(model.nv),
        np.zeros(model.nv),
        np.zeros((3, 3)),
    )


#: No Cartesian law (the default of :class:`pinext.compiled.phase.PhaseKernel`).
NONE = CartesianLaw(
    _frames.NONE, np.eye(3), np.zeros(3), np.zeros(0), np.zeros(0), np.zeros((0, 3)),
    np.zeros(0), np.zeros(0), np.zeros(0), np.zeros((3, 3)),
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
    # the desired position and velocity on the path
    pd0, pd1, pd2 = law.start[0], law.start[1], law.start[2]
    vd0 = vd1 = vd2 = 0.0
    for k in range(law.t0.size):
        a, b = law.t0[k], law.t1[k]
        if t <= a:
            continue
        if t >= b:
            s, ds = 1.0, 0.0
        else:
            x = (t - a) / (b - a)
            s = x * x * x * (10.0 - 15.0 * x + 6.0 * x * x)
            ds = 30.0 * x * x * (1.0 - x) * (1.0 - x) / (b - a)
        pd0 += s * law.delta[k, 0]
        pd1 += s * law.delta[k, 1]
        pd2 += s * law.delta[k, 2]
        vd0 += ds * law.delta[k, 0]
        vd1 += ds * law.delta[k, 1]
        vd2 += ds * law.delta[k, 2]
    g = law.gains
    p = fw.frame[0, 0]
    rate = fw.phi  # (6,) scratch: [ṗ, ω] = J v
    for i in range(6):
        acc = 0.0
        for c in range(nv):
            acc += jac[i, c] * v[c]
        rate[i] = acc
    f0 = g[0] * (pd0 - p[0]) + g[3] * (vd0 - rate[0])
    f1 = g[1] * (pd1 - p[1]) + g[4] * (vd1 - rate[1])
    f2 = g[2] * (pd2 - p[2]) + g[5] * (vd2 - rate[2])
    rot, m = fw.orient[0], law.scratch  # R and R_d Rᵀ
    for r in range(3):
        for c in range(3):
            m[r, c] = (
                law.rotation[r, 0] * rot[c, 0]
                + law.rotation[r, 1] * rot[c, 1]
                + law.rotation[r, 2] * rot[c, 2]
            )
    e0, e1, e2 = log3(m)
    m0 = g[6] * e0 - g[7] * rate[3]
    m1 = g[6] * e1 - g[7] * rate[4]
    m2 = g[6] * e2 - g[7] * rate[5]
    for c in range(nv):
        u[c] = (
            law.gravity[c]
            + jac[0, c] * f0 + jac[1, c] * f1 + jac[2, c] * f2
            + jac[3, c] * m0 + jac[4, c] * m1 + jac[5, c] * m2
            - g[8] * v[c]
        )  # fmt: skip


@kernel
def sample_torques(pm, law, t, x, out):
    """out[k] = the law's torques at (t[k], x[k]) for every sample k (x: the public states of
    a Euclidean model)."""
    nv = out.shape[1]
    for k in range(t.size):
        cartesian_torques(pm, law, t[k], x[k, :nv], x[k, nv : 2 * nv], out[k])
