"""Time per call of pinext's Gibbs–Appell functions against Pinocchio's rnea / aba (one run)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

from pinext.dynamics import (
    acceleration_energy,
    appell_inverse_dynamics,
    gauss_forward_dynamics,
    momentum_from_velocity,
    momentum_rhs,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import per_call_in_turn, robots_dir  # noqa: E402


def arm() -> tuple[pin.Model, str]:
    """Panda from example-robot-data (7 arm joints, fingers locked) or Pinocchio's 6-DOF sample."""
    robots = robots_dir()
    if robots is None:
        return pin.buildSampleModelManipulator(), "sample manipulator (6 DOF)"
    model = pin.buildModelFromUrdf(str(robots / "panda_description/urdf/panda.urdf"))
    locked = [model.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    return pin.buildReducedModel(model, locked, pin.neutral(model)), "Panda (7 DOF)"


def chain(n: int) -> pin.Model:
    """Spatial serial chain of n revolute joints with alternating axes, 0.3 m links, 1 kg."""
    model = pin.Model()
    parent = 0
    joints = [pin.JointModelRZ(), pin.JointModelRY(), pin.JointModelRX()]
    for i in range(n):
        placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.3 if i else 0.0]))
        parent = model.addJoint(parent, joints[i % 3], placement, f"j{i}")
        model.appendBodyToJoint(
            parent,
            pin.Inertia.FromBox(1.0, 0.05, 0.05, 0.3).se3Action(
                pin.SE3(np.eye(3), np.array([0, 0, 0.15]))
            ),
            pin.SE3.Identity(),
        )
    return model


def main() -> None:
    """Print both tables."""
    rng = np.random.default_rng(0)
    model, label = arm()
    data = model.createData()
    q = pin.randomConfiguration(model)
    v, a, tau = (rng.standard_normal(model.nv) for _ in range(3))
    t_rnea, t_energy, t_appell = per_call_in_turn(
        [
            lambda: pin.rnea(model, data, q, v, a),
            lambda: acceleration_energy(model, data, q, v, a),
            lambda: appell_inverse_dynamics(model, data, q, v, a),
        ],
        2000,
    )
    t_aba, t_gauss = per_call_in_turn(
        [
            lambda: pin.aba(model, data, q, v, tau),
            lambda: gauss_forward_dynamics(model, data, q, v, tau),
        ],
        500,
    )
    rows = [
        ("pin.rnea", t_rnea, "rnea"),
        ("pin.aba", t_aba, "aba"),
        ("acceleration_energy", t_energy, "rnea"),
        ("appell_inverse_dynamics", t_appell, "rnea"),
        ("gauss_forward_dynamics", t_gauss, "aba"),
    ]
    print(f"{label}: time per call, one run")
    print(f"{'function':26s} {'time [us]':>10s} {'ratio':>8s}  vs")
    for name, t, ref in rows:
        base = t_rnea if ref == "rnea" else t_aba
        print(f"{name:26s} {t * 1e6:10.2f} {t / base:8.1f}  {ref}")
    print()
    print("momentum scheme right-hand side (seed 001 Theorem 1) vs aba, serial chains")
    print(f"{'n':>3s} {'aba [us]':>9s} {'momentum rhs [us]':>18s} {'ratio':>7s}")
    for n in (*range(1, 8), 20, 50):
        m = chain(n)
        d = m.createData()
        q = pin.randomConfiguration(m)
        v, tau = rng.standard_normal(n), rng.standard_normal(n)
        p = momentum_from_velocity(m, d, q, v)
        number = 2000 if n < 20 else 300
        ta, tm = per_call_in_turn(
            [
                lambda m=m, d=d, q=q, v=v, tau=tau: pin.aba(m, d, q, v, tau),
                lambda m=m, d=d, q=q, p=p, tau=tau: momentum_rhs(m, d, q, p, tau),
            ],
            number,
        )
        print(f"{n:3d} {ta * 1e6:9.2f} {tm * 1e6:18.2f} {tm / ta:7.1f}")


if __name__ == "__main__":
    main()
