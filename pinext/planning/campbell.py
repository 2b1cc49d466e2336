"""Campbell diagram: natural frequencies against the speed of a spinning joint."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from ..exceptions import InvalidParameter, NameNotFound
from ..flexible.modal import natural_frequencies

__all__ = ["CampbellDiagram", "campbell"]


class CampbellDiagram(NamedTuple):
    """Natural frequencies of a robot whose joint spins at steady speeds."""

    speeds: np.ndarray
    """Shape (k,). Joint speeds Ω [rad/s]."""
    frequencies: np.ndarray
    """Shape (k, n). Natural frequencies [Hz] at each speed, ascending."""
    joint: str
    """The spinning joint."""

    def plot(self, ax: Any = None, *, modes: int = 4, orders: Sequence[int] = (1, 2)):
        """Frequencies against speed, with the excitation lines f = k Ω / 2π.

        Args:
            ax: A matplotlib Axes; default a new figure.
            modes: How many of the lowest modes to draw.
            orders: Engine orders k of the excitation lines.

        Returns:
            The matplotlib Figure.
        """
        if ax is None:
            from matplotlib.figure import Figure

            fig = Figure(figsize=(7, 4.5), layout="constrained")
            ax = fig.subplots()
        else:
            fig = ax.figure
        rpm = self.speeds * 60 / (2 * np.pi)
        positive = self.frequencies[:, np.any(self.frequencies > 0, axis=0)]
        for k in range(min(modes, positive.shape[1])):
            ax.plot(rpm, positive[:, k], "o-", ms=3, label=f"mode {k + 1}")
        for order in orders:
            ax.plot(rpm, order * self.speeds / (2 * np.pi), "k--", lw=0.8)
            ax.annotate(f"{order}×", (rpm[-1], order * self.speeds[-1] / (2 * np.pi)), fontsize=8)
        ax.set_xlabel(f"speed of '{self.joint}' [rpm]")
        ax.set_ylabel("natural frequency [Hz]")
        ax.set_title("Campbell diagram")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        return fig


def campbell(
    robot: Any,
    joint: str,
    speeds: Sequence[float] | np.ndarray,
    *,
    q: np.ndarray | None = None,
    locked_joints: Sequence[str] = (),
    gravity: bool = False,
) -> CampbellDiagram:
    """Natural frequencies about steady rotations of ``joint`` at each speed (Campbell diagram).

    At each speed Ω the joint's velocity is Ω (held: its DOF is locked) and the robot is
    linearised about that steady motion with :func:`pinext.natural_frequencies` (centrifugal
    stiffening from Pinocchio's ``computeRNEADerivatives``, gyroscopic coupling). For a uniform
    beam spinning about an axis through its root this reproduces Southwell's relation
    :math:`\\omega^2 \\approx \\omega_0^2 + K\\Omega^2` (flapwise K ≈ 1.193 at low speed, in-plane
    K − 1) and the exact rotating-beam frequencies (see ``tests/test_campbell.py``).

    Args:
        robot: Object with ``model`` and ``joint_stiffness`` (e.g. a :class:`pinext.Robot`).
        joint: The spinning one-DOF joint.
        speeds: Joint speeds Ω [rad/s].
        q: Configuration (a steady equilibrium at every speed); default neutral.
        locked_joints: Other joints held.
        gravity: Include gravity.

    Returns:
        :class:`CampbellDiagram`.

    Raises:
        NameNotFound: Unknown joint.
        InvalidParameter: A joint with more than one DOF.
    """
    model = robot.model
    names = list(model.names)[1:]
    if joint not in names:
        raise NameNotFound("joint", joint, names)
    jmodel = model.joints[model.getJointId(joint)]
    if jmodel.nv != 1:
        raise InvalidParameter(f"joint '{joint}' has {jmodel.nv} DOFs; campbell spins one DOF")
    speeds = np.asarray(speeds, dtype=float).reshape(-1)
    locked = (joint, *[j for j in locked_joints if j != joint])
    rows = []
    for speed in speeds:
        v = np.zeros(model.nv)
        v[jmodel.idx_v] = speed
        rows.append(natural_frequencies(robot, q, v, locked_joints=locked, gravity=gravity))
    return CampbellDiagram(speeds, np.array(rows), joint)
