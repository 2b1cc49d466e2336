"""pinext.contact: contact tasks of Vukobratović & Potkonjak §20.5.2–§20.5.3 and McClamroch (1986)
§2, §4.

Functional coordinates s(q) (20.83)–(20.86), constrained motion (20.88)–(20.89), impact
(20.90)–(20.91) and its environment-mass form, a dynamic environment (models (c) and (d) of
Fig. 20.15), unilateral contact (bounce, rest, lift-off) and the three-phase task inside
:func:`pinext.simulate` through :func:`contact_component`; for many contacts, Moreau–Jean
Moreau–Jean time stepping (:class:`TimeStepper`, run by
``simulate(..., method="timestepping", dt=...)``).

Contacts given as dicts (a URDF ``<contact .../>`` element or a sidecar ``[[contacts]]``
table) take the keys of :meth:`Contact.from_dict`: ``frame`` (required), ``surface``
(``plane`` | ``ground`` | ``peg_in_hole`` | ``point3d`` | ``point6d`` | ``functional``), ``point``,
``normal``, ``rpy``, ``constrained``, ``approach``, ``restitution``, ``rest_velocity``,
``unilateral``, ``stabilization``, ``name``, ``friction``, ``tool_stiffness``, ``tool_damping``
(the robot's side of a contact deformed on both sides, :mod:`pinext.contact.deformation`). The
``[environment]`` table takes
``mass``, ``stiffness``, ``damping``, ``contact_stiffness``, ``contact_damping``.
"""

from .component import ContactComponent, consistent_initial_state, contact_component
from .constrained import (
    ConstrainedDynamics,
    InconsistentInitialConditionsWarning,
    RedundantConstraintWarning,
    constrained_dynamics,
    project_consistent,
)
from .coordinates import (
    COORDINATE_NAMES,
    Constraint,
    ConstraintKinematics,
    FunctionalCoordinates,
    ImplicitSurface,
    peg_in_hole,
    plane,
    point_contact,
)
from .deformation import SeriesCompliance, compliant_tool, series_stiffness
from .environment import DynamicEnvironment
from .friction import FrictionalContact, FrictionMode, FrictionState
from .impact import ImpactResult, plastic_impact, seed_impact_as_printed
from .impulse import (
    FrictionalImpulseResult,
    ImpulseResult,
    contact_forces,
    frictional_impulse,
    impact_impulse,
    solve_impact,
    solve_lcp,
)
from .joint_friction import JointFriction, JointFrictionModes, JointFrictionState
from .limits import (
    EffortSaturation,
    JointLimit,
    JointLimits,
    JointLimitWarning,
    LimitModes,
    LimitState,
    VelocityLimitWarning,
    joint_limits,
)
from .timestepping import PointContact, TimeStepper
from .unilateral import Contact

__all__ = [
    "COORDINATE_NAMES",
    "ConstrainedDynamics",
    "Constraint",
    "ConstraintKinematics",
    "Contact",
    "ContactComponent",
    "DynamicEnvironment",
    "EffortSaturation",
    "FrictionMode",
    "FrictionalImpulseResult",
    "FrictionState",
    "FrictionalContact",
    "FunctionalCoordinates",
    "ImpactResult",
    "ImplicitSurface",
    "ImpulseResult",
    "InconsistentInitialConditionsWarning",
    "JointFriction",
    "JointFrictionModes",
    "JointFrictionState",
    "JointLimit",
    "JointLimitWarning",
    "JointLimits",
    "LimitModes",
    "LimitState",
    "PointContact",
    "RedundantConstraintWarning",
    "SeriesCompliance",
    "TimeStepper",
    "VelocityLimitWarning",
    "compliant_tool",
    "consistent_initial_state",
    "constrained_dynamics",
    "contact_component",
    "contact_forces",
    "frictional_impulse",
    "impact_impulse",
    "joint_limits",
    "peg_in_hole",
    "plane",
    "plastic_impact",
    "point_contact",
    "project_consistent",
    "seed_impact_as_printed",
    "series_stiffness",
    "solve_impact",
    "solve_lcp",
]
