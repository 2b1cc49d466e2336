"""Frame rows, compiled: the Jacobians, residuals and drifts of loop closures and of contacts
with planes, and the gaps that contacts' events watch.

The rows of :class:`pinext.simulation.component.FrameRows` (a point, a hinge or a weld between
two frames of the mechanism, a point on a plane) from the kinematics the ABA of the same
evaluation has just computed (joint transforms, body velocities ``v_i`` and velocity-product
accelerations ``c_i``, Featherstone (2008) Table 7.1). This module computes the motions of
the two frames of each block; what the block's rows measure of them (their directions, the
residuals, the drift ``J̇ v``) is :func:`pinext.simulation.forms.frame_block`, the function
the Python path calls on Pinocchio's frame motions (:meth:`FrameRows.kinematics`). The
accelerations at zero joint acceleration, ``a⁰_i = ⁱX_λ a⁰_λ + c_i`` (no gravity), give:

* a point p on body i (at r in its joint frame) moves at ``v_p = v_i + ω_i × r`` and its
  classical acceleration is ``a⁰_i + α⁰_i × r + ω_i × v_p`` (all in the joint's axes, then
  turned into world axes);
* a frame's Jacobian column for dof k of an ancestor joint a is the world motion of the dof's
  axis carried to the point, ``(s_lin + s_ω × (p − o_a), s_ω)``, and a row's column is its
  direction (``forms.frame_selection``) applied to it.

Each row reads ``J a + γ = 0`` with ``γ = J̇ v + 2 ω J v + ω² φ`` (Baumgarte's stabilisation
of the residual φ, as :func:`pinext.contact.constrained.baumgarte`). A row on the mass of a
dynamic environment measures its gap to the displaced surface, ``φ − s_e`` at the rate
``J v − ṡ_e`` (the mass's acceleration enters in :func:`pinext.compiled.phase._locked_rows`);
a watched gap in front of a layer adds its compression w.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..simulation.component import FRAME_NORMAL, FRAME_ROWS, FrameRows
from ..simulation.forms import frame_block, stabilisation, surface_gap
from .spatial import helper, motion_to_child


class FrameWork(NamedTuple):
    """The frame rows of a phase, the blocks its events watch (one-row blocks whose residual
    is an approach gap, :class:`pinext.simulation.component.Gap`), and the workspace of
    :func:`evaluate`."""

    rows: FrameRows
    watch: FrameRows
    gap: np.ndarray  # (watched blocks,) the residual φ of each watched block
    first: np.ndarray  # int64 (blocks,): each block's first row
    rotation: np.ndarray  # (nj, 3, 3) world rotation of each joint frame
    position: np.ndarray  # (nj, 3) world position of each joint frame [m]
    acceleration: np.ndarray  # (nj, 6) a⁰ of each joint frame (its own axes)
    jac: np.ndarray  # (m, nv) the rows' Jacobian
    gamma: np.ndarray  # (m,) γ of each row
    frame: np.ndarray  # (2, 5, 3) scratch: p, v_p, ω, a_p, α of frames A and B' (world)
    orient: np.ndarray  # (3, 3, 3) scratch: R_A, R_B' (world), and a third for a weld
    select: np.ndarray  # (6, 6) scratch: the rows' directions (forms.frame_selection)
    rate: np.ndarray  # (6, 6) scratch: their rates
    phi: np.ndarray  # (6,) scratch: the residuals of one block
    drift: np.ndarray  # (6,) scratch: the drifts of a watched block
    row_env: np.ndarray  # int64 (m,) internal state index of the s_e behind each row (−1: none)
    row_inverse_mass: np.ndarray  # (m,) its 1/m_e
    watch_env: np.ndarray  # int64 (watched blocks,) the same for the watched gaps
    watch_layer: np.ndarray  # int64 (watched blocks,) the index of a layer's w (−1: none)


def work(rows: FrameRows, nj: int, nv: int, watch: FrameRows | None = None) -> FrameWork:
    """The workspace of ``rows`` (and the ``watch`` blocks) on a model of nj joints and nv
    dofs, their environment indices already internal state indices."""
    sizes = [FRAME_ROWS[k] for k in rows.kind.tolist()]
    rotation = np.zeros((nj, 3, 3))
    rotation[0] = np.eye(3)
    watch = FrameRows.stack([]) if watch is None else watch
    return FrameWork(
        rows,
        watch,
        np.zeros(watch.kind.size),
        np.cumsum([0] + sizes).astype(np.int64)[:-1],
        rotation,
        np.zeros((nj, 3)),
        np.zeros((nj, 6)),
        np.zeros((sum(sizes), nv)),
        np.zeros(sum(sizes)),
        np.zeros((2, 5, 3)),
        np.zeros((3, 3, 3)),
        np.zeros((6, 6)),
        np.zeros((6, 6)),
        np.zeros(6),
        np.zeros(6),
        np.repeat(rows.env, sizes).astype(np.int64),
        np.repeat(rows.inverse_mass, sizes).astype(float),
        watch.env.astype(np.int64),
        watch.layer.astype(np.int64),
    )


#: Rows of each kind (:data:`pinext.simulation.component.FRAME_ROWS`), for the kernels.
FRAME_SIZES = np.array(FRAME_ROWS, dtype=np.int64)
#: No frame rows (the default of :class:`pinext.compiled.phase.PhaseKernel`).
NONE = work(FrameRows.stack([]), 1, 0)


@helper
def placements(pm, rot_w, pos_w):
    """World placements (oMi) of the joint frames, rotations into rot_w and positions into
    pos_w, from the parent → joint transforms of the last
    :func:`pinext.compiled.aba.joint_transforms`."""
    for i in range(1, pm.parent.shape[0]):
        p = pm.parent[i]
        for r in range(3):
            if p == 0:
                for c in range(3):
                    rot_w[i, r, c] = pm.ws_rotation[i, r, c]
                pos_w[i, r] = pm.ws_translation[i, r]
            else:
                s = pos_w[p, r]
                for c in range(3):
                    s += rot_w[p, r, c] * pm.ws_translation[i, c]
                    x = 0.0
                    for k in range(3):
                        x += rot_w[p, r, k] * pm.ws_rotation[i, k, c]
                    rot_w[i, r, c] = x
                pos_w[i, r] = s


@helper
def axis_motion(pm, rot_w, a, col, d0, d1, d2):
    """The world motion of dof ``col`` of joint a at unit rate, seen at the point ``o_a + d``:
    ``(s_lin + s_ω × d, s_ω)`` in world axes (a column of a point's Jacobian)."""
    sm = pm.motion_subspace[col]
    l0 = rot_w[a, 0, 0] * sm[0] + rot_w[a, 0, 1] * sm[1] + rot_w[a, 0, 2] * sm[2]
    l1 = rot_w[a, 1, 0] * sm[0] + rot_w[a, 1, 1] * sm[1] + rot_w[a, 1, 2] * sm[2]
    l2 = rot_w[a, 2, 0] * sm[0] + rot_w[a, 2, 1] * sm[1] + rot_w[a, 2, 2] * sm[2]
    w0 = rot_w[a, 0, 0] * sm[3] + rot_w[a, 0, 1] * sm[4] + rot_w[a, 0, 2] * sm[5]
    w1 = rot_w[a, 1, 0] * sm[3] + rot_w[a, 1, 1] * sm[4] + rot_w[a, 1, 2] * sm[5]
    w2 = rot_w[a, 2, 0] * sm[3] + rot_w[a, 2, 1] * sm[4] + rot_w[a, 2, 2] * sm[5]
    return l0 + w1 * d2 - w2 * d1, l1 + w2 * d0 - w0 * d2, l2 + w0 * d1 - w1 * d0, w0, w1, w2


@helper
def _kinematics(pm, fw):
    """World placements and a⁰ of every joint frame (module docstring)."""
    acc = fw.acceleration
    rot, trans = pm.ws_rotation, pm.ws_translation
    placements(pm, fw.rotation, fw.position)
    for r in range(6):
        acc[0, r] = 0.0
    for i in range(1, pm.parent.shape[0]):
        motion_to_child(rot, trans, i, acc, pm.parent[i], acc, i)
        for r in range(6):
            acc[i, r] += pm.ws_bias[i, r]


@helper
def _frame(pm, fw, j, rot_l, pos_l, b, s):
    """Frame s (0: A, 1: B') of block b, at (rot_l[b], pos_l[b]) in joint j: its world
    rotation into fw.orient[s] and p, v_p, ω, a_p, α (world) into fw.frame[s]."""
    rot_w, out = fw.rotation, fw.frame
    vel, acc = pm.ws_velocity, fw.acceleration
    r0, r1, r2 = pos_l[b, 0], pos_l[b, 1], pos_l[b, 2]
    w0 = w1 = w2 = v0 = v1 = v2 = a0 = a1 = a2 = al0 = al1 = al2 = 0.0
    if j > 0:
        w0, w1, w2 = vel[j, 3], vel[j, 4], vel[j, 5]
        v0 = vel[j, 0] + w1 * r2 - w2 * r1
        v1 = vel[j, 1] + w2 * r0 - w0 * r2
        v2 = vel[j, 2] + w0 * r1 - w1 * r0
        al0, al1, al2 = acc[j, 3], acc[j, 4], acc[j, 5]
        a0 = acc[j, 0] + al1 * r2 - al2 * r1 + w1 * v2 - w2 * v1
        a1 = acc[j, 1] + al2 * r0 - al0 * r2 + w2 * v0 - w0 * v2
        a2 = acc[j, 2] + al0 * r1 - al1 * r0 + w0 * v1 - w1 * v0
    for r in range(3):
        m0, m1, m2 = rot_w[j, r, 0], rot_w[j, r, 1], rot_w[j, r, 2]
        out[s, 0, r] = fw.position[j, r] + m0 * r0 + m1 * r1 + m2 * r2
        out[s, 1, r] = m0 * v0 + m1 * v1 + m2 * v2
        out[s, 2, r] = m0 * w0 + m1 * w1 + m2 * w2
        out[s, 3, r] = m0 * a0 + m1 * a1 + m2 * a2
        out[s, 4, r] = m0 * al0 + m1 * al1 + m2 * al2
        for c in range(3):
            fw.orient[s, r, c] = m0 * rot_l[b, 0, c] + m1 * rot_l[b, 1, c] + m2 * rot_l[b, 2, c]


@helper
def _columns(pm, fw, j, s, sign, n, jac, row):
    """Add sign × the Jacobian of frame s of the joints from j to the root, seen through
    the block's n rows fw.select (:func:`pinext.simulation.forms.frame_selection`), into
    jac[row : row + n]."""
    rot_w, pos_w, sel = fw.rotation, fw.position, fw.select
    p0, p1, p2 = fw.frame[s, 0, 0], fw.frame[s, 0, 1], fw.frame[s, 0, 2]
    a = j
    while a > 0:
        d0, d1, d2 = p0 - pos_w[a, 0], p1 - pos_w[a, 1], p2 - pos_w[a, 2]
        for col in range(pm.idx_v[a], pm.idx_v[a] + pm.nv[a]):
            u0, u1, u2, w0, w1, w2 = axis_motion(pm, rot_w, a, col, d0, d1, d2)
            for i in range(n):
                jac[row + i, col] += sign * (
                    sel[i, 0] * u0 + sel[i, 1] * u1 + sel[i, 2] * u2
                    + sel[i, 3] * w0 + sel[i, 4] * w1 + sel[i, 5] * w2
                )  # fmt: skip
        a = pm.parent[a]


@helper
def _block(pm, fw, rows, b, kind, gamma, row):
    """Frames A and B' of block b of rows into fw.frame and fw.orient, then its directions
    into fw.select, its residuals into fw.phi and its drift into gamma[row:]
    (:func:`pinext.simulation.forms.frame_block`)."""
    _frame(pm, fw, rows.joint_a[b], rows.rot_a, rows.pos_a, b, 0)
    _frame(pm, fw, rows.joint_b[b], rows.rot_b, rows.pos_b, b, 1)
    frame_block(
        kind, fw.frame, fw.orient, rows.axis[b], rows.normals[b], fw.select, fw.rate, fw.phi,
        gamma, row,
    )  # fmt: skip


@helper
def normal_row(pm, fw, rows, b, jac, row):
    """The row of block b of ``rows`` (a point on a plane, :data:`FRAME_NORMAL`) into
    jac[row], its frames A and B' into fw.frame, the plane's normal into fw.select[0, :3] and
    its residual φ into fw.phi[0], once :func:`_kinematics` has run."""
    _block(pm, fw, rows, b, FRAME_NORMAL, fw.drift, 0)
    for c in range(jac.shape[1]):
        jac[row, c] = 0.0
    _columns(pm, fw, rows.joint_a[b], 0, 1.0, 1, jac, row)
    _columns(pm, fw, rows.joint_b[b], 1, -1.0, 1, jac, row)


@helper
def _block_rows(pm, fw, rows, b, gamma):
    """Block b of ``rows``: its Jacobian rows into fw.jac, its residuals into fw.phi and its
    drift into gamma (:func:`_block`); returns its first row and its number of rows."""
    kind, row = rows.kind[b], fw.first[b]
    n = FRAME_SIZES[kind]
    _block(pm, fw, rows, b, kind, gamma, row)
    for i in range(row, row + n):
        for c in range(fw.jac.shape[1]):
            fw.jac[i, c] = 0.0
    _columns(pm, fw, rows.joint_a[b], 0, 1.0, n, fw.jac, row)
    _columns(pm, fw, rows.joint_b[b], 1, -1.0, n, fw.jac, row)
    return row, n


@helper
def held(pm, fw, residual):
    """fw.jac and the residual φ of every row (into ``residual``): the rows a time step holds
    at its end (:class:`pinext.contact.timestepping.HeldRows`), at the transforms and body
    velocities of the last RNEA or ABA."""
    rows = fw.rows
    if rows.kind.size == 0:
        return
    _kinematics(pm, fw)
    for b in range(rows.kind.size):
        row, n = _block_rows(pm, fw, rows, b, fw.gamma)
        for i in range(n):
            residual[row + i] = fw.phi[i]


@helper
def evaluate(pm, fw, y, nv):
    """fw.jac and fw.gamma (``γ = J̇ v + 2ω J v + ω² φ``) of every block of rows, and fw.gap
    of every watched block, at the state y of the last ABA (its transforms, v_i and c_i), its
    joint velocity ``v = y[nv:2nv]``; a row on an environment's mass measures from the
    displaced surface (module docstring)."""
    v = y[nv : 2 * nv]
    rows, watch = fw.rows, fw.watch
    if rows.kind.size == 0 and watch.kind.size == 0:
        return
    _kinematics(pm, fw)
    jac, gamma = fw.jac, fw.gamma
    for b in range(rows.kind.size):
        row, n = _block_rows(pm, fw, rows, b, gamma)
        w = rows.omega[b]
        for i in range(n):
            rate = 0.0
            for c in range(jac.shape[1]):
                rate += jac[row + i, c] * v[c]
            e = fw.row_env[row + i]  # on a mass: from its displaced surface, and the rates
            fw.phi[i] = surface_gap(fw.phi[i], y, e, -1)
            rate = surface_gap(rate, y, e + 1 if e >= 0 else -1, -1)
            gamma[row + i] += stabilisation(w, rate, fw.phi[i])
    _watched(pm, fw, y)


@helper
def gaps(pm, fw, y):
    """fw.gap of every watched block at the transforms of the last
    :func:`pinext.compiled.aba.joint_transforms` (at the state y's q), from the placements alone:
    an approach event's value between the integrator's steps needs no ABA. The same operations
    as :func:`evaluate`'s, so the same numbers (the frames' velocities and drifts it leaves in
    the scratch are stale and unused)."""
    if fw.watch.kind.size:
        placements(pm, fw.rotation, fw.position)
        _watched(pm, fw, y)


@helper
def _watched(pm, fw, y):
    """fw.gap of every watched block, the joint frames' placements in fw: its residual, from
    the displaced surface of an environment's mass, plus the compression w of a layer in
    front of it (:func:`pinext.simulation.forms.surface_gap`)."""
    watch = fw.watch
    for b in range(watch.kind.size):
        _block(pm, fw, watch, b, watch.kind[b], fw.drift, 0)
        fw.gap[b] = surface_gap(fw.phi[0], y, fw.watch_env[b], fw.watch_layer[b])
