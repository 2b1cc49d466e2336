"""Local coordinates on the configuration manifold for the integrators."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import pinocchio as pin

from ..dynamics.momentum import momentum_from_velocity, velocity_from_momentum
from .caches import cache as engine_cache

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
    """The global chart of a flat model (every joint Euclidean or an unbounded revolute one):
    the internal configuration is ``nv`` numbers, the Euclidean coordinates as they are and
    the angle θ of each unbounded revolute joint, whose public coordinates are (cos θ, sin θ).
    The chart covers the manifold once θ is unwrapped, so it never re-centres; its
    ``dIntegrate`` is the identity (SO(2) commutes), so dθ/dt = v."""

    linear_q: np.ndarray  # public q indices of the Euclidean coordinates
    linear_v: np.ndarray  # their internal indices (the velocity indices)
    cos_q: np.ndarray  # public q index of cos θ of each unbounded revolute joint (sin θ: + 1)
    angle_v: np.ndarray  # internal index of its θ (its velocity index)
    internal: np.ndarray  # public state index -> internal index; -1 for cos θ and sin θ

    def configuration(self, theta: np.ndarray, nq: int) -> np.ndarray:
        """The public configuration q (shape nq) of the internal coordinates θ (shape nv)."""
        q = np.empty(nq)
        q[self.linear_q] = theta[self.linear_v]
        angle = theta[self.angle_v]
        q[self.cos_q] = np.cos(angle)
        q[self.cos_q + 1] = np.sin(angle)
        return q

    def coordinates(self, q: np.ndarray, nv: int) -> np.ndarray:
        """The internal coordinates θ (shape nv) of the public configuration q."""
        theta = np.empty(nv)
        theta[self.linear_v] = q[self.linear_q]
        theta[self.angle_v] = np.arctan2(q[self.cos_q + 1], q[self.cos_q])
        return theta


def angles(system: System) -> Angles | None:
    """The System's global angle chart (:class:`Angles`, kept in the engine's cache), or
    None when a joint is curved (a quaternion, a planar joint): then the integrators run in
    local coordinates at an anchor (:class:`Chart`)."""
    cache = engine_cache(system, "chart")
    if "angles" not in cache:
        model = system.model
        joints = model.joints[1:]
        flat = all(joint.shortname() in _FLAT for joint in joints)
        linear_q: list[int] = []
        linear_v: list[int] = []
        cos_q: list[int] = []
        angle_v: list[int] = []
        for joint in joints if flat else ():
            if joint.nq == joint.nv:
                linear_q += range(joint.idx_q, joint.idx_q + joint.nq)
                linear_v += range(joint.idx_v, joint.idx_v + joint.nv)
            else:  # an unbounded revolute joint: (cos θ, sin θ)
                cos_q.append(joint.idx_q)
                angle_v.append(joint.idx_v)
        shift = model.nq - model.nv
        index = np.full(system.nx, -1, dtype=np.int64)
        index[linear_q] = linear_v
        index[model.nq :] = np.arange(model.nq, system.nx) - shift
        ints = [np.array(a, dtype=np.int64) for a in (linear_q, linear_v, cos_q, angle_v)]
        cache["angles"] = Angles(ints[0], ints[1], ints[2], ints[3], index) if flat else None
    return cache["angles"]


class Chart:
    """Local coordinates on the configuration manifold: ``q = integrate(anchor, delta)``.

    Configurations with quaternions (free-flyer, spherical joints) or planar joints are
    integrated in the tangent space at an anchor; the anchor moves at phase boundaries and
    whenever ``|delta|`` reaches :data:`CHART_RADIUS`, so ``q`` always stays on the manifold.
    For Euclidean models the chart is the identity; for flat ones (unbounded revolute joints
    besides Euclidean ones) it is the global angle chart (:class:`Angles`), which never
    re-centres and which the compiled path integrates too.
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
        self.flat = system.euclidean or self.angles is not None
        self.anchor = x[:nq].copy()
        self.shift = nq - nv  # public index = internal index + shift, after the q block
        self.nv = nv

    @property
    def index(self) -> np.ndarray | None:
        """Public state index -> internal index in a global chart (-1: no internal
        coordinate of its own, the cos θ and sin θ of an unbounded revolute joint); None
        for an anchored chart."""
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
            y[:nv] = self.angles.coordinates(x[:nq], nv)
        if self.momentum:
            y[nv : 2 * nv] = momentum_from_velocity(self.model, self.data, x[:nq], x[nq : nq + nv])
        return y

    def configuration(self, y: np.ndarray) -> np.ndarray:
        if self.system.euclidean:
            return y[: self.nv]
        if self.angles is not None:
            return self.angles.configuration(y[: self.nv], self.model.nq)
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
        jac = pin.dIntegrate(self.model, self.anchor, y[: self.nv], pin.ArgumentPosition.ARG1)
        rate = v.copy()  # dIntegrate is block-diagonal by joint: solve the curved blocks only
        c = self.curved
        rate[c] = np.linalg.solve(jac[np.ix_(c, c)], v[c])
        return rate


def chart_event(chart: Chart):
    """The event that re-centres the chart when |delta| reaches :data:`CHART_RADIUS`."""

    def g(t: float, y: np.ndarray) -> float:
        return CHART_RADIUS - float(np.max(np.abs(y[: chart.nv])))

    g.terminal = True  # type: ignore[attr-defined]
    g.direction = -1  # type: ignore[attr-defined]
    return g
