"""Celentano (2008) Remark 5 in the simulator: the kinetic energy of the undeformed geometry
(65)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from ..simulation.component import Component
from .modal import mass_matrix, undeformed_bias


class UndeformedKineticEnergy(Component):
    """Simulate a flexible robot with the deformation angles neglected in the kinetic energy.

    Celentano (2008), (65): the inertia matrix is evaluated at :math:`\\bar q` (every elastic angle
    set to zero) while elasticity and gravity use the actual :math:`q`:

    .. math::

        M(\\bar q)\\dot v + \\bar b(q, v) + g(q) = \\tau - K (q - q_0) - D v

    with :math:`\\bar b` of :func:`pinext.flexible.undeformed_bias`. Pass it to the System,
    ``System(robot, components=[UndeformedKineticEnergy(robot)])``, and compare the trajectory
    with the exact model's. Its :meth:`energy` replaces the exact kinetic energy by
    :math:`\\tfrac12 v^T M(\\bar q) v`, so :meth:`pinext.Trajectory.energy_balance` audits the
    approximate model (which conserves its own energy).

    Args:
        robot: The flexible :class:`pinext.Robot`.
    """

    name = "undeformed_kinetic_energy"

    def __init__(self, robot: Any) -> None:
        super().__init__()
        self.robot = robot

    def bind(self, system: Any) -> None:
        self.model = system.model
        self.data = system.model.createData()

    def constrained_acceleration(self, t, x, q, v, tau, mode):
        mass = mass_matrix(self.robot, q, kinetic_energy="undeformed")
        gravity = pin.computeGeneralizedGravity(self.model, self.data, q)
        return np.linalg.solve(mass, tau - undeformed_bias(self.robot, q, v) - gravity)

    def energy(self, x, q, v):
        exact = pin.computeKineticEnergy(self.model, self.data, q, v)
        return 0.5 * v @ mass_matrix(self.robot, q, kinetic_energy="undeformed") @ v - exact
