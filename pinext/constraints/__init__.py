"""pinext.constraints: kinematic constraints that meet in the System's acceleration step.

:class:`Prescribed` drives a joint kinematically (a rheonomic constraint, McClamroch (1986)
§2; the kinematic control functions of Negrean et al. (2009) §2 as motion laws).
:class:`Loop` closes a kinematic loop between two frames (a gripped load, two robots on one
load, a closed linkage: McClamroch (1986) (1)–(5), (12)–(19)); :func:`close_loops` gives
consistent initial conditions ((32), (39)). :class:`Mimic` couples the joints of a
URDF's ``<mimic>`` elements (those on no DOF of the model are left out with a
:class:`SkippedMimicWarning`). :func:`singular_form`, :func:`reduce` and
:func:`constrained_inverse_dynamics` expose the singular system (23), its reduction (24)–(28)
and the torques of a planned constrained motion (§5); :func:`constraint_projection` the same
rows in Lynch & Park's form (the projection P, the multipliers λ and the tip wrench).
"""

from .closure import Closure, close_loops
from .loop import Loop
from .mimic import Mimic, SkippedMimicWarning
from .prescribed import Prescribed
from .projection import ConstraintProjection, constraint_projection
from .singular import (
    ConstrainedInverseDynamics,
    Reduction,
    SingularForm,
    constrained_inverse_dynamics,
    reduce,
    singular_form,
)

__all__ = [
    "Closure",
    "ConstrainedInverseDynamics",
    "ConstraintProjection",
    "Loop",
    "Mimic",
    "Prescribed",
    "Reduction",
    "SingularForm",
    "SkippedMimicWarning",
    "close_loops",
    "constrained_inverse_dynamics",
    "constraint_projection",
    "reduce",
    "singular_form",
]
