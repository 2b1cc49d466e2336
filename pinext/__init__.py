"""pinext: what Pinocchio lacks from the classic robot-dynamics literature.

Pinocchio does the rigid-body algorithms; pinext adds the acceleration-energy (Gibbs-Appell)
formulation, flexible links as rigid sublinks, DC motors and elastic transmissions, contact
tasks with impacts, an event-driven simulator and browser playback.

A word on vocabulary: pinext uses Pinocchio's words. *Inverse dynamics* maps motion to
torques (``rnea``), *forward dynamics* maps torques to accelerations (``aba``); seed 000 calls
these the other way round.
"""

from . import exceptions
from .robot import Robot, load_urdf
from .simulation import Component, Event, Phase, Schedule, System, Trajectory, simulate

__version__ = "0.1.0"

__all__ = [
    "Component",
    "Event",
    "Phase",
    "Robot",
    "Schedule",
    "System",
    "Trajectory",
    "__version__",
    "exceptions",
    "load_urdf",
    "simulate",
]
