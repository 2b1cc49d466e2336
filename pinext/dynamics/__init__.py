"""pinext.dynamics: Gibbs–Appell dynamics, Gauss's principle and the momentum scheme."""

from pinext.dynamics.gauss import (
    AccelerationConstraint,
    GaussResult,
    PfaffianConstraint,
    PointContact,
    gauss_forward_dynamics,
)
from pinext.dynamics.gibbs_appell import (
    AccelerationEnergyTerms,
    acceleration_energy,
    acceleration_energy_terms,
    appell_inverse_dynamics,
    christoffel_symbols,
    generalized_gravity,
    mass_matrix_derivative,
)
from pinext.dynamics.momentum import (
    MomentumRHS,
    hamel_term,
    kinetic_energy,
    kinetic_energy_gradient,
    kinetic_energy_gradient_error_bound,
    momentum_from_velocity,
    momentum_rhs,
    velocity_from_momentum,
)
from pinext.dynamics.task_space import TaskSpaceDynamics, task_space_dynamics

__all__ = [
    "TaskSpaceDynamics",
    "AccelerationConstraint",
    "AccelerationEnergyTerms",
    "GaussResult",
    "MomentumRHS",
    "PfaffianConstraint",
    "PointContact",
    "acceleration_energy",
    "acceleration_energy_terms",
    "appell_inverse_dynamics",
    "christoffel_symbols",
    "gauss_forward_dynamics",
    "generalized_gravity",
    "hamel_term",
    "kinetic_energy",
    "kinetic_energy_gradient",
    "kinetic_energy_gradient_error_bound",
    "mass_matrix_derivative",
    "momentum_from_velocity",
    "momentum_rhs",
    "task_space_dynamics",
    "velocity_from_momentum",
]
