"""Two 6-DOF arms carry a 2 kg box along a path, squeezing it: planned torques played back."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pinocchio as pin

import pinext as px

WIDTH = 0.3  # between the grips [m]
BOX_MASS = 2.0  # [kg]
BOX_INERTIA = pin.Inertia.FromBox(BOX_MASS, WIDTH, 0.2, 0.15).inertia  # a 30 x 20 x 15 cm box
START = np.array([0.5, 0.0, 1.0])  # the box's centre at the start [m]
TRAVEL = np.array([0.0, 0.2, 0.0])  # from the start to the end of the path [m]
LIFT = 0.1  # the path's arc above the straight line [m]
SQUEEZE = 20.0  # internal force pressing each gripper into the box [N]
POSE = np.array([0.0, 0.891, -1.123, 0.0, 1.802, 0.0])  # each arm at the start (closed) [rad]
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED


def build() -> tuple[px.System, np.ndarray]:
    """Two arms facing each other 1 m apart (McClamroch (1986) (12)–(19)), the box between
    them welded to both tools; returns the System and a consistent state at rest."""
    arm = px.load_robot("six_dof_arm")
    facing = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi), np.array([1.0, 0.0, 0.0]))
    pair = px.assemble({"left": arm, "right": arm}, placements={"right": facing})
    robot = px.free_body(pair, "box", BOX_MASS, BOX_INERTIA, pin.SE3(np.eye(3), START))

    # the left tool's z axis into the box's left side; the right grip is the left one turned
    # half a turn about the vertical, as the right arm is
    left = pin.SE3(pin.rpy.rpyToMatrix(0.0, np.pi / 2, 0.0), np.array([-WIDTH / 2, 0.0, 0.0]))
    right = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, np.pi), np.zeros(3)) * left
    loops = [
        px.Loop("left/tool", "box", "weld", left, name="left grip"),
        px.Loop("right/tool", "box", "weld", right, name="right grip"),
    ]
    system = px.System(robot, loops=loops)
    q = pin.neutral(robot.model)
    q[:6] = q[6:12] = POSE
    return system, px.close_loops(system, q)


def box_path(t: float, duration: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The box centre's displacement from START, its velocity and acceleration at t: a
    straight line with an arc LIFT high, timed by the rest-to-rest quintic s(τ) =
    10τ³ - 15τ⁴ + 6τ⁵."""
    tau = float(np.clip(t / duration, 0.0, 1.0))
    s = tau**3 * (10 - 15 * tau + 6 * tau**2)
    ds = 30 * tau**2 * (1 - tau) ** 2 / duration
    dds = 60 * tau * (1 - tau) * (1 - 2 * tau) / duration**2
    up = np.array([0.0, 0.0, LIFT])
    p = TRAVEL * s + up * np.sin(np.pi * s)
    dp_ds = TRAVEL + up * np.pi * np.cos(np.pi * s)
    ddp_ds = -up * np.pi**2 * np.sin(np.pi * s)
    return p, dp_ds * ds, ddp_ds * ds**2 + dp_ds * dds


class Plan(NamedTuple):
    """The planned state and the torques that realise it."""

    q: np.ndarray
    """Shape (nq,). Both arms and the box."""
    v: np.ndarray
    """Shape (nv,)."""
    a: np.ndarray
    """Shape (nv,)."""
    tau: np.ndarray
    """Shape (nv,). Joint torques (zero on the box's DOFs) [N.m]."""
    forces: np.ndarray
    """Shape (12,). The grip wrenches λ (left, right), on each tool, world axes."""


