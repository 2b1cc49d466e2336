"""Functional coordinates s(q) of a contact task, Vukobratović & Potkonjak §20.5.2 (20.83)–(20.86).

The functional coordinates are the pose of a robot frame E (the tool) relative to a frame O
fixed to the object being processed, which may move by a given law (the non-stationary case
s = s(q, t) of (20.83)):

.. math::

    s = [x, y, z, \\mathrm{roll}, \\mathrm{pitch}, \\mathrm{yaw}]^T,\\qquad
    p_{rel} = R_O^T (p_E - p_O),\\qquad
    R_{rel} = R_O^T R_E = R_z(\\mathrm{yaw}) R_y(\\mathrm{pitch}) R_x(\\mathrm{roll}).

They split by name into the constrained coordinates s^c (m of them, the constraint is
s^c = 0, (20.87)) and the free ones s^f. Velocities and accelerations follow (20.84)–(20.86):

.. math::

    \\dot s = J(q) \\dot q + b(t),\\qquad \\ddot s = J(q) \\ddot q + A(q, \\dot q, t)

where ``b`` is the explicit time derivative of a moving object frame (zero when O is fixed).
Angles of an orientation are not integrable velocities (DESIGN.md): the three rotational
rows of J and A are those of the relative angular velocity expressed in O,
``R_O^T (omega_E - omega_O)``, and the position-level residual of a rotational constraint is
taken from the rotation matrix (log map, or the alignment of the free axis), so that its
derivative on the constraint manifold is exactly that row of ``J v + b``.

Pinocchio computes everything: ``computeAllTerms`` (placements, velocities, joint Jacobians,
bias accelerations), ``getFrameJacobian`` and ``getFrameClassicalAcceleration`` in
``LOCAL_WORLD_ALIGNED``.

Surfaces:

* :func:`plane` — the writing task of Fig. 20.13a: z normal to the plane, m = 1;
* :func:`peg_in_hole` — Fig. 20.13b: x, y, roll, pitch constrained, m = 4, approach along z;
* :func:`point_contact` — 3D (x, y, z) or 6D (all) point constraints;
* :class:`ImplicitSurface` — any surface Φ(p) = 0 with its gradient (McClamroch 1986, (7)–(10)).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..exceptions import InvalidParameter
from ..model import resolve_frame
from ..validation import vector

#: Names of the six functional coordinates, in the order of s.
COORDINATE_NAMES = ("x", "y", "z", "roll", "pitch", "yaw")
_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

#: A moving object frame: ``law(t) -> (placement, velocity, acceleration)`` with the
#: placement a ``pin.SE3`` (world), velocity ``[v_O (3), omega_O (3)]`` [m/s, rad/s] and
#: acceleration ``[a_O (3), alpha_O (3)]`` [m/s^2, rad/s^2], all in world axes
#: (``v_O`` and ``a_O`` are the time derivatives of the origin ``p_O``).
FrameLaw = Callable[[float], tuple[pin.SE3, np.ndarray, np.ndarray]]


class ConstraintKinematics(NamedTuple):
    """The constrained part of the functional coordinates at one instant.

    The velocity of the constrained coordinates is ``J v + b`` and their acceleration
    ``J a + A`` (20.86).
    """

    residual: np.ndarray
    """Shape (m,). Position-level value of s^c [m or rad]; zero on the constraint."""
    jacobian: np.ndarray
    """Shape (m, nv). J_c."""
    drift: np.ndarray
    """Shape (m,). A_c = J_c-dot v (+ moving-frame terms) [m/s^2 or rad/s^2]."""
    bias: np.ndarray
    """Shape (m,). b_c, the explicit time derivative (moving object frame) [m/s or rad/s]."""

    def rate(self, v: np.ndarray) -> np.ndarray:
        """Shape (m,). ṡ^c = J_c v + b_c."""
        return self.jacobian @ v + self.bias


class Constraint(abc.ABC):
    """A holonomic constraint s^c(q, t) = 0 on a robot frame (the base of every surface).

    Attributes:
        frame: Name (or index) of the robot frame E that touches the object.
        m: Number of constrained coordinates.
        approach: Index, among the six functional coordinates, of the coordinate whose
            zero crossing from above starts the contact (the impact); ``None`` when the
            constraint is the approach coordinate itself (m = 1).
        names: Names of the constrained coordinates (for outputs).
    """

    frame: str | int
    m: int
    names: tuple[str, ...]

    def bind(self, model: pin.Model) -> int:
        """Resolve the frame name; called once per model."""
        self.frame_id = resolve_frame(model, self.frame)
        return self.frame_id

    def _frame_id(self, model: pin.Model) -> int:
        fid = getattr(self, "frame_id", None)
        if fid is None or fid >= model.nframes:
            fid = self.bind(model)
        return fid

    @abc.abstractmethod
    def evaluate(self, model: pin.Model, data: pin.Data, t: float) -> ConstraintKinematics:
        """Kinematics of s^c from a data on which ``computeAllTerms(q, v)`` was called."""

    def approach_gap(self, model: pin.Model, data: pin.Data, t: float) -> float:
        """The signed distance whose zero crossing (downwards) is the contact [m].

        Defaults to the single constrained coordinate (m = 1); data must hold the frame
        placements (``framesForwardKinematics`` or ``computeAllTerms``).
        """
        return float(self.evaluate(model, data, t).residual[0])

    def kinematics(
        self,
        model: pin.Model,
        data: pin.Data,
        q: np.ndarray,
        v: np.ndarray | None = None,
        t: float = 0.0,
    ) -> ConstraintKinematics:
        """s^c, J_c, A_c, b_c at (q, v, t) (calls ``pin.computeAllTerms``)."""
        v = np.zeros(model.nv) if v is None else np.asarray(v, dtype=float)
        pin.computeAllTerms(model, data, q, v)
        return self.evaluate(model, data, t)

    def acceleration_equation(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray, t: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(A, r)`` of the acceleration-level constraint ``A a = r``: ``(J_c, -A_c)`` of
        (20.86)–(20.89). The form :func:`pinext.gauss_forward_dynamics` takes, so every
        constraint of a contact task also constrains Gauss's principle."""
        kin = self.kinematics(model, data, q, v, t)
        return kin.jacobian, -kin.drift

    def gap(self, model: pin.Model, data: pin.Data, q: np.ndarray, t: float = 0.0) -> float:
        """:meth:`approach_gap` at configuration q (calls ``framesForwardKinematics``)."""
        pin.framesForwardKinematics(model, data, q)
        return self.approach_gap(model, data, t)


