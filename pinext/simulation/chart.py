"""Local coordinates on the configuration manifold for the integrators."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


class Chart:
    """Local coordinates on the configuration manifold: ``q = integrate(anchor, delta)``.

    Configurations with quaternions (free-flyer, spherical joints) or unbounded revolute joints
    are integrated in the tangent space at an anchor; the anchor moves at phase boundaries and
    whenever ``|delta|`` reaches :data:`_CHART_RADIUS`, so ``q`` always stays on the manifold.
    For Euclidean models the chart is the identity.
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
        nq, nv = self.model.nq, self.model.nv
        self.momentum = momentum
        self.identity = system.euclidean and not momentum
        self.anchor = x[:nq].copy()
        self.shift = nq - nv  # public index = internal index + shift, after the q block
        self.nv = nv

    def to_internal(self, x: np.ndarray) -> np.ndarray:
        if self.identity:
            return x.copy()
        nq, nv = self.model.nq, self.nv
        y = np.concatenate([np.zeros(nv), x[nq:]])
        if self.system.euclidean:
            y[:nv] = x[:nq]
        if self.momentum:
            y[nv : 2 * nv] = momentum_from_velocity(self.model, self.data, x[:nq], x[nq : nq + nv])
        return y

    def configuration(self, y: np.ndarray) -> np.ndarray:
        if self.system.euclidean:
            return y[: self.nv]
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
