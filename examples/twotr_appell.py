"""2TR robot of seed 004: eq. (40) evaluated by hand next to pinext's Gibbs–Appell dynamics."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from pinext.dynamics import acceleration_energy, appell_inverse_dynamics
from pinext.robots import robot_path

URDF = robot_path("twotr")
M1, M2, M3, A2, IZ, G = 10.0, 6.0, 4.0, 0.5, 0.2, 9.81  # the numbers in twotr.urdf


def eq40(q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Seed 004 eq. (40): generalized driving forces of the 2TR robot."""
    s3, c3 = np.sin(q[2]), np.cos(q[2])
    return np.array(
        [
            (M1 + M2 + M3) * qdd[0] - M3 * A2 * s3 * qdd[2] - M3 * A2 * qd[2] ** 2 * c3,
            (M2 + M3) * (qdd[1] + G),
            M3 * A2**2 * qdd[2] - M3 * A2 * s3 * qdd[0] + IZ * qdd[2],
        ]
    )


def main() -> None:
    """Print eq. (40) and pinext's ∂S/∂q̈ + g at a few random states."""
    model = pin.buildModelFromUrdf(str(URDF))
    data = model.createData()
    rng = np.random.default_rng(40)
    np.set_printoptions(precision=6, suppress=True)
    for k in range(4):
        q = rng.uniform(-1.0, 1.0, 3)
        qd, qdd = rng.standard_normal(3), rng.standard_normal(3)
        by_hand = eq40(q, qd, qdd)
        tau = appell_inverse_dynamics(model, data, q, qd, qdd)
        s = acceleration_energy(model, data, q, qd, qdd)
        print(f"state {k}: q = {q}, q' = {qd}, q'' = {qdd}")
        print(f"  eq. (40) by hand : {by_hand}")
        print(f"  pinext dS/dq''+g : {tau}")
        print(f"  difference       : {np.max(np.abs(tau - by_hand)):.1e}   (S = {s:.6f})")


if __name__ == "__main__":
    main()
