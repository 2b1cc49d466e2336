"""Local coordinates on the configuration manifold for the integrators."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pinocchio as pin

from ..dynamics import rotations
from ..dynamics.momentum import momentum_from_velocity, velocity_from_momentum
from .caches import cache as engine_cache
from .events import Distances

if TYPE_CHECKING:
    from .system import System

#: Joint types whose block of ``dIntegrate`` (with respect to the tangent vector) is the
#: identity: Euclidean joints and unbounded revolute joints.
_FLAT = frozenset(
    f"JointModel{name}"
    for name in (
        *("RX", "RY", "RZ", "RevoluteUnaligned", "RUBX", "RUBY", "RUBZ"),
        *("RevoluteUnboundedUnaligned", "PX", "PY", "PZ", "PrismaticUnaligned", "Translation"),
    )
)

#: Largest tangent-space excursion [rad or m] from the anchor before the chart is re-centred.
CHART_RADIUS = 1.0


class Angles(NamedTuple):
    """The chart of a model without planar joints: the internal configuration is ``nv``
    numbers — the Euclidean coordinates as they are (a free flyer's position in the world
    among them), the angle θ of each unbounded revolute joint, whose public coordinates are
    (cos θ, sin θ), and the rotation vector φ of each quaternion (free flyer, spherical
    joint) at an anchor orientation q₀, ``q = q₀ ⊗ exp(φ)`` (:mod:`pinext.dynamics.rotations`).
    Without quaternions the chart is global (θ unwrapped covers the manifold) and never
    re-centres; with them, the rotation vectors re-centre at :data:`CHART_RADIUS`. The rates:
    ``θ̇ = v`` (SO(2) commutes), a free flyer's ``ṗ = R v_lin`` (its velocity is in its own
    frame), ``φ̇ = J_r(φ)⁻¹ ω``."""

    linear_q: np.ndarray  # public q indices of the Euclidean coordinates
    linear_v: np.ndarray  # their internal indices (the velocity indices)
    cos_q: np.ndarray  # public q index of cos θ of each unbounded revolute joint (sin θ: + 1)
    angle_v: np.ndarray  # internal index of its θ (its velocity index)
    internal: np.ndarray  # public state index -> internal index; -1 for cos θ, sin θ, quaternions
    quat_q: np.ndarray = np.zeros(0, dtype=np.int64)  # public index of each quaternion's x
    rot_v: np.ndarray = np.zeros(0, dtype=np.int64)  # internal index of its φ (velocity index)
    fly_v: np.ndarray = np.zeros(0, dtype=np.int64)  # velocity index of each free flyer
    fly_quat: np.ndarray = np.zeros(0, dtype=np.int64)  # its quaternion (index into quat_q)

    @property
    def rotations(self) -> bool:
        """Whether the chart has rotation vectors (it re-centres)."""
        return bool(self.rot_v.size)

    def configuration(self, theta: np.ndarray, nq: int, anchor: np.ndarray | None = None):
        """The public configuration q (shape nq) of the internal coordinates θ (shape nv);
        ``anchor``: the configuration whose quaternions anchor the rotation vectors (None:
        the identity)."""
        q = np.empty(nq)
        q[self.linear_q] = theta[self.linear_v]
        angle = theta[self.angle_v]
        q[self.cos_q] = np.cos(angle)
        q[self.cos_q + 1] = np.sin(angle)
        for iq, iv in zip(self.quat_q.tolist(), self.rot_v.tolist(), strict=True):
            base = _IDENTITY if anchor is None else anchor
            rotations.exp_at(base, 0 if anchor is None else iq, theta, iv, q, iq)
        return q

    def coordinates(self, q: np.ndarray, nv: int, anchor: np.ndarray | None = None):
        """The internal coordinates θ (shape nv) of the public configuration q."""
        theta = np.empty(nv)
        theta[self.linear_v] = q[self.linear_q]
        theta[self.angle_v] = np.arctan2(q[self.cos_q + 1], q[self.cos_q])
        for iq, iv in zip(self.quat_q.tolist(), self.rot_v.tolist(), strict=True):
            base = _IDENTITY if anchor is None else anchor
            rotations.log_at(base, 0 if anchor is None else iq, q, iq, theta, iv)
        return theta

    def rate(self, q: np.ndarray, theta: np.ndarray, v: np.ndarray) -> np.ndarray:
        """dθ/dt at the configuration q = configuration(θ) for the velocity v."""
        out = v.copy()
        for iv, k in zip(self.fly_v.tolist(), self.fly_quat.tolist(), strict=True):
            rotations.rotate(q, int(self.quat_q[k]), v, iv, out, iv)
        for iv in self.rot_v.tolist():
            rotations.jr_inverse(theta, iv, v, iv, out, iv)
        return out


#: The identity quaternion (x, y, z, w), the anchor of a chart without one.
_IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])
#: Joints with a quaternion, integrated as rotation vectors in :class:`Angles`.
_QUATERNION = frozenset({"JointModelFreeFlyer", "JointModelSpherical"})


def angles(system: System) -> Angles | None:
    """The System's chart of :class:`Angles` (kept in the engine's cache), or None when a
    joint is planar: then the integrators run in Pinocchio's local coordinates at an anchor
    (:class:`Chart`)."""
    cache = engine_cache(system, "chart")
    if "angles" not in cache:
        model = system.model
        joints = model.joints[1:]
        usable = all(joint.shortname() in _FLAT | _QUATERNION for joint in joints)
        linear_q: list[int] = []
        linear_v: list[int] = []
        cos_q: list[int] = []
        angle_v: list[int] = []
        quat_q: list[int] = []
        rot_v: list[int] = []
        fly_v: list[int] = []
        fly_quat: list[int] = []
        for joint in joints if usable else ():
            kind = joint.shortname()
            if kind == "JointModelFreeFlyer":  # (p, quaternion): p as it is, φ at an anchor
                linear_q += range(joint.idx_q, joint.idx_q + 3)
                linear_v += range(joint.idx_v, joint.idx_v + 3)
                fly_v.append(joint.idx_v)
                fly_quat.append(len(quat_q))
                quat_q.append(joint.idx_q + 3)
                rot_v.append(joint.idx_v + 3)
            elif kind == "JointModelSpherical":
                quat_q.append(joint.idx_q)
                rot_v.append(joint.idx_v)
            elif joint.nq == joint.nv:
                linear_q += range(joint.idx_q, joint.idx_q + joint.nq)
                linear_v += range(joint.idx_v, joint.idx_v + joint.nv)
            else:  # an unbounded revolute joint: (cos θ, sin θ)
                cos_q.append(joint.idx_q)
                angle_v.append(joint.idx_v)
        shift = model.nq - model.nv
        index = np.full(system.nx, -1, dtype=np.int64)
        index[linear_q] = linear_v
        index[model.nq :] = np.arange(model.nq, system.nx) - shift
        ints = [
            np.array(a, dtype=np.int64)
            for a in (linear_q, linear_v, cos_q, angle_v, quat_q, rot_v, fly_v, fly_quat)
        ]
        cache["angles"] = (
            Angles(ints[0], ints[1], ints[2], ints[3], index, *ints[4:]) if usable else None
        )
    return cache["angles"]


class Chart:
    """Local coordinates on the configuration manifold: ``q = integrate(anchor, delta)``.

    For Euclidean models the chart is the identity; for models without planar joints it is
    :class:`Angles` (the rotation vectors of quaternions anchored at the segment's start,
    the rest global), which the compiled path integrates too; with a planar joint, every
    coordinate is Pinocchio's tangent vector at the anchor (``pin.integrate``). The anchor
    moves at phase boundaries and whenever an anchored coordinate reaches
    :data:`CHART_RADIUS`, so ``q`` always stays on the manifold.
    """

    def __init__(self, system: System, x: np.ndarray, momentum: bool = False) -> None:
        self.system = system
        self.model = system.model
        # one Data for every chart of the System (a chart per segment; a Data of a large
        # model holds megabytes of C++ arrays that the garbage collector does not see)
        scratch = engine_cache(system, "chart")
        if "data" not in scratch:
            scratch["data"] = self.model.createData()
            # the DOFs whose block of dIntegrate is not the identity (quaternions, planar
            # joints); Euclidean and unbounded revolute joints (SO(2) commutes) have it
            scratch["curved"] = np.array(
                [
                    joint.idx_v + k
                    for joint in self.model.joints[1:]
                    if joint.shortname() not in _FLAT
                    for k in range(joint.nv)
                ],
                dtype=int,
            )
        self.data = scratch["data"]
        self.curved = scratch["curved"]
        self.angles = None if system.euclidean else angles(system)
        nq, nv = self.model.nq, self.model.nv
        self.momentum = momentum
        self.identity = system.euclidean and not momentum
        #: Whether the integrators run in a global chart (Euclidean or angle coordinates);
        #: otherwise the anchor re-centres (:func:`chart_event`).
        self.flat = system.euclidean or (self.angles is not None and not self.angles.rotations)
        self.anchor = x[:nq].copy()
        self.shift = nq - nv  # public index = internal index + shift, after the q block
        self.nv = nv
        if "recentring" not in scratch:
            # the internal coordinates that re-centre at CHART_RADIUS (all of Pinocchio's
            # tangent vector with a planar joint; the rotation vectors of Angles)
            anchored = (
                np.arange(nv)
                if self.angles is None
                else (self.angles.rot_v[:, None] + np.arange(3)).reshape(-1)
            )
            scratch["recentring"] = Distances.within(anchored, CHART_RADIUS)
        #: The form of the event that re-centres the chart (:meth:`Distances.within` of the
        #: anchored coordinates at :data:`CHART_RADIUS`); None for a flat chart.
        self.recentring: Distances | None = None if self.flat else scratch["recentring"]

    @property
    def index(self) -> np.ndarray | None:
        """Public state index -> internal index in the chart of :class:`Angles` (-1: no
        internal coordinate of its own: cos θ and sin θ, quaternions); None for Pinocchio's
        anchored tangent vector."""
        if self.angles is not None:
            return self.angles.internal
        return np.arange(self.system.nx) if self.system.euclidean else None

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        if self.identity:
            return x.copy()
        nq, nv = self.model.nq, self.nv
        y = np.concatenate([np.zeros(nv), x[nq:]])
        if self.system.euclidean:
            y[:nv] = x[:nq]
        elif self.angles is not None:
            y[:nv] = self.angles.coordinates(x[:nq], nv, self.anchor)
        if self.momentum:
            y[nv : 2 * nv] = momentum_from_velocity(self.model, self.data, x[:nq], x[nq : nq + nv])
        return y

    def configuration(self, y: np.ndarray) -> np.ndarray:
        if self.system.euclidean:
            return y[: self.nv]
        if self.angles is not None:
            return self.angles.configuration(y[: self.nv], self.model.nq, self.anchor)
        return pin.integrate(self.model, self.anchor, y[: self.nv])

    def to_public(self, y: np.ndarray) -> np.ndarray:
        if self.identity:
            return y
        q = self.configuration(y)
        x = np.concatenate([q, y[self.nv :]])
        if self.momentum:
            nq, nv = self.model.nq, self.nv
            x[nq : nq + nv] = velocity_from_momentum(self.model, self.data, q, y[nv : 2 * nv])
        return x

    def q_rate(self, y: np.ndarray, v: np.ndarray) -> np.ndarray:
        """d(delta)/dt for generalized velocity v at q = integrate(anchor, delta)."""
        if self.system.euclidean or not self.curved.size:
            return v
        if self.angles is not None:
            return self.angles.rate(self.configuration(y), y[: self.nv], v)
        jac = pin.dIntegrate(self.model, self.anchor, y[: self.nv], pin.ArgumentPosition.ARG1)
        rate = v.copy()  # dIntegrate is block-diagonal by joint: solve the curved blocks only
        c = self.curved
        rate[c] = np.linalg.solve(jac[np.ix_(c, c)], v[c])
        return rate


def chart_event(chart: Chart):
    """The event that re-centres the chart when an anchored coordinate reaches
    :data:`CHART_RADIUS` (:attr:`Chart.recentring`)."""
    assert chart.recentring is not None
    value = chart.recentring.value

    def g(t: float, y: np.ndarray) -> float:
        return value(t, y)

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = -1  # type: ignore[attr-defined]
    return g
