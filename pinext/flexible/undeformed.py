"""Celentano (2008) Remark 5 in the simulator: the kinetic energy of the undeformed geometry
(65)."""

from __future__ import annotations

from types import SimpleNamespace
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
        # the System's model: its armature (reflected rotor inertia of drives) is included
        self.mechanism_model = SimpleNamespace(model=system.model, joint_stiffness=system.stiffness)

    def mechanism(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(M(q̄), b̄(q, v) + g(q))`` of (65) in place of the exact ``(M(q), h(q, v))``."""
        mass = mass_matrix(self.mechanism_model, q, kinetic_energy="undeformed")
        gravity = pin.computeGeneralizedGravity(self.model, self.data, q)
        return mass, undeformed_bias(self.mechanism_model, q, v) + gravity

    def energy(self, x, q, v):
        exact = pin.computeKineticEnergy(self.model, self.data, q, v)
        approximate = mass_matrix(self.mechanism_model, q, kinetic_energy="undeformed")
        return 0.5 * v @ approximate @ v - exact