class Planner:
    """The box moves along :func:`box_path` without turning; each arm's joints follow by
    inverse kinematics of its tool (6 joints, 6 rows: square), q̇ = J⁻¹ V_tool and
    q̈ = J⁻¹ (A_tool - J̇ q̇); the torques are :func:`pinext.constrained_inverse_dynamics`
    with the squeeze as the internal force (McClamroch (1986) §5, (36))."""

    def __init__(self, system: px.System, x0: np.ndarray, duration: float) -> None:
        self.system, self.duration = system, duration
        self.model = system.model
        self.data = self.model.createData()
        self.q0 = system.split(x0)[0].copy()
        self.arms = {}
        for loop in system.components:
            if isinstance(loop, px.Loop):
                tool = self.model.getFrameId(loop.frame_a)
                joint = self.model.frames[tool].parentJoint
                first = self.model.joints[joint].idx_v - 5
                self.arms[loop.name] = (tool, loop.placement, slice(first, first + 6))
        form = px.singular_form(system, self.q0, np.zeros(self.model.nv))
        self.internal = np.zeros(form.jacobian.shape[0])
        # the box pushes each tool outwards along the line between the grips
        self.internal[form.rows["left grip"]][:3] = [-SQUEEZE, 0.0, 0.0]
        self.internal[form.rows["right grip"]][:3] = [SQUEEZE, 0.0, 0.0]
        self._q = self.q0.copy()

    def __call__(self, t: float) -> Plan:
        model, data = self.model, self.data
        p, dp, ddp = box_path(t, self.duration)
        q = self._q.copy()
        q[-7:] = np.r_[p, 0.0, 0.0, 0.0, 1.0]  # relative to START, not turning
        box = pin.SE3(np.eye(3), START + p)
        for _ in range(20):  # Newton on each arm's tool placement
            pin.forwardKinematics(model, data, q)
            pin.updateFramePlacements(model, data)
            pin.computeJointJacobians(model, data, q)
            error = 0.0
            for tool, grip, dofs in self.arms.values():
                target = box * grip
                err = pin.log6(data.oMf[tool].actInv(target)).vector
                jac = pin.getFrameJacobian(model, data, tool, pin.ReferenceFrame.LOCAL)[:, dofs]
                q[dofs] += np.linalg.solve(jac, err)
                error = max(error, float(np.abs(err).max()))
            if error < 1e-14:
                break
        else:
            raise RuntimeError(f"no inverse kinematics for the box at {START + p} (t = {t} s)")
        self._q = q
        v, a = np.zeros(model.nv), np.zeros(model.nv)
        v[-6:-3], a[-6:-3] = dp, ddp  # the box's free-flyer (it does not turn)
        pin.computeJointJacobians(model, data, q)
        for tool, _, dofs in self.arms.values():
            jac = pin.getFrameJacobian(model, data, tool, LWA)[:, dofs]
            v[dofs] = np.linalg.solve(jac, np.r_[dp, 0.0, 0.0, 0.0])
        pin.forwardKinematics(model, data, q, v, np.zeros(model.nv))
        for tool, _, dofs in self.arms.values():
            jac = pin.getFrameJacobian(model, data, tool, LWA)[:, dofs]
            bias = pin.getFrameClassicalAcceleration(model, data, tool, LWA)
            a[dofs] = np.linalg.solve(jac, np.r_[ddp - bias.linear, -bias.angular])
        result = px.constrained_inverse_dynamics(self.system, q, v, a, internal=self.internal)
        tau = result.tau.copy()
        tau[-6:] = 0.0  # the box is not actuated (its torques are zero to round-off)
        return Plan(q, v, a, tau, result.multipliers)


def run(duration: float = 2.0, t_final: float | None = None, output_dt: float = 0.01):
    """Plan the carry over ``duration`` [s], play the torques back open loop until
    ``t_final`` (default the whole carry); returns (system, planner, trajectory)."""
    system, x0 = build()
    planner = Planner(system, x0, duration)
    start = planner(0.0)
    x0 = system.initial_state(start.q, start.v)
    traj = px.simulate(
        system,
        duration if t_final is None else t_final,
        x0=x0,
        control=lambda t, x: planner(t).tau,
        output_dt=output_dt,
    )
    return system, planner, traj


def main() -> None:
    """Carry the box, print how the playback follows the plan, write the HTML."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="the first 0.5 s, no HTML")
    args = parser.parse_args()
    system, planner, traj = run(2.0, 0.5 if args.quick else None)
    plans = [planner(t) for t in traj.t]
    q_err = np.abs(traj.q - np.array([p.q for p in plans])).max()
    forces = np.hstack([traj.outputs["left grip.force"], traj.outputs["right grip.force"]])
    planned = np.array([np.r_[p.forces[:3], p.forces[6:9]] for p in plans])
    squeeze = (traj.outputs["right grip.force"][:, 0] - traj.outputs["left grip.force"][:, 0]) / 2
    f_err = np.abs(forces - planned).max()
    print(f"playback vs plan: joints {q_err:.1e} rad, grip forces {f_err:.1e} N")
    print(f"squeeze {squeeze.min():.6f} .. {squeeze.max():.6f} N (planned {SQUEEZE} N)")
    for name in ("left grip", "right grip"):
        print(f"{name}: closure {traj.constraint_residual(name).max():.1e} m")
    print(f"energy balance {traj.energy_balance().max_relative():.1e}")
    if args.quick:
        return
    out = Path("out")
    out.mkdir(exist_ok=True)
    try:
        from pinext.visualization import Viewer
    except ImportError:  # pragma: no cover
        sys.exit("the viewer needs meshcat: pip install 'pinext[viz]'")
    path = Viewer(system).export_html(traj, out / "two_arms_carry.html", title="pinext: carry")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
