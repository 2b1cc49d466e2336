"""Seed 001 §5.2 flexible arm: modal table against ν and Euler–Bernoulli, convergence, slewing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.optimize import brentq

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # pragma: no cover
    raise SystemExit("this example needs matplotlib: pip install matplotlib") from None

import pinocchio as pin

from pinext.flexible import FlexibleLink, natural_frequencies
from pinext.robot import load_urdf
from pinext.robots import robot_path
from pinext.simulation.simulate import simulate

URDF = robot_path("flexible_arm")
OUT = Path("out")
E, SIDE, L, MU = 1e11, 0.01, 2.0, 7876 * 0.01**2
I = SIDE**4 / 12  # noqa: E741


def euler_bernoulli(n: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Pinned-free (tan x = tanh x) and clamped-free (cos x cosh x = −1) frequencies [Hz]."""
    scale = np.sqrt(E * I / MU) / L**2 / (2 * np.pi)
    grid = np.linspace(0.5, 20.0, 4000)

    def roots(f):
        v = f(grid)
        return np.array(
            [
                brentq(f, a, b)
                for a, b, fa, fb in zip(grid[:-1], grid[1:], v[:-1], v[1:], strict=True)
                if fa * fb < 0
            ][:n]
        )

    pinned = roots(lambda x: np.sin(x) * np.cosh(x) - np.cos(x) * np.sinh(x))
    clamped = roots(lambda x: np.cos(x) * np.cosh(x) + 1)
    return scale * pinned**2, scale * clamped**2


def arm(nu: int):
    return load_urdf(URDF, flexible=[FlexibleLink("bar", nu, E, I)])


def main() -> None:
    OUT.mkdir(exist_ok=True)
    eb_pinned, eb_clamped = euler_bernoulli()
    nus = [1, 2, 5, 10, 20, 40]
    print("pinned-free (hub free) [Hz]; seed (72) nu=5 and (73) nu=10")
    print("   nu " + "".join(f"{'f' + str(i):>10}" for i in range(1, 6)))
    pinned, clamped = {}, {}
    for nu in nus:
        robot = arm(nu)
        pinned[nu] = natural_frequencies(robot)[1:6]
        clamped[nu] = natural_frequencies(robot, locked_joints=["hub"])[:5]
        print(f"  {nu:3d} " + "".join(f"{f:10.3f}" for f in pinned[nu]))
    print("   EB " + "".join(f"{f:10.3f}" for f in eb_pinned))
    print("clamped-free (hub locked) [Hz]")
    for nu in nus:
        print(f"  {nu:3d} " + "".join(f"{f:10.3f}" for f in clamped[nu]))
    print("   EB " + "".join(f"{f:10.3f}" for f in eb_clamped))

    fig, ax = plt.subplots(figsize=(6, 4))
    for i in range(3):
        err_p = [abs(pinned[nu][i] / eb_pinned[i] - 1) for nu in nus if len(pinned[nu]) > i]
        err_c = [abs(clamped[nu][i] / eb_clamped[i] - 1) for nu in nus if len(clamped[nu]) > i]
        ax.loglog(nus[-len(err_p) :], err_p, "o-", label=f"pinned-free f{i + 1}")
        ax.loglog(nus[-len(err_c) :], err_c, "s--", label=f"clamped-free f{i + 1}")
    ax.axhline(2e-3, color="k", lw=0.5)
    ax.set_xlabel("sublinks ν")
    ax.set_ylabel("relative error vs Euler–Bernoulli")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(OUT / "flexible_arm_convergence.png", dpi=120)

    # Slewing: bang-bang hub torque for 0.5 s, then free; the tip vibrates about the hub line.
    nu = 10
    robot = arm(nu)

    def torque(t, x):
        u = np.zeros(nu + 1)
        u[0] = 2.0 if t < 0.25 else (-2.0 if t < 0.5 else 0.0)
        return u

    run = simulate(robot, 2.0, control=torque, output_dt=0.002)
    data = robot.model.createData()
    tip = robot.model.getFrameId("tip")
    deflection = []
    for q in run.q:
        pin.framesForwardKinematics(robot.model, data, q)
        p = data.oMf[tip].translation
        hub = q[0]
        deflection.append(-np.sin(hub) * p[0] + np.cos(hub) * p[1])  # normal to the hub line
    fig, ax = plt.subplots(2, 1, figsize=(6, 5), sharex=True)
    ax[0].plot(run.t, np.degrees(run.q[:, 0]))
    ax[0].set_ylabel("hub angle [deg]")
    ax[1].plot(run.t, 1e3 * np.array(deflection))
    ax[1].set_ylabel("tip deflection [mm]")
    ax[1].set_xlabel("t [s]")
    fig.tight_layout()
    fig.savefig(OUT / "flexible_arm_slewing.png", dpi=120)
    print(
        f"slewing: hub {np.degrees(run.q[-1, 0]):.2f} deg, tip vibration amplitude "
        f"{1e3 * np.abs(deflection[len(deflection) // 2 :]).max():.2f} mm after the manoeuvre"
    )
    print(f"figures in {OUT.resolve()}")


if __name__ == "__main__":
    main()
