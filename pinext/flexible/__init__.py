"""Flexible links: rigid sublinks joined by elastic joints (Celentano 2008, §5), modal analysis."""

from .modal import (
    ModalResult,
    forward_dynamics,
    mass_matrix,
    mode_shapes,
    natural_frequencies,
    static_deflection,
    undeformed_bias,
)
from .sublinks import (
    FlexibleExpansion,
    FlexibleLink,
    expand_configuration,
    expand_flexible,
    rigid_configuration,
)
from .undeformed import UndeformedKineticEnergy

__all__ = [
    "FlexibleExpansion",
    "FlexibleLink",
    "ModalResult",
    "UndeformedKineticEnergy",
    "expand_configuration",
    "expand_flexible",
    "forward_dynamics",
    "mass_matrix",
    "mode_shapes",
    "natural_frequencies",
    "rigid_configuration",
    "static_deflection",
    "undeformed_bias",
]
