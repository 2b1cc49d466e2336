"""Frame rows, compiled: the Jacobians, residuals and drifts of loop closures and of contacts
with planes, and the gaps that contacts' events watch.

The rows of :class:`pinext.simulation.component.FrameRows` (a point, a hinge or a weld between
two frames of the mechanism, a point on a plane), as :meth:`pinext.Loop.kinematics` and a
contact's functional coordinate form them with Pinocchio's frame Jacobians and classical
accelerations in ``LOCAL_WORLD_ALIGNED`` axes, from the
kinematics the ABA of the same evaluation has just computed (joint transforms, body velocities
``v_i`` and velocity-product accelerations ``c_i``, Featherstone (2008) Table 7.1). The
accelerations at zero joint acceleration, ``a⁰_i = ⁱX_λ a⁰_λ + c_i`` (no gravity), give the
drift ``J̇ v`` of each row:

* a point p on body i (at r in its joint frame) moves at ``v_p = v_i + ω_i × r`` and its
  classical acceleration is ``a⁰_i + α⁰_i × r + ω_i × v_p`` (all in the joint's axes, then
  turned into world axes);
* a row's Jacobian column for dof k of an ancestor joint a is the world motion of the dof's
  axis carried to the point: ``s_lin + s_ω × (p − o_a)`` for the linear rows, ``s_ω`` for the
  angular ones.

Each row reads ``J a + γ = 0`` with ``γ = J̇ v + 2 ω J v + ω² φ`` (Baumgarte's stabilisation
of the residual φ, as :func:`pinext.contact.constrained.baumgarte`). A row on the mass of a
dynamic environment measures its gap to the displaced surface, ``φ − s_e`` at the rate
``J v − ṡ_e`` (the mass's acceleration enters in :func:`pinext.compiled.phase._locked_rows`);
a watched gap in front of a layer adds its compression w.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..simulation.component import FRAME_HINGE, FRAME_NORMAL, FRAME_ROWS, FRAME_WELD, FrameRows
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
    orient: np.ndarray  # (3, 3, 3) scratch: R_A, R_B' (world), then R_B'ᵀ R_A or the normals
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
def _columns(pm, fw, j, s, sign, kind, jac, row):
    """Add sign × the Jacobian of frame s of the joints from j to the root into jac[row:]:
    the point rows, then the angular rows of the kind (world axes for a weld, the hinge's
    world normals in the rows of fw.orient[2] for a hinge); for FRAME_NORMAL the one row
    along the normal in fw.orient[2, 0]."""
    rot_w, pos_w, nrm = fw.rotation, fw.position, fw.orient[2]
    p0, p1, p2 = fw.frame[s, 0, 0], fw.frame[s, 0, 1], fw.frame[s, 0, 2]
    a = j
    while a > 0:
        d0, d1, d2 = p0 - pos_w[a, 0], p1 - pos_w[a, 1], p2 - pos_w[a, 2]
        for col in range(pm.idx_v[a], pm.idx_v[a] + pm.nv[a]):
            u0, u1, u2, w0, w1, w2 = axis_motion(pm, rot_w, a, col, d0, d1, d2)
            if kind == FRAME_NORMAL:  # n in the first row of fw.orient[2]
                jac[row, col] += sign * (nrm[0, 0] * u0 + nrm[0, 1] * u1 + nrm[0, 2] * u2)
                continue
            jac[row, col] += sign * u0
            jac[row + 1, col] += sign * u1
            jac[row + 2, col] += sign * u2
            if kind == FRAME_WELD:
                jac[row + 3, col] += sign * w0
                jac[row + 4, col] += sign * w1
                jac[row + 5, col] += sign * w2
            elif kind == FRAME_HINGE:
                for k in range(2):
                    jac[row + 3 + k, col] += sign * (
                        nrm[k, 0] * w0 + nrm[k, 1] * w1 + nrm[k, 2] * w2
                    )
        a = pm.parent[a]


@helper
def _log3(m):
    """The rotation vector of the rotation matrix m (angle in [0, π]), through its unit
    quaternion (Shepperd's choice of the largest component)."""
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr >= m[0, 0] and tr >= m[1, 1] and tr >= m[2, 2]:
        w = 0.5 * math.sqrt(1.0 + tr)
        f = 0.25 / w
        x, y, z = (m[2, 1] - m[1, 2]) * f, (m[0, 2] - m[2, 0]) * f, (m[1, 0] - m[0, 1]) * f
    elif m[0, 0] >= m[1, 1] and m[0, 0] >= m[2, 2]:
        x = 0.5 * math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        f = 0.25 / x
        w, y, z = (m[2, 1] - m[1, 2]) * f, (m[0, 1] + m[1, 0]) * f, (m[0, 2] + m[2, 0]) * f
    elif m[1, 1] >= m[2, 2]:
        y = 0.5 * math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        f = 0.25 / y
        w, x, z = (m[0, 2] - m[2, 0]) * f, (m[0, 1] + m[1, 0]) * f, (m[1, 2] + m[2, 1]) * f
    else:
        z = 0.5 * math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        f = 0.25 / z
        w, x, y = (m[1, 0] - m[0, 1]) * f, (m[0, 2] + m[2, 0]) * f, (m[1, 2] + m[2, 1]) * f
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    s = math.sqrt(x * x + y * y + z * z)
    k = 2.0 / w * (1.0 - s * s / (3.0 * w * w)) if s < 1e-6 else 2.0 * math.atan2(s, w) / s
    return k * x, k * y, k * z


@helper
def _residual(rows, fw, b, kind, gamma, row):
    """The residuals φ of block b into fw.phi and its drifts J̇ v into gamma[row:]; for a
    hinge, its world normals into the rows of fw.orient[2] (for FRAME_NORMAL its normal into
    the first)."""
    fr, orient, phi = fw.frame, fw.orient, fw.phi
    ra, rb, work = orient[0], orient[1], orient[2]
    if kind == FRAME_NORMAL:  # φ = nᵀ(p_A − p_B'), drift nᵀ(a_A − a_B') + (ω_B × n)ᵀ(v_A − v_B')
        n0, n1, n2 = rb[0, 2], rb[1, 2], rb[2, 2]
        work[0, 0], work[0, 1], work[0, 2] = n0, n1, n2
        wb = fr[1, 2]
        x0, x1, x2 = wb[1] * n2 - wb[2] * n1, wb[2] * n0 - wb[0] * n2, wb[0] * n1 - wb[1] * n0
        phi[0] = gamma[row] = 0.0
        for r in range(3):
            phi[0] += work[0, r] * (fr[0, 0, r] - fr[1, 0, r])
            gamma[row] += work[0, r] * (fr[0, 3, r] - fr[1, 3, r])
        gamma[row] += x0 * (fr[0, 1, 0] - fr[1, 1, 0]) + x1 * (fr[0, 1, 1] - fr[1, 1, 1])
        gamma[row] += x2 * (fr[0, 1, 2] - fr[1, 1, 2])
        return
    for r in range(3):
        phi[r] = fr[0, 0, r] - fr[1, 0, r]
        gamma[row + r] = fr[0, 3, r] - fr[1, 3, r]
    if kind == FRAME_WELD:  # φ = R_B' log(R_B'ᵀ R_A), drift α_A − α_B
        for r in range(3):
            gamma[row + 3 + r] = fr[0, 4, r] - fr[1, 4, r]
            for c in range(3):
                work[r, c] = rb[0, r] * ra[0, c] + rb[1, r] * ra[1, c] + rb[2, r] * ra[2, c]
        l0, l1, l2 = _log3(work)
        for r in range(3):
            phi[3 + r] = rb[r, 0] * l0 + rb[r, 1] * l1 + rb[r, 2] * l2
    elif kind == FRAME_HINGE:  # φ_k = n_kᵀ (e_B' × e_A), e = R axis, n_k = R_B' normal_k
        ax = rows.axis[b]
        a0 = ra[0, 0] * ax[0] + ra[0, 1] * ax[1] + ra[0, 2] * ax[2]
        a1 = ra[1, 0] * ax[0] + ra[1, 1] * ax[1] + ra[1, 2] * ax[2]
        a2 = ra[2, 0] * ax[0] + ra[2, 1] * ax[1] + ra[2, 2] * ax[2]
        b0 = rb[0, 0] * ax[0] + rb[0, 1] * ax[1] + rb[0, 2] * ax[2]
        b1 = rb[1, 0] * ax[0] + rb[1, 1] * ax[1] + rb[1, 2] * ax[2]
        b2 = rb[2, 0] * ax[0] + rb[2, 1] * ax[1] + rb[2, 2] * ax[2]
        c0, c1, c2 = b1 * a2 - b2 * a1, b2 * a0 - b0 * a2, b0 * a1 - b1 * a0
        wa, wb, al = fr[0, 2], fr[1, 2], fr[0, 4]
        for k in range(2):
            for r in range(3):
                work[k, r] = (
                    rb[r, 0] * rows.normals[b, 0, k]
                    + rb[r, 1] * rows.normals[b, 1, k]
                    + rb[r, 2] * rows.normals[b, 2, k]
                )
            n0, n1, n2 = work[k, 0], work[k, 1], work[k, 2]
            phi[3 + k] = n0 * c0 + n1 * c1 + n2 * c2
            # n_kᵀ (α_A − α_B) + (ω_B × n_k)ᵀ (ω_A − ω_B)
            x0 = wb[1] * n2 - wb[2] * n1
            x1 = wb[2] * n0 - wb[0] * n2
            x2 = wb[0] * n1 - wb[1] * n0
            gamma[row + 3 + k] = (
                n0 * (al[0] - fr[1, 4, 0]) + n1 * (al[1] - fr[1, 4, 1]) + n2 * (al[2] - fr[1, 4, 2])
                + x0 * (wa[0] - wb[0]) + x1 * (wa[1] - wb[1]) + x2 * (wa[2] - wb[2])
            )  # fmt: skip


@helper
def normal_row(pm, fw, rows, b, jac, row):
    """The row of block b of ``rows`` (a point on a plane, :data:`FRAME_NORMAL`) into
    jac[row], its frames A and B' into fw.frame, the plane's normal into fw.orient[2, 0] and
    its residual φ into fw.phi[0], once :func:`_kinematics` has run."""
    _frame(pm, fw, rows.joint_a[b], rows.rot_a, rows.pos_a, b, 0)
    _frame(pm, fw, rows.joint_b[b], rows.rot_b, rows.pos_b, b, 1)
    _residual(rows, fw, b, FRAME_NORMAL, fw.drift, 0)
    for c in range(jac.shape[1]):
        jac[row, c] = 0.0
    _columns(pm, fw, rows.joint_a[b], 0, 1.0, FRAME_NORMAL, jac, row)
    _columns(pm, fw, rows.joint_b[b], 1, -1.0, FRAME_NORMAL, jac, row)


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
        kind, row = rows.kind[b], fw.first[b]
        n = FRAME_SIZES[kind]
        _frame(pm, fw, rows.joint_a[b], rows.rot_a, rows.pos_a, b, 0)
        _frame(pm, fw, rows.joint_b[b], rows.rot_b, rows.pos_b, b, 1)
        _residual(rows, fw, b, kind, gamma, row)
        for i in range(row, row + n):
            for c in range(jac.shape[1]):
                jac[i, c] = 0.0
        _columns(pm, fw, rows.joint_a[b], 0, 1.0, kind, jac, row)
        _columns(pm, fw, rows.joint_b[b], 1, -1.0, kind, jac, row)
        w = rows.omega[b]
        for i in range(n):
            rate = 0.0
            for c in range(jac.shape[1]):
                rate += jac[row + i, c] * v[c]
            e = fw.row_env[row + i]
            if e >= 0:
                fw.phi[i] -= y[e]
                rate -= y[e + 1]
            gamma[row + i] += 2.0 * w * rate + w * w * fw.phi[i]
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
    front of it (module docstring)."""
    watch = fw.watch
    for b in range(watch.kind.size):
        _frame(pm, fw, watch.joint_a[b], watch.rot_a, watch.pos_a, b, 0)
        _frame(pm, fw, watch.joint_b[b], watch.rot_b, watch.pos_b, b, 1)
        _residual(watch, fw, b, watch.kind[b], fw.drift, 0)
        e, w = fw.watch_env[b], fw.watch_layer[b]
        fw.gap[b] = fw.phi[0] - (y[e] if e >= 0 else 0.0) + (y[w] if w >= 0 else 0.0)
