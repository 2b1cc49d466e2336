"""Time per call of pinext's Gibbs–Appell functions against Pinocchio's rnea / aba (one run)."""

from __future__ import annotations

import site
import sysconfig
import timeit
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


def per_call(fn, number: int = 2000, repeat: int = 5) -> float:
    """Best-of-repeat time per call [s]."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def arm() -> tuple[pin.Model, str]:
    """Panda from example-robot-data (7 arm joints + 2 fingers) or Pinocchio's 6-DOF sample."""
    for base in [sysconfig.get_paths()["purelib"], *site.getsitepackages()]:
        p = (
            Path(base)
            / "cmeel.prefix/share/example-robot-data/robots/panda_description/urdf/panda.urdf"
        )
        if p.is_file():
            model = pin.buildModelFromUrdf(str(p))
            # lock the two fingers: a 7-DOF arm
            locked = [model.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
            model = pin.buildReducedModel(model, locked, pin.neutral(model))
            return model, "Panda (7 DOF)"
    return pin.buildSampleModelManipulator(), "sample manipulator (6 DOF)"


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
    t_rnea = per_call(lambda: pin.rnea(model, data, q, v, a))
    t_aba = per_call(lambda: pin.aba(model, data, q, v, tau))
    rows = [
        ("pin.rnea", t_rnea, "rnea"),
        ("pin.aba", t_aba, "aba"),
        (
            "acceleration_energy",
            per_call(lambda: acceleration_energy(model, data, q, v, a)),
            "rnea",
        ),
        (
            "appell_inverse_dynamics",
            per_call(lambda: appell_inverse_dynamics(model, data, q, v, a)),
            "rnea",
        ),
        (
            "gauss_forward_dynamics",
            per_call(lambda: gauss_forward_dynamics(model, data, q, v, tau), 500),
            "aba",
        ),
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
        ta = per_call(lambda m=m, d=d, q=q, v=v, tau=tau: pin.aba(m, d, q, v, tau), number)
        tm = per_call(lambda m=m, d=d, q=q, p=p, tau=tau: momentum_rhs(m, d, q, p, tau), number)
        print(f"{n:3d} {ta * 1e6:9.2f} {tm * 1e6:18.2f} {tm / ta:7.1f}")


if __name__ == "__main__":
    main()