class FunctionalCoordinates(Constraint):
    """The pose of a robot frame relative to an object frame, split into s^c and s^f.

    .. math::

        s^c = 0 \\quad (20.87),\\qquad \\ddot s^c = J_c \\ddot q + A_c \\quad (20.86)

    Args:
        frame: The robot frame E (e.g. ``"tool"``).
        placement: The object frame O in the world: a ``pin.SE3`` (stationary problem) or
            a law ``t -> (SE3, velocity (6,), acceleration (6,))`` (non-stationary, see
            :data:`FrameLaw`).
        constrained: Names among x, y, z, roll, pitch, yaw (order free).
        approach: Name of the coordinate whose downward zero crossing is the contact (the
            approach phase ends); default: the constrained coordinate when m = 1, else z.
        tool: Placement of the touching point in the frame E (default identity).

    Raises:
        InvalidParameter: Unknown or repeated coordinate names, or none.
    """

    def __init__(
        self,
        frame: str | int,
        placement: pin.SE3 | FrameLaw | None = None,
        constrained: Sequence[str] = ("z",),
        *,
        approach: str | None = None,
        tool: pin.SE3 | None = None,
    ) -> None:
        names = tuple(constrained)
        bad = [n for n in names if n not in COORDINATE_NAMES]
        if bad or not names or len(set(names)) != len(names):
            raise InvalidParameter(
                f"constrained coordinates must be distinct names among "
                f"{', '.join(COORDINATE_NAMES)}; got {list(names)}"
            )
        self.frame = frame
        self.names = names
        self.m = len(names)
        self.index = np.array([COORDINATE_NAMES.index(n) for n in names])
        if approach is None:
            approach = names[0] if self.m == 1 else "z"
        if approach not in COORDINATE_NAMES[:3]:
            raise InvalidParameter(f"approach must be one of x, y, z; got {approach!r}")
        self.approach = COORDINATE_NAMES.index(approach)
        self.law: FrameLaw | None = None
        self.placement = pin.SE3.Identity()
        if placement is None:
            pass
        elif isinstance(placement, pin.SE3):
            self.placement = placement.copy()
        elif callable(placement):
            self.law = placement
        else:
            raise InvalidParameter("placement must be a pin.SE3 or a law t -> (SE3, v, a)")
        self.tool = pin.SE3.Identity() if tool is None else tool.copy()
        rot = [i - 3 for i in self.index if i >= 3]
        self._rot = np.array(rot, dtype=int)
        self._pos = np.array([i for i in self.index if i < 3], dtype=int)
        self._rows_pos = np.array([k for k, i in enumerate(self.index) if i < 3], dtype=int)
        self._rows_rot = np.array([k for k, i in enumerate(self.index) if i >= 3], dtype=int)
        free_rot = sorted(set(range(3)) - set(rot))
        self._free_axis = free_rot[0] if len(rot) == 2 else None

    # -- object frame --------------------------------------------------------------------
    def object_frame(self, t: float) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        """Placement, velocity [v_O, omega_O] and acceleration [a_O, alpha_O] of O (world)."""
        if self.law is None:
            return self.placement, np.zeros(6), np.zeros(6)
        placement, vel, acc = self.law(t)
        return placement, np.asarray(vel, dtype=float), np.asarray(acc, dtype=float)

    def _tool_point(self, model: pin.Model, data: pin.Data):
        fid = self._frame_id(model)
        pin.updateFramePlacement(model, data, fid)
        oMf = data.oMf[fid]
        J = pin.getFrameJacobian(model, data, fid, _LWA).reshape(6, model.nv)
        vel = pin.getFrameVelocity(model, data, fid, _LWA)
        acc = pin.getFrameClassicalAcceleration(model, data, fid, _LWA)
        v_lin, w, a_lin, alpha = vel.linear, vel.angular, acc.linear, acc.angular
        if self.tool.isIdentity():
            return oMf, J, v_lin, w, a_lin, alpha
        r = oMf.rotation @ self.tool.translation  # lever in world axes
        placement = oMf * self.tool
        J = J.copy()
        J[:3] -= pin.skew(r) @ J[3:]
        v_lin = v_lin + np.cross(w, r)
        a_lin = a_lin + np.cross(alpha, r) + np.cross(w, np.cross(w, r))
        return placement, J, v_lin, w, a_lin, alpha

    # -- the six coordinates -------------------------------------------------------------
    def coordinates(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, t: float = 0.0
    ) -> np.ndarray:
        """The six functional coordinates s (20.83) [m, rad] (angles: roll, pitch, yaw)."""
        pin.framesForwardKinematics(model, data, q)
        return self._coordinates(model, data, t)

    def _coordinates(self, model: pin.Model, data: pin.Data, t: float) -> np.ndarray:
        fid = self._frame_id(model)
        oMe = data.oMf[fid] * self.tool
        oMo, _, _ = self.object_frame(t)
        rel = oMo.actInv(oMe)
        return np.concatenate([rel.translation, pin.rpy.matrixToRpy(rel.rotation)])

    def derivatives(
        self, model: pin.Model, data: pin.Data, q: np.ndarray, v: np.ndarray, t: float = 0.0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """J (6, nv), b (6,) and A (6,) of all six coordinates (20.84).

        Rows 3–5 are the relative angular velocity in O (not the rate of the angles).
        """
        pin.computeAllTerms(model, data, q, v)
        return self._derivatives(model, data, t)

    def _derivatives(self, model: pin.Model, data: pin.Data, t: float):
        oMe, J, v_lin, w, a_lin, alpha = self._tool_point(model, data)
        oMo, vel_o, acc_o = self.object_frame(t)
        Rt = oMo.rotation.T
        Jf = np.empty_like(J)
        Jf[:3] = Rt @ J[:3]
        Jf[3:] = Rt @ J[3:]
        if self.law is None:
            return Jf, np.zeros(6), np.concatenate([Rt @ a_lin, Rt @ alpha])
        v_o, w_o, a_o, alpha_o = vel_o[:3], vel_o[3:], acc_o[:3], acc_o[3:]
        r = oMe.translation - oMo.translation
        w_rel = v_lin - v_o - np.cross(w_o, r)
        b = np.concatenate([-Rt @ (v_o + np.cross(w_o, r)), -Rt @ w_o])
        A_pos = (
            a_lin - a_o - np.cross(alpha_o, r) - np.cross(w_o, v_lin - v_o) - np.cross(w_o, w_rel)
        )
        A_rot = alpha - alpha_o - np.cross(w_o, w - w_o)
        return Jf, b, np.concatenate([Rt @ A_pos, Rt @ A_rot])

    # -- the constrained part ------------------------------------------------------------
    def evaluate(self, model: pin.Model, data: pin.Data, t: float) -> ConstraintKinematics:
        Jf, b, A = self._derivatives(model, data, t)
        residual = self._residual(model, data, t)
        return ConstraintKinematics(residual, Jf[self.index], A[self.index], b[self.index])

    def _residual(self, model: pin.Model, data: pin.Data, t: float) -> np.ndarray:
        fid = self._frame_id(model)
        oMe = data.oMf[fid] * self.tool
        oMo, _, _ = self.object_frame(t)
        rel = oMo.actInv(oMe)
        res = np.empty(self.m)
        res[self._rows_pos] = rel.translation[self._pos]
        if self._rot.size:
            R = rel.rotation
            if self._free_axis is not None:
                e = np.zeros(3)
                e[self._free_axis] = 1.0
                rot = np.cross(e, R @ e)  # alignment of the free axis: derivative = omega
            else:
                rot = pin.log3(R)
            res[self._rows_rot] = rot[self._rot]
        return res

    def approach_gap(self, model: pin.Model, data: pin.Data, t: float) -> float:
        fid = self._frame_id(model)
        oMe = pin.updateFramePlacement(model, data, fid) * self.tool
        oMo, _, _ = self.object_frame(t)
        return float(oMo.actInv(oMe).translation[self.approach])

    def split(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(s^f, s^c) of a six-vector s (20.85)–(20.86)."""
        s = np.asarray(s)
        free = [i for i in range(6) if i not in self.index]
        return s[free], s[self.index]


class ImplicitSurface(Constraint):
    """A point of the robot on a surface Φ(p) = 0, McClamroch (1986) (7)–(10), m = 1.

    .. math::

        s^c = \\Phi(p(q)),\\quad J_c = D(p) J_p(q),\\quad
        A_c = D(p) \\ddot p_{bias} + \\dot p^T \\nabla^2\\Phi\\, \\dot p

    with ``D = dΦ/dp`` (9), ``J_p`` the translational frame Jacobian (10) and
    ``p̈_bias`` its classical acceleration bias. The contact force on the robot is
    ``f = D^T π`` (8); the reported force is π.

    Args:
        frame: The robot frame whose origin touches the surface.
        phi: Φ(p) [m], positive on the side the robot comes from.
        gradient: D(p) = ∂Φ/∂p, shape (3,).
        hessian: ∂²Φ/∂p², shape (3, 3); default: central differences of ``gradient``.
    """

    def __init__(
        self,
        frame: str | int,
        phi: Callable[[np.ndarray], float],
        gradient: Callable[[np.ndarray], np.ndarray],
        hessian: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        self.frame = frame
        self.phi = phi
        self.gradient = gradient
        self.hessian = hessian
        self.m = 1
        self.names = ("phi",)

    def _curvature(self, p: np.ndarray, pdot: np.ndarray) -> float:
        if self.hessian is not None:
            return float(pdot @ np.asarray(self.hessian(p)) @ pdot)
        speed = float(np.linalg.norm(pdot))
        if speed == 0.0:
            return 0.0
        h = 1e-5 / speed
        up, down = self.gradient(p + h * pdot), self.gradient(p - h * pdot)
        dg = (np.asarray(up) - np.asarray(down)) / (2 * h)
        return float(dg @ pdot)

    def evaluate(self, model: pin.Model, data: pin.Data, t: float) -> ConstraintKinematics:
        fid = self._frame_id(model)
        pin.updateFramePlacement(model, data, fid)
        p = data.oMf[fid].translation.copy()
        J = pin.getFrameJacobian(model, data, fid, _LWA).reshape(6, model.nv)[:3]
        vel = pin.getFrameVelocity(model, data, fid, _LWA).linear
        acc = pin.getFrameClassicalAcceleration(model, data, fid, _LWA).linear
        D = np.asarray(self.gradient(p), dtype=float).reshape(3)
        return ConstraintKinematics(
            np.array([float(self.phi(p))]),
            (D @ J)[None, :],
            np.array([D @ acc + self._curvature(p, vel)]),
            np.zeros(1),
        )


# -- surfaces ------------------------------------------------------------------------------
def _frame_with_z(
    point: Sequence[float] | np.ndarray, normal: Sequence[float] | np.ndarray
) -> pin.SE3:
    n = vector("normal", normal, 3, what="the plane normal, world axes")
    point = vector("point", point, 3, what="a point of the plane [m], world axes")
    norm = np.linalg.norm(n)
    if norm == 0:
        raise InvalidParameter("the plane normal must be nonzero")
    n = n / norm
    helper = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - (helper @ n) * n
    x /= np.linalg.norm(x)
    y = np.cross(n, x)
    return pin.SE3(np.column_stack([x, y, n]), np.asarray(point, dtype=float))


def plane(
    frame: str | int,
    point: Sequence[float] | np.ndarray = (0.0, 0.0, 0.0),
    normal: Sequence[float] | np.ndarray = (0.0, 0.0, 1.0),
    *,
    tool: pin.SE3 | None = None,
) -> FunctionalCoordinates:
    """The writing-task surface of Fig. 20.13a: s^c = [z], m = 1.

    Args:
        frame: The robot frame that touches the plane (e.g. a pen tip).
        point: A point of the plane [m] (world).
        normal: The normal pointing to the robot's side (world); z of the object frame.
        tool: Placement of the touching point in ``frame``.
    """
    return FunctionalCoordinates(frame, _frame_with_z(point, normal), ("z",), tool=tool)


def peg_in_hole(
    frame: str | int, hole: pin.SE3, *, tool: pin.SE3 | None = None
) -> FunctionalCoordinates:
    """The peg-in-hole task of Fig. 20.13b: s^c = [x, y, roll, pitch], m = 4.

    The hole axis is z of ``hole`` (pointing out of the hole); the peg axis is z of the robot
    frame. Free: the insertion depth z and the rotation about the axis (yaw). The approach
    ends when z crosses zero (the peg enters the hole).
    """
    return FunctionalCoordinates(frame, hole, ("x", "y", "roll", "pitch"), approach="z", tool=tool)


def point_contact(
    frame: str | int, placement: pin.SE3 | None = None, *, dim: int = 3
) -> FunctionalCoordinates:
    """A point fixed in the world (``dim`` = 3) or a welded frame (``dim`` = 6).

    The 3D case is Pinocchio's ``CONTACT_3D`` in ``LOCAL_WORLD_ALIGNED`` when ``placement``
    has the world's axes; the 6D case is ``CONTACT_6D``.
    """
    if dim not in (3, 6):
        raise InvalidParameter(f"dim must be 3 or 6, got {dim}")
    return FunctionalCoordinates(frame, placement, COORDINATE_NAMES[:dim], approach="z")
