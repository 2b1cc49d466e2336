"""Solo12 (example-robot-data) ready for contact simulation: its four feet on the ground
(``solo12.pinext.toml``), its standing posture and a PD posture law."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..model import Robot
from . import load_robot

#: The foot frames of Solo12.
FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")


def load_solo12(posture: str = "standing") -> tuple[Robot, np.ndarray]:
    """Solo12 on a free flyer with ``[[contacts]]`` at its four feet (``surface = "ground"``,
    μ = 0.9, the foot frames' origins against the plane z = 0), and a reference
    configuration of example-robot-data's SRDF.

    Args:
        posture: A ``group_state`` of ``solo.srdf`` (``"standing"``, ``"straight_standing"``).

    Returns:
        (robot, q of the posture) — the posture's base height is the SRDF's (0.235 m).
    """
    sidecar = resources.files("pinext.robots") / "solo12.pinext.toml"
    robot = load_robot("solo12", extensions=str(sidecar))
    srdf = Path(robot.path).parents[1] / "srdf" / "solo.srdf"
    pin.loadReferenceConfigurations(robot.model, str(srdf), False)
    return robot, robot.model.referenceConfigurations[posture].copy()


def posture_law(
    q_ref: np.ndarray | Callable[[float], np.ndarray], kp: float = 10.0, kd: float = 0.2
) -> Callable[[float, np.ndarray], np.ndarray]:
    """A PD law on the twelve joints (nothing on the free flyer):
    ``u = K_p (q_ref(t) − q) − K_d v`` [N.m].

    Args:
        q_ref: Reference configuration (nq = 19), or a function of time returning one.
        kp: Stiffness [N.m/rad].
        kd: Damping [N.m.s/rad].
    """
    if callable(q_ref):
        target = q_ref
    else:
        fixed = np.asarray(q_ref, dtype=float)

        def target(t: float) -> np.ndarray:
            return fixed

    def law(t: float, x: np.ndarray) -> np.ndarray:
        u = np.zeros(18)
        u[6:] = kp * (target(t)[7:] - x[7:19]) - kd * x[25:37]
        return u

    return law
