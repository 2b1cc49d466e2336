"""Reference models and seeded random states shared by the dynamics tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission
from pinext.planning import Spline3m
from pinext.robots import robot_path


def humanoid() -> pin.Model:
    """Pinocchio's sample humanoid (free flyer) with a bounded base position."""
    model = pin.buildSampleModelHumanoid()
    model.lowerPositionLimit[:3] = -1.0
    model.upperPositionLimit[:3] = 1.0
    return model


def panda(robots_dir: Path) -> pin.Model:
    """The Panda arm of example-robot-data."""
    return pin.buildModelFromUrdf(str(robots_dir / "panda_description" / "urdf" / "panda.urdf"))


def ur5(robots_dir: Path) -> pin.Model:
    """The UR5 arm of example-robot-data."""
    return pin.buildModelFromUrdf(str(robots_dir / "ur_description" / "urdf" / "ur5_robot.urdf"))


def named(which: str, request) -> pin.Model:
    """``"twotr"`` (the project's 2TR robot), ``"manipulator"`` (Pinocchio's sample arm) or
    ``"ur5"`` (example-robot-data; skips without it, through the ``robots_dir`` fixture)."""
    if which == "twotr":
        return pin.buildModelFromUrdf(str(robot_path("twotr")))
    if which == "manipulator":
        return pin.buildSampleModelManipulator()
    return ur5(request.getfixturevalue("robots_dir"))


def state(model: pin.Model, rng: np.random.Generator):
    """A seeded random (q, v, a) within the joint limits (clipped to ±3)."""
    lo = np.where(np.isfinite(model.lowerPositionLimit), model.lowerPositionLimit, -1.0)
    hi = np.where(np.isfinite(model.upperPositionLimit), model.upperPositionLimit, 1.0)
    pin.seed(int(rng.integers(2**31)))  # Pinocchio's own generator, seeded from rng
    q = pin.randomConfiguration(model, np.maximum(lo, -3.0), np.minimum(hi, 3.0))
    return q, rng.standard_normal(model.nv), rng.standard_normal(model.nv)


def rel(x, ref) -> float:
    """Largest error relative to 1 + the largest reference value."""
    return float(np.max(np.abs(x - ref)) / (1.0 + np.max(np.abs(ref))))


def random_pose(model: pin.Model, rng: np.random.Generator) -> np.ndarray:
    """A configuration drawn uniformly within the model's finite position limits (the other
    coordinates neutral), normalised (free-flyer quaternions)."""
    low, high = model.lowerPositionLimit, model.upperPositionLimit
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(low) & np.isfinite(high) & (high - low < 1e3)
    q = pin.neutral(model)
    q[finite] = rng.uniform(low[finite], high[finite])
    return pin.normalize(model, q)


#: Limits hold to this [rad or m]: the Baumgarte-stabilised rows keep them to rounding.
LIMIT_HOLD = 1e-9
#: Relative energy residual of an event-driven run at the default tolerances.
ENERGY_HOLD = 1e-8


def assert_sound_run(model: pin.Model, traj) -> None:
    """The laws every run of a real robot obeys, whatever its start.

    * Every joint that starts inside its range stays inside to :data:`LIMIT_HOLD`; one that
      starts outside does from its ``limit-inside`` event on.
    * The energy audit balances to :data:`ENERGY_HOLD` (relative).
    * No row records two empty events in a row (zero impulse at zero approach speed: a row
      that rests where it is and fires on rounding).
    """
    from pinext.contact import joint_limits
    from pinext.simulation.component import REST_TOLERANCE

    entered = {e.info.get("joint"): e.t for e in traj.events if e.name.startswith("limit-inside")}
    for lim in joint_limits(model):
        q = traj.q[:, lim.iq]
        start = q[0]
        if not lim.lower - LIMIT_HOLD <= start <= lim.upper + LIMIT_HOLD:
            if lim.joint not in entered:
                continue
            q = q[traj.t > entered[lim.joint]]
        excess = max(
            float(np.max(lim.lower - q, initial=0.0)), float(np.max(q - lim.upper, initial=0.0))
        )
        assert excess <= LIMIT_HOLD, f"{lim.joint} past its limit by {excess:.3g}"
    assert traj.energy_balance().max_relative() <= ENERGY_HOLD, traj.energy_balance().max_relative()
    empty_before: dict[str, bool] = {}
    for e in traj.events:
        if "impulse" not in e.info or "approach_velocity" not in e.info:
            continue
        empty = not np.any(e.info["impulse"]) and abs(e.info["approach_velocity"]) <= REST_TOLERANCE
        assert not (empty and empty_before.get(e.name, False)), f"repeated empty {e.name} at {e.t}"
        empty_before[e.name] = empty


