"""pinext: what Pinocchio lacks from the classic robot-dynamics literature.

Pinocchio does the rigid-body algorithms; pinext adds the acceleration-energy (Gibbs-Appell)
formulation, flexible links as rigid sublinks, DC motors and elastic transmissions, contact
tasks with impacts, an event-driven simulator and browser playback.

A word on vocabulary: pinext uses Pinocchio's words. *Inverse dynamics* maps motion to
torques (``rnea``), *forward dynamics* maps torques to accelerations (``aba``);
Vukobratović & Potkonjak call these the other way round.
"""

from . import (  # noqa: F401 - subpackages
    constraints,
    contact,
    control,
    exceptions,
    linear_models,
    planning,
    tasks,
)
from .assembly import assemble, free_body
from .constraints import (
    ConstraintProjection,
    Loop,
    Mimic,
    Prescribed,
    close_loops,
    constrained_inverse_dynamics,
    constraint_projection,
    reduce,
    singular_form,
)
from .contact import (
    Contact,
    DynamicEnvironment,
    FunctionalCoordinates,
    ImpactResult,
    ImplicitSurface,
    consistent_initial_state,
    constrained_dynamics,
    peg_in_hole,
    plane,
    plastic_impact,
    point_contact,
    project_consistent,
)
from .drives import DCMotor, Drive, ElasticTransmission, Gear, LinearActuator
from .dynamics import (
    AccelerationConstraint,
    PfaffianConstraint,
    PointContact,
    TaskSpaceDynamics,
    acceleration_energy,
    acceleration_energy_terms,
    appell_inverse_dynamics,
    christoffel_symbols,
    gauss_forward_dynamics,
    kinetic_energy_gradient,
    task_space_dynamics,
)
from .flexible import (
    FlexibleLink,
    ModalResult,
    UndeformedKineticEnergy,
    expand_flexible,
    mode_shapes,
    natural_frequencies,
    static_deflection,
)
from .linear_models import LinearModel, frequency_response, linearize
from .model import Robot
from .planning import elastic_drive_feedforward, rest_to_rest, track_rest_to_rest
from .plugins import PLUGINS
from .robot import load_urdf
from .robots import load_robot, robot_names, robot_path
from .simulation import Component, Event, Phase, Schedule, System, Trajectory, simulate
from .support import ElasticSupport, add_support
from .sweep import sweep  # callable, and the namespace pinext.sweep.latin_hypercube, ...

__version__ = "0.1.0"

# The one hand-over of the plug-in list (pinext.plugins) to the System, which sits below the
# plug-ins and cannot import them: System(robot, drives=..., contacts=...) runs these factories.
System.default_plugins = PLUGINS

__all__ = [
    "AccelerationConstraint",
    "Component",
    "ConstraintProjection",
    "Contact",
    "DCMotor",
    "Drive",
    "DynamicEnvironment",
    "ElasticSupport",
    "ElasticTransmission",
    "Event",
    "FlexibleLink",
    "FunctionalCoordinates",
    "Gear",
    "ImpactResult",
    "ImplicitSurface",
    "LinearActuator",
    "LinearModel",
    "Loop",
    "Mimic",
    "ModalResult",
    "PfaffianConstraint",
    "Phase",
    "PointContact",
    "Prescribed",
    "Robot",
    "Schedule",
    "System",
    "TaskSpaceDynamics",
    "Trajectory",
    "UndeformedKineticEnergy",
    "__version__",
    "acceleration_energy",
    "acceleration_energy_terms",
    "add_support",
    "appell_inverse_dynamics",
    "assemble",
    "christoffel_symbols",
    "close_loops",
    "consistent_initial_state",
    "constrained_dynamics",
    "constrained_inverse_dynamics",
    "constraint_projection",
    "contact",
    "elastic_drive_feedforward",
    "exceptions",
    "expand_flexible",
    "free_body",
    "frequency_response",
    "gauss_forward_dynamics",
    "kinetic_energy_gradient",
    "linear_models",
    "linearize",
    "load_robot",
    "load_urdf",
    "mode_shapes",
    "natural_frequencies",
    "peg_in_hole",
    "plane",
    "planning",
    "plastic_impact",
    "point_contact",
    "project_consistent",
    "reduce",
    "rest_to_rest",
    "robot_names",
    "robot_path",
    "simulate",
    "singular_form",
    "static_deflection",
    "sweep",
    "task_space_dynamics",
    "track_rest_to_rest",
    "visualization",
]


def __getattr__(name: str):
    """Import ``pinext.visualization`` (meshcat, matplotlib) only when it is used."""
    if name == "visualization":
        import importlib

        return importlib.import_module(".visualization", __name__)
    raise AttributeError(f"module 'pinext' has no attribute '{name}'")
