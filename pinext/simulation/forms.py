"""The forms of a component's rows: plain data that the compiled path
(:mod:`pinext.compiled`) evaluates without calling back into Python, and what each kind of
row means, written once for both paths.

A component gives them beside its Python functions (:meth:`pinext.simulation.component.
Component.compiled_rows`, :meth:`~pinext.simulation.component.Component.compiled_layer`):
constant joint rows (:class:`JointRows`), rows between two frames (:class:`FrameRows`), a
compliant contact layer (:class:`Layer`, with the laws of its parts: :func:`kelvin_voigt`,
:func:`mass_acceleration`, :func:`damper_power`, :func:`surface_gap`). Its events' forms are
in :mod:`pinext.simulation.events`.

The functions that say what a kind of row is (:func:`joint_row`, :func:`frame_block`,
:func:`stabilisation`) are plain Python that Numba also compiles where a kernel calls them
(``numba.extending.register_jitable``): the kernels inline them, and the Python path calls
them (:meth:`JointRows.drift`, :meth:`FrameRows.kinematics`; :func:`frame_block` through one
compiled entry, its scalar loops being slow in Python), so the two paths evaluate one
statement of each row. A new kind of row is written here and nowhere else.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pinocchio as pin
from numba import njit
from numba.extending import register_jitable

_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


@register_jitable
def stabilisation(omega, rate, residual):
    """Baumgarte's terms ``2 ω ṡ + ω² s`` of a row's γ (its rate ṡ = J v, its residual s):
    the row ``J a + J̇ v + 2 ω ṡ + ω² s = 0`` brings a residual back at the frequency ω
    (critically damped). The one statement of the stabilisation, for every kind of row on
    both paths (:func:`pinext.contact.constrained.baumgarte`)."""
    return 2.0 * omega * rate + omega * omega * residual


@register_jitable
def joint_row(ptr, iq, iv, coef, offset, r, y, v0):
    """(J_r v, φ_r) of row r of :class:`JointRows` arrays at the state y (q at ``y[iq]``, v
    at ``y[v0 + iv]``): the row's rate and residual ``Σ_k c_k q[iq_k] − offset_r``."""
    rate = 0.0
    residual = -offset[r]
    for k in range(ptr[r], ptr[r + 1]):
        rate += coef[k] * y[v0 + iv[k]]
        residual += coef[k] * y[iq[k]]
    return rate, residual