def arm_with_friction_and_drives(tmp_path: Path):
    """The six-DOF arm with Coulomb friction (0.3 N.m) in its first two joints and elastic DC
    drives on three: (the robot, the drives), for a System with its URDF's stops."""
    import pinext as px
    from pinext.drives import DCMotor, Drive, ElasticTransmission

    text = robot_path("six_dof_arm").read_text().replace('friction="0.0"', 'friction="0.3"', 2)
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(text)
    arm = px.load_urdf(urdf, package_dirs=[robot_path("six_dof_arm").parent])
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    drives = {
        j: Drive(motor, ElasticTransmission(100.0, 3000.0, 2.0))
        for j in ["shoulder_pan", "shoulder_lift", "elbow"]
    }
    return arm, drives


def pick_and_place() -> Spline3m:
    """The pick-and-place spline of examples/size_drives.py."""
    return Spline3m(
        [0.0, 0.25, 0.6, 1.0, 1.4, 1.75, 2.0],
        [
            np.array([0.0, 0.6, 1.2, 0.2, -1.2, 0.0]),
            None,
            np.array([0.15, 0.35, 1.0, 0.4, -1.2, 0.3]),
            np.array([0.8, 0.3, 0.9, 0.4, -1.0, 0.8]),
            np.array([1.4, 0.35, 1.0, 0.3, -0.9, 1.2]),
            None,
            np.array([1.5, 0.6, 1.25, 0.1, -0.9, 1.3]),
        ],
    )


def arm_with_welded_box(tmp_path: Path, table: float | None = None):
    """The six-DOF arm holding a 2 kg box (weld), with elastic DC drives on three joints,
    Coulomb friction in two joints (URDF) and the URDF's joint limits (the wrist meets one
    from the seeded pose); with ``table``, a corner of the box that far above a tilted table.
    Returns (system, the start state at rest with the weld closed)."""
    text = robot_path("six_dof_arm").read_text()
    text = text.replace('friction="0.0"', 'friction="0.3"', 2)
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(text)
    arm = px.load_urdf(urdf, package_dirs=[robot_path("six_dof_arm").parent])
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    robot = px.free_body(arm, "box", 2.0, pin.Inertia.FromBox(2.0, 0.2, 0.2, 0.2).inertia)
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    drives = {
        j: Drive(motor, ElasticTransmission(100.0, 3000.0, 2.0))
        for j in ("shoulder_pan", "shoulder_lift", "elbow")
    }
    loops = [px.Loop("tool", "box", "weld")]
    q = pin.neutral(robot.model)
    q[:6] = q0
    contacts = []
    if table is not None:  # placed from the box's pose once the weld is closed
        closed = px.close_loops(px.System(robot, loops=loops), q)[: robot.model.nq]
        corner = pin.SE3(np.eye(3), np.array([0.1, 0.1, -0.1]))
        contacts.append(tilted_table(robot, "box", closed, table, corner))
    system = px.System(robot, loops=loops, drives=drives, contacts=contacts)
    return system, px.close_loops(system, q)


def tilted_table(robot, frame, q, drop, tool=None):
    """A Contact of ``frame`` (at ``tool`` in it) with a plane tilted by 0.2 rad, ``drop``
    below the touching point at q."""
    from pinext.contact import Contact, plane

    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    placement = data.oMf[robot.model.getFrameId(frame)] * (tool or pin.SE3.Identity())
    normal = pin.rpy.rpyToMatrix(0.2, -0.1, 0.0) @ np.array([0.0, 0.0, 1.0])
    point = placement.translation - drop * normal
    return Contact(plane(frame, point, normal, tool=tool), restitution=0.5)