class JointRows(NamedTuple):
    """Constraint rows linear in q and v with constant coefficients over one-DOF joints: the
    compiled form of rows with a constant Jacobian (McClamroch (1986) (23) with ``B``
    constant). Row r has the entries ``k = ptr[r] .. ptr[r + 1] - 1`` and reads

    .. math::

        J_r a + \\gamma_r = 0, \\quad J_r a = \\sum_k c_k\\, a[iv_k], \\quad
        \\gamma_r = 2 \\omega_r J_r v + \\omega_r^2 \\phi_r, \\quad
        \\phi_r = \\sum_k c_k\\, q[iq_k] - \\mathrm{offset}_r,

    Baumgarte's stabilisation of the residual φ_r (ω_r = 0: none), exactly the rows
    ``J a + γ = 0`` the acceleration step solves. A joint on its lower stop is the row
    ``a[iv] + γ = 0`` with φ = q − lower; on its upper stop ``−a[iv] + γ = 0`` with
    φ = upper − q; a mimic coupling ``q_m = k q_l + c`` the row ``(e_m − k e_l)`` with
    φ = q_m − k q_l − c.
    """

    ptr: np.ndarray  # int64 (m + 1,)
    iq: np.ndarray  # int64 (entries,): index into q of each entry
    iv: np.ndarray  # int64 (entries,): index into v of each entry
    coef: np.ndarray  # (entries,): c_k
    offset: np.ndarray  # (m,)
    omega: np.ndarray  # (m,) Baumgarte frequency of each row [1/s]

    @property
    def m(self) -> int:
        """The number of rows."""
        return int(self.offset.size)

    @classmethod
    def build(
        cls, rows: list[list[tuple[int, int, float]]], offset: list[float], omega: list[float]
    ) -> JointRows:
        """The rows from ``rows[r] = [(iq, iv, c), ...]``, their offsets and frequencies."""
        entries = [e for row in rows for e in row]
        return cls(
            np.cumsum([0] + [len(row) for row in rows]).astype(np.int64),
            np.array([e[0] for e in entries], dtype=np.int64),
            np.array([e[1] for e in entries], dtype=np.int64),
            np.array([e[2] for e in entries], dtype=float),
            np.array(offset, dtype=float),
            np.array(omega, dtype=float),
        )

    @classmethod
    def stack(cls, blocks: list[JointRows]) -> JointRows:
        """The rows of several blocks, one after the other."""
        ends = np.cumsum([0] + [b.iq.size for b in blocks])
        ptrs = [b.ptr[1:] + e for b, e in zip(blocks, ends[:-1], strict=True)]
        return cls(
            np.concatenate([np.zeros(1, dtype=np.int64), *ptrs]).astype(np.int64),
            np.concatenate([np.zeros(0, dtype=np.int64)] + [b.iq for b in blocks]),
            np.concatenate([np.zeros(0, dtype=np.int64)] + [b.iv for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.coef for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.offset for b in blocks]),
            np.concatenate([np.zeros(0)] + [b.omega for b in blocks]),
        )

    def jacobian(self, nv: int) -> np.ndarray:
        """The dense Jacobian J, shape (m, nv)."""
        out = np.zeros((self.m, nv))
        for r in range(self.m):
            for k in range(self.ptr[r], self.ptr[r + 1]):
                out[r, self.iv[k]] += self.coef[k]
        return out

    def drift(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """γ at (q, v), shape (m,): ``2 ω_r J_r v + ω_r² φ_r`` (the Python path's evaluation,
        through :func:`joint_row` and :func:`stabilisation` as the compiled kernels')."""
        y = np.concatenate([q, v])
        out = np.empty(self.m)
        for r in range(self.m):
            rate, residual = joint_row(
                self.ptr, self.iq, self.iv, self.coef, self.offset, r, y, q.size
            )
            out[r] = stabilisation(self.omega[r], rate, residual)
        return out


#: Kinds of :class:`FrameRows` blocks (their rows: :data:`FRAME_ROWS`).
FRAME_POINT, FRAME_HINGE, FRAME_WELD, FRAME_NORMAL = 0, 1, 2, 3
#: The number of rows of each kind of block.
FRAME_ROWS = (3, 5, 6, 1)


class FrameRows(NamedTuple):
    """Constraint rows between two frames of the mechanism: the compiled form of a loop
    closure (McClamroch (1986) (3), (15)–(16); :class:`pinext.Loop` says what each kind
    constrains). Block b joins frame A, placed at ``(rot_a[b], pos_a[b])`` in joint
    ``joint_a[b]``, to frame B', placed at ``(rot_b[b], pos_b[b])`` in joint ``joint_b[b]``
    (joint 0: the world), with the rows of its ``kind`` in world axes:

    * FRAME_POINT (3 rows): ``p_A − p_B' = 0``;
    * FRAME_HINGE (5 rows): the point rows and ``n_iᵀ(ω_A − ω_B) = 0`` across the two
      directions ``normals[b]`` (in B') normal to ``axis[b]`` (in A);
    * FRAME_WELD (6 rows): the point rows and ``ω_A − ω_B = 0``;
    * FRAME_NORMAL (1 row): ``nᵀ(p_A − p_B') = 0`` along the z axis n of B' (a point on a
      plane, B' the plane's frame: Vukobratović & Potkonjak's functional coordinate z).

    What each kind's rows measure is written once, in :func:`frame_block`: the compiled
    kernels (:mod:`pinext.compiled.frames`) call it on the frames' motions from compiled
    kinematics, and stabilise the residuals with Baumgarte's frequency ``omega[b]`` as
    :class:`JointRows` do; :meth:`kinematics` calls it on the frames' motions from
    Pinocchio (the Python path's rows).

    A FRAME_NORMAL block may sit on the mass of a dynamic environment (model (c),
    Vukobratović & Potkonjak (20.92)–(20.94)): ``env[b]`` is the state index of its
    displacement s_e (ṡ_e follows it; −1: a fixed plane) and ``inverse_mass[b]`` its 1/m_e.
    The row then reads ``nᵀ(p_A − p_B') − s_e = 0`` and its reaction λ accelerates the mass
    by ``−λ / m_e`` on top of the environment's own (linear) law. Behind a compliant layer
    (model (d)), ``layer[b]`` is the state index of the layer's compression w: the surface
    then sits at ``s_e − w`` (the approach gap ``nᵀ(p_A − p_B') − s_e + w``).
    """

    kind: np.ndarray  # int64 (blocks,)
    joint_a: np.ndarray  # int64 (blocks,)
    rot_a: np.ndarray  # (blocks, 3, 3)
    pos_a: np.ndarray  # (blocks, 3)
    joint_b: np.ndarray  # int64 (blocks,)
    rot_b: np.ndarray  # (blocks, 3, 3)
    pos_b: np.ndarray  # (blocks, 3)
    axis: np.ndarray  # (blocks, 3)
    normals: np.ndarray  # (blocks, 3, 2)
    omega: np.ndarray  # (blocks,) [1/s]
    env: np.ndarray  # int64 (blocks,) state index of s_e (−1: none)
    inverse_mass: np.ndarray  # (blocks,) 1/m_e [1/kg]
    layer: np.ndarray  # int64 (blocks,) state index of w (−1: none)

    @property
    def m(self) -> int:
        """The number of rows."""
        return int(sum(FRAME_ROWS[k] for k in self.kind.tolist()))

    @classmethod
    def block(
        cls,
        kind: int,
        joint_a: int,
        frame_a: pin.SE3,
        joint_b: int,
        frame_b: pin.SE3,
        omega: float = 0.0,
        axis: np.ndarray | None = None,
        normals: np.ndarray | None = None,
        env: int = -1,
        inverse_mass: float = 0.0,
        layer: int = -1,
    ) -> FrameRows:
        """One block; frames A and B' as placements in their joints."""
        return cls(
            np.array([kind], dtype=np.int64),
            np.array([joint_a], dtype=np.int64),
            np.array([frame_a.rotation], dtype=float),
            np.array([frame_a.translation], dtype=float),
            np.array([joint_b], dtype=np.int64),
            np.array([frame_b.rotation], dtype=float),
            np.array([frame_b.translation], dtype=float),
            np.array([np.zeros(3) if axis is None else axis], dtype=float),
            np.array([np.zeros((3, 2)) if normals is None else normals], dtype=float),
            np.array([omega], dtype=float),
            np.array([env], dtype=np.int64),
            np.array([inverse_mass], dtype=float),
            np.array([layer], dtype=np.int64),
        )

    @classmethod
    def stack(cls, blocks: list[FrameRows]) -> FrameRows:
        """The blocks one after the other (none: no rows)."""
        shapes = ((), (), (3, 3), (3,), (), (3, 3), (3,), (3,), (3, 2), (), (), (), ())
        ints = (0, 1, 4, 10, 12)
        return cls(
            *(
                np.concatenate(
                    [np.zeros((0, *shape), dtype=np.int64 if f in ints else float)]
                    + [b[f] for b in blocks]
                )
                for f, shape in enumerate(shapes)
            )
        )

    def kinematics(
        self, model: pin.Model, data: pin.Data, motion: bool = True
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(φ, J, J̇ v) of the rows, shapes (m,), (m, nv), (m,), from a data on which
        ``pin.computeAllTerms(q, v)`` was called: each frame's placement, velocity,
        classical acceleration and Jacobian from Pinocchio (``LOCAL_WORLD_ALIGNED``), the
        rows from :func:`frame_block`, as the compiled kernels form them (without
        Baumgarte's terms and an environment's displacement, which the caller adds). With
        ``motion`` False, φ alone (J and J̇ v zero) from the joint placements of data
        (``framesForwardKinematics`` suffices): a contact's approach gap."""
        m, nv = self.m, model.nv
        phi, jac, drift = np.zeros(m), np.zeros((m, nv)), np.zeros(m)
        frame, orient = np.zeros((2, 5, 3)), np.zeros((3, 3, 3))
        select, rate, jacobians = np.zeros((6, 6)), np.zeros((6, 6)), np.zeros((2, 6, nv))
        ends = ((self.joint_a, self.rot_a, self.pos_a), (self.joint_b, self.rot_b, self.pos_b))
        row = 0
        for b, kind in enumerate(self.kind.tolist()):
            for s, (joint, rot, pos) in enumerate(ends):
                j, placement = int(joint[b]), pin.SE3(rot[b], pos[b])
                oMf = data.oMi[j] * placement
                orient[s], frame[s, 0] = oMf.rotation, oMf.translation
                if motion:
                    jacobians[s] = _frame_motion(model, data, j, placement, frame[s])
            n = FRAME_ROWS[kind]
            _frame_block(
                kind, frame, orient, self.axis[b], self.normals[b], select, rate, phi[row:],
                drift, row,
            )  # fmt: skip
            jac[row : row + n] = select[:n] @ (jacobians[0] - jacobians[1])
            row += n
        return phi, jac, drift


def _frame_motion(
    model: pin.Model, data: pin.Data, joint: int, placement: pin.SE3, frame: np.ndarray
) -> np.ndarray:
    """The motion of the frame at ``placement`` in ``joint`` from Pinocchio's data: v_p, ω,
    a_p (classical) and α in world axes into ``frame[1:]``; returns its Jacobian, shape
    (6, nv) (all ``LOCAL_WORLD_ALIGNED``)."""
    velocity = pin.getFrameVelocity(model, data, joint, placement, _LWA)
    acceleration = pin.getFrameClassicalAcceleration(model, data, joint, placement, _LWA)
    frame[1], frame[2] = velocity.linear, velocity.angular
    frame[3], frame[4] = acceleration.linear, acceleration.angular
    jacobian = pin.getFrameJacobian(model, data, joint, placement, _LWA)
    return jacobian.reshape(6, model.nv)  # (6,) from Pinocchio when nv = 1


@register_jitable
def _turned(spin, select, rate, i, c):
    """rate[i, c : c + 3] = spin × select[i, c : c + 3]: the rate of a direction fixed in a
    frame turning at the angular velocity ``spin``."""
    d0, d1, d2 = select[i, c], select[i, c + 1], select[i, c + 2]
    rate[i, c] = spin[1] * d2 - spin[2] * d1
    rate[i, c + 1] = spin[2] * d0 - spin[0] * d2
    rate[i, c + 2] = spin[0] * d1 - spin[1] * d0


@register_jitable
def frame_selection(kind, rot_b, normals, spin, select, rate):
    """What the rows of a block of ``kind`` measure: row i is ``select[i] · Δ`` of the
    relative world motion ``Δ = (linear at the points, angular)`` of frame A to frame B'
    (the identity's rows for a point and a weld, the hinge's normals ``rot_b normals`` for
    its angular rows, the plane's normal ``rot_b e_z`` for FRAME_NORMAL), and ``rate[i]``
    the time derivative of select[i], its directions fixed in B' turning with B's angular
    velocity ``spin``. Both (6, 6), rows after the kind's zero."""
    for i in range(6):
        for k in range(6):
            select[i, k] = 0.0
            rate[i, k] = 0.0
    if kind == FRAME_NORMAL:
        for r in range(3):
            select[0, r] = rot_b[r, 2]
        _turned(spin, select, rate, 0, 0)
        return
    for r in range(3):
        select[r, r] = 1.0
    if kind == FRAME_WELD:
        for r in range(3):
            select[3 + r, 3 + r] = 1.0
    elif kind == FRAME_HINGE:
        for k in range(2):
            for r in range(3):
                select[3 + k, 3 + r] = (
                    rot_b[r, 0] * normals[0, k]
                    + rot_b[r, 1] * normals[1, k]
                    + rot_b[r, 2] * normals[2, k]
                )
            _turned(spin, select, rate, 3 + k, 3)


@register_jitable
def frame_block(kind, frame, orient, axis, normals, select, rate, phi, gamma, row):
    """The rows of one :class:`FrameRows` block of ``kind``, written once for both paths.

    From frames A and B' (``frame[s]``: p, v_p, ω, a_p classical, α in world axes;
    ``orient[s]``: their world rotations; ``orient[2]``: scratch): the rows' directions
    into select and rate (:func:`frame_selection`; the Jacobian is ``select · (J_A − J_B')``),
    their residuals φ into ``phi[:n]`` and their drift ``J̇ v = select · Δa + rate · Δv``
    into ``gamma[row : row + n]``. The residuals: ``p_A − p_B'`` for the point rows (along
    the normal for FRAME_NORMAL), ``R_B' log(R_B'ᵀ R_A)`` for a weld's angular rows,
    ``n_kᵀ(e_B' × e_A)`` (the alignment of the axis, ``e = R axis``) for a hinge's."""
    ra, rb = orient[0], orient[1]
    frame_selection(kind, rb, normals, frame[1, 2], select, rate)
    for i in range(FRAME_ROWS[kind]):
        g = 0.0
        for r in range(3):
            g += select[i, r] * (frame[0, 3, r] - frame[1, 3, r])
            g += select[i, 3 + r] * (frame[0, 4, r] - frame[1, 4, r])
            g += rate[i, r] * (frame[0, 1, r] - frame[1, 1, r])
            g += rate[i, 3 + r] * (frame[0, 2, r] - frame[1, 2, r])
        gamma[row + i] = g
    if kind == FRAME_NORMAL:
        phi[0] = 0.0
        for r in range(3):
            phi[0] += select[0, r] * (frame[0, 0, r] - frame[1, 0, r])
        return
    for r in range(3):
        phi[r] = frame[0, 0, r] - frame[1, 0, r]
    if kind == FRAME_WELD:
        work = orient[2]
        for r in range(3):
            for c in range(3):
                work[r, c] = rb[0, r] * ra[0, c] + rb[1, r] * ra[1, c] + rb[2, r] * ra[2, c]
        l0, l1, l2 = log3(work)
        for r in range(3):
            phi[3 + r] = rb[r, 0] * l0 + rb[r, 1] * l1 + rb[r, 2] * l2
    elif kind == FRAME_HINGE:
        a0 = ra[0, 0] * axis[0] + ra[0, 1] * axis[1] + ra[0, 2] * axis[2]
        a1 = ra[1, 0] * axis[0] + ra[1, 1] * axis[1] + ra[1, 2] * axis[2]
        a2 = ra[2, 0] * axis[0] + ra[2, 1] * axis[1] + ra[2, 2] * axis[2]
        b0 = rb[0, 0] * axis[0] + rb[0, 1] * axis[1] + rb[0, 2] * axis[2]
        b1 = rb[1, 0] * axis[0] + rb[1, 1] * axis[1] + rb[1, 2] * axis[2]
        b2 = rb[2, 0] * axis[0] + rb[2, 1] * axis[1] + rb[2, 2] * axis[2]
        c0, c1, c2 = b1 * a2 - b2 * a1, b2 * a0 - b0 * a2, b0 * a1 - b1 * a0
        for k in range(2):
            phi[3 + k] = select[3 + k, 3] * c0 + select[3 + k, 4] * c1 + select[3 + k, 5] * c2


#: :func:`frame_block` compiled for the Python path's calls (a scalar loop is ~50x slower
#: in Python); the kernels inline :func:`frame_block` itself.
_frame_block = njit(cache=True)(frame_block)


@register_jitable
def log3(m):
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


class Layer(NamedTuple):
    """A compliant contact layer pressed by a frame: the compiled form of a contact with a
    model (d) environment while it touches (Vukobratović & Potkonjak §20.5.3).

    ``block`` is the tool point on the environment's plane (:data:`FRAME_NORMAL`, its
    ``env`` the state index of the mass's s_e, followed by ṡ_e and the layer's compression
    w), ``constants`` are ``(1/m_e, k, b, k_c, c_c)``: the mass, its spring and damper, and
    the layer's. The layer's force ``F = k_c w + c_c ẇ`` with ``ẇ = ṡ_e − J v`` pushes the
    robot (``Jᵀ F``) and the mass (``m_e s̈_e = −k s_e − b ṡ_e − F``); it dissipates
    ``b ṡ_e² + c_c ẇ²``. The compiled path evaluates the owner's whole effort, state
    derivatives and power in the mode from it (:mod:`pinext.compiled.layers`) with the laws
    below, which the Python path's :class:`pinext.contact.DynamicEnvironment` and
    :class:`pinext.contact.deformation.SeriesCompliance` call too."""

    block: FrameRows
    constants: np.ndarray


@register_jitable
def kelvin_voigt(stiffness, damping, compression, rate):
    """``F = k w + c ẇ`` [N]: a spring and a damper in parallel compressed by w at the rate ẇ
    (a contact layer, a tool's compliance; Vukobratović & Potkonjak §20.5.3, model (d))."""
    return stiffness * compression + damping * rate


@register_jitable
def series_rate(k_t, d_t, k_c, c_c, w, w_t, wdot):
    """``ẇ_t = (k_c (w − w_t) − k_t w_t + c_c ẇ) / (d_t + c_c)`` [m/s]: the compression rate of a
    tool's spring and damper in series with a surface's, both damped (the massless node
    between them in equilibrium; :class:`pinext.contact.deformation.SeriesCompliance`)."""
    return (k_c * (w - w_t) - k_t * w_t + c_c * wdot) / (d_t + c_c)


@register_jitable
def damper_power(damping, rate):
    """``c ẇ²`` [W]: the power a damper dissipates."""
    return damping * rate * rate


@register_jitable
def mass_acceleration(inverse_mass, stiffness, damping, s, rate, force):
    """``s̈_e = (−k s_e − b ṡ_e − F) / m_e`` [m/s²]: a dynamic environment's mass on its spring
    and damper, pushed back by the contact force F on the robot (Vukobratović & Potkonjak
    (20.94); 1/m_e = 0: an immobile surface)."""
    return (-stiffness * s - damping * rate - force) * inverse_mass


@register_jitable
def surface_gap(residual, y, env, layer):
    """A contact's approach gap [m] from its point's distance to the plane φ (the residual of
    a :data:`FRAME_NORMAL` row): ``φ − s_e + w``, the plane displaced with an environment's
    mass (s_e at ``y[env]``; env = −1: a fixed plane) and the layer's compression w in front
    of it (at ``y[layer]``; −1: no layer). Each path passes its own state and indices."""
    return residual - (y[env] if env >= 0 else 0.0) + (y[layer] if layer >= 0 else 0.0)
