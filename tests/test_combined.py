"""Effects combined in one System: the acceleration step where drives, contacts, environment,
flexible links, prescribed motion and a replaced mechanism meet (Vukobratović & Potkonjak
§20.5, the complete model)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, DynamicEnvironment, plane, point_contact
from pinext.drives import DCMotor, Drive, Gear, harmonic_drives
from pinext.flexible import UndeformedKineticEnergy
from pinext.flexible.modal import forward_dynamics

G = 9.81
MASS = 2.0
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
SLIDER = f"""<robot name="slider"><link name="base"/>
<joint name="z" type="prismatic"><parent link="base"/><child link="body"/><axis xyz="0 0 1"/>
<limit lower="-5" upper="5" effort="100" velocity="10"/></joint>
<link name="body"><inertial><mass value="{MASS}"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
<joint name="tip_joint" type="fixed"><parent link="body"/><child link="tip"/>
<origin xyz="0 0 -0.1"/></joint><link name="tip"/></robot>"""
MOTOR = DCMotor(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)
RATIO = 10.0


def _slider_on_table(tmp_path, efficiency: float) -> px.System:
    path = tmp_path / "slider.urdf"
    path.write_text(SLIDER)
    robot = px.load_urdf(path)
    drives = {"z": Drive(MOTOR, Gear(RATIO, efficiency=efficiency))}
    return px.System(robot, drives=drives, contacts=[Contact(plane("tip", (0.0, 0.0, 0.0)))])


@pytest.mark.parametrize("efficiency", [1.0, 0.8, 0.5])
@pytest.mark.parametrize("voltage", [-3.0, 3.0])
def test_lossy_gear_keeps_the_body_on_the_table(tmp_path, efficiency, voltage):
    """The body rests on the table behind a gear with losses, pulled down or pushed up."""
    system = _slider_on_table(tmp_path, efficiency)
    q0 = np.array([0.1])  # the tip touches the table
    traj = px.simulate(system, 0.5, q0=q0, control=[voltage], output_dt=0.05)
    assert traj.outputs["contact.closed"].min() == 1.0
    assert traj.constraint_residual().max() < 1e-9
    assert traj.outputs["contact.gap"].min() > -1e-9  # no penetration
    assert np.abs(traj.q[:, 0] - q0[0]).max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
    # statics: table + gear carry the weight; a gear at rest transmits at most its driving
    # efficiency of the motor torque N C_M u / R
    force = traj.outputs["contact.force"][:, 0]
    motor = RATIO * MOTOR.torque_constant * voltage / MOTOR.resistance
    assert force == pytest.approx(MASS * G - efficiency * motor, rel=1e-9)


@pytest.mark.parametrize("efficiency", [0.8, 0.5])
def test_lossy_gear_drops_the_body_onto_the_table(tmp_path, efficiency):
    """Backdriven by gravity, the body falls, hits the table plastically and stays."""
    system = _slider_on_table(tmp_path, efficiency)
    traj = px.simulate(system, 0.6, q0=np.array([0.15]), control=[2.0], output_dt=0.01)
    assert [e.name for e in traj.events].count("contact:tip") == 1
    first = dict(traj.phases[0].modes)
    assert str(first["contact"]) == "free"
    assert str(first["drives"]) in ("b", "d")  # the gear moves down
    after = traj.t > traj.events[0].t
    assert traj.outputs["contact.closed"][after].min() == 1.0
    assert traj.outputs["contact.gap"].min() > -1e-9
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9


def test_lossy_gear_lifts_the_body_off_the_table(tmp_path):
    """A motor stronger than the weight lifts the body at once: free, driving, no pulling."""
    system = _slider_on_table(tmp_path, 0.8)
    traj = px.simulate(system, 0.2, q0=np.array([0.1]), control=[60.0], output_dt=0.01)
    assert traj.outputs["contact.closed"].max() == 0.0
    assert str(dict(traj.phases[0].modes)["drives"]) == "D"
    assert traj.q[-1, 0] > 0.1
    assert traj.energy_balance().max_relative() < 1e-9


def _flexible_six_dof_arm() -> tuple[px.Robot, np.ndarray]:
    robot = px.load_urdf(
        px.robot_path("six_dof_arm"), flexible=[px.FlexibleLink("forearm_link", 2, 7e10, 2e-8)]
    )
    q0 = pin.neutral(robot.model)
    for joint, angle in (("shoulder_lift", -0.6), ("elbow", 1.2), ("wrist_1", -2.1)):
        q0[robot.model.joints[robot.model.getJointId(joint)].idx_q] = angle
    return robot, q0


def _tip(robot: px.Robot, q: np.ndarray) -> np.ndarray:
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return data.oMf[robot.model.getFrameId("pen_tip")].translation.copy()


def test_complete_model_elastic_drives_flexible_forearm_compliant_environment():
    """The writing task's complete model: elastic DC drives, a flexible forearm and a pen on a
    compliant, massive table (model (c)) in one System."""
    robot, q0 = _flexible_six_dof_arm()
    env = DynamicEnvironment(mass=2.0, stiffness=2.0e4, damping=100.0)
    system = px.System(
        robot,
        drives=harmonic_drives(JOINTS),
        contacts=[Contact(plane("pen_tip", _tip(robot, q0)))],
        environment=env,
    )
    traj = px.simulate(system, 0.3, q0=q0, control=np.full(6, 1.0), output_dt=0.01)
    closed = traj.outputs["contact.closed"][:, 0] == 1.0
    assert closed.mean() > 0.9  # the pen lands at once and presses on
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
    # the table's mass moves with the tip: its reaction matches its own dynamics
    deformation = traj.outputs["contact.deformation"][closed, 0]
    assert deformation.min() < -1e-4  # pressed into the compliant table


def test_hybrid_force_control_of_the_complete_model():
    """A task-space law on the complete model: the hybrid motion–force controller pressing
    the pen (elastic DC drives, so it outputs voltages; a flexible forearm whose sublink
    joints it cannot actuate; the compliant, massive table) presses on and the energy audit
    balances."""
    from pinext.control import HybridForceMotionController

    robot, q0 = _flexible_six_dof_arm()
    env = DynamicEnvironment(mass=2.0, stiffness=2.0e4, damping=100.0)
    system = px.System(
        robot,
        drives=harmonic_drives(JOINTS),
        contacts=[Contact(plane("pen_tip", _tip(robot, q0)))],
        environment=env,
    )
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q0)
    pose = data.oMf[robot.model.getFrameId("pen_tip")].copy()
    law = HybridForceMotionController(
        system, "pen_tip", pose, 5.0, constraint_frame=np.diag([1.0, -1.0, -1.0])
    )
    x0 = system.initial_state(q0)
    sensors = {k: x0[s] for k, s in system.layout.items() if k not in ("q", "v")}
    assert law(0.0, q0, np.zeros(robot.model.nv), sensors).shape == (6,)  # six voltages
    traj = px.simulate(system, 0.3, q0=q0, control=law, output_dt=0.01)
    closed = traj.outputs["contact.closed"][:, 0]
    assert closed[traj.t >= 0.1].min() == 1.0  # after a few bounces of the start, it presses
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9
    assert traj.outputs["contact.deformation"][-1, 0] < -1e-4  # pressed into the table


def _pin_contacts(model, frames, q, v, tau):
    """Accelerations and forces of bilateral 3D point contacts by pin.constraintDynamics."""
    data = model.createData()
    models = pin.StdVec_RigidConstraintModel()
    pin.framesForwardKinematics(model, data, q)
    for name in frames:
        frame = model.frames[model.getFrameId(name)]
        models.append(
            pin.RigidConstraintModel(
                pin.ContactType.CONTACT_3D,
                model,
                frame.parentJoint,
                frame.placement,
                0,
                data.oMf[model.getFrameId(name)],
                pin.ReferenceFrame.LOCAL_WORLD_ALIGNED,
            )
        )
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)
    a = pin.constraintDynamics(model, data, q, v, tau, models, datas, settings)
    return a, np.concatenate([d.contact_force.vector[:3] for d in datas])


def test_bilateral_contacts_with_elastic_drives_match_pin_constraint_dynamics():
    """Two closed point contacts (pen tip, and the flexible forearm's end) behind elastic
    drives: the step equals pin.constraintDynamics with two RigidConstraintModels."""
    robot, q0 = _flexible_six_dof_arm()
    model = robot.model
    q0[[0, -2, -1]] = 0.4, 0.7, 0.3  # out of the plane: the six rows are independent
    second = "wrist_1_link"
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    contacts = [
        Contact(
            point_contact(
                frame, pin.SE3(np.eye(3), data.oMf[model.getFrameId(frame)].translation), dim=3
            ),
            stabilization=0,
        )
        for frame in ("pen_tip", second)
    ]
    system = px.System(robot, drives=harmonic_drives(JOINTS), contacts=contacts)
    rng = np.random.default_rng(3)
    x = system.initial_state(q0, np.zeros(model.nv))
    x[system.layout["drives.motor_velocity"]] = rng.normal(size=6)
    step = system.step(0.0, x, rng.normal(size=6))
    a_ref, f_ref = _pin_contacts(
        system.model, ["pen_tip", second], q0, np.zeros(model.nv), step.tau
    )
    assert np.abs(step.a - a_ref).max() < 1e-9 * (1 + np.abs(a_ref).max())
    assert np.abs(step.forces["contact"] - f_ref).max() < 1e-9 * (1 + np.abs(f_ref).max())


def test_undeformed_kinetic_energy_with_a_drive():
    """Remark 5's mechanism behind a geared DC motor: the rotor's reflected inertia joins
    M(q̄), and the approximate model's own energy is conserved."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    drive = Drive(MOTOR, Gear(20.0))
    system = px.System(robot, drives={"hub": drive}, components=[UndeformedKineticEnergy(robot)])
    rng = np.random.default_rng(5)
    q, v = rng.normal(scale=0.05, size=robot.nv), rng.normal(size=robot.nv)
    u = np.array([4.0])
    step = system.step(0.0, system.initial_state(q, v), u)
    reference = SimpleNamespace(model=system.model, joint_stiffness=system.stiffness)
    motor_torque = (
        drive.ratio
        * MOTOR.torque_constant
        * (u[0] - MOTOR.back_emf_constant * drive.ratio * v[0])
        / MOTOR.resistance
    )
    tau = np.zeros(robot.nv)
    tau[0] = motor_torque
    expected = forward_dynamics(reference, q, v, tau, kinetic_energy="undeformed")
    assert np.abs(step.a - expected).max() < 1e-12 * np.abs(expected).max()
    traj = px.simulate(system, 0.2, q0=q, v0=v, control=u, output_dt=0.02)
    assert traj.energy_balance().max_relative() < 1e-9


def test_prescribed_hub_turns_a_flexible_bar_with_its_tip_in_a_slot():
    """A prescribed hub turns a flexible bar whose tip slides in a frictionless slot (a
    bilateral plane contact): the bar bends, the slot reacts, the hub follows its law."""
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    q0 = pin.neutral(robot.model)
    alpha = 0.4  # constant hub acceleration [rad/s^2]
    hub = px.Prescribed("hub", lambda t: 0.5 * alpha * t * t, lambda t: alpha * t, lambda t: alpha)
    slot = Contact(plane("tip", _tip_frame(robot, q0), (0.0, 1.0, 0.0)), unilateral=False)
    system = px.System(robot, contacts=[slot], components=[hub])
    traj = px.simulate(system, 0.5, q0=q0, output_dt=0.01)
    reference = 0.5 * alpha * traj.t**2
    assert np.abs(traj.q[:, 0] - reference).max() < 1e-12
    assert traj.outputs["contact.closed"].min() == 1.0
    assert np.abs(traj.outputs["contact.force"]).max() > 1e-3  # the slot holds the tip
    assert traj.constraint_residual().max() < 1e-9
    assert traj.energy_balance().max_relative() < 1e-9


def _tip_frame(robot: px.Robot, q: np.ndarray) -> np.ndarray:
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    return data.oMf[robot.model.getFrameId("tip")].translation.copy()


def _spin_up(omega: float, period: float):
    """ω(t) = (Ω/T)(t − (T/2π) sin(2πt/T)): rest to Ω in T with zero jerk at both ends."""
    c, w = omega / period, 2 * np.pi / period

    def law(t: float) -> tuple[float, float, float]:
        return (
            c * (t * t / 2 + (np.cos(w * t) - 1) / w**2),
            c * (t - np.sin(w * t) / w),
            c * (1 - np.cos(w * t)),
        )

    return law


SLED = f"""<robot name="sled"><link name="base"/>
<joint name="x" type="prismatic"><parent link="base"/><child link="carriage"/><axis xyz="1 0 0"/>
<limit lower="-50" upper="50" effort="100" velocity="100"/></joint>
<link name="carriage"><inertial><mass value="0.5"/>
<inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
<joint name="z" type="prismatic"><parent link="carriage"/><child link="body"/><axis xyz="0 0 1"/>
<limit lower="-5" upper="5" effort="100" velocity="100"/></joint>
<link name="body"><inertial><mass value="{MASS}"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
<joint name="tip_joint" type="fixed"><parent link="body"/><child link="tip"/>
<origin xyz="0 0 -0.1"/></joint><link name="tip"/></robot>"""


@pytest.mark.parametrize("efficiency", [1.0, 0.8, 0.5])
def test_lossy_gear_drives_and_brakes_a_body_sliding_on_the_table(tmp_path, efficiency):
    """Power through the lossy gear both ways while the body rests on the table: the motor
    accelerates the sled (driving), then the voltage drops and the sled's momentum drives the
    motor (backdriving); the body never leaves nor penetrates the table, the audit closes."""
    path = tmp_path / "sled.urdf"
    path.write_text(SLED)
    robot = px.load_urdf(path)
    drives = {"x": Drive(MOTOR, Gear(RATIO, efficiency=efficiency))}
    system = px.System(robot, drives=drives, contacts=[Contact(plane("tip", (0.0, 0.0, 0.0)))])
    schedule = px.Schedule([0.0, 0.25, 0.2501, 0.6], [[6.0], [6.0], [-1.0], [-1.0]], "linear")
    traj = px.simulate(system, 0.6, q0=np.array([0.0, 0.1]), control=schedule, output_dt=0.01)
    modes = {str(dict(p.modes).get("drives")) for p in traj.phases}
    if efficiency < 1.0:
        assert {"D", "B"} <= modes, modes  # driving, then backdriven by the sled
    assert traj.outputs["contact.closed"].min() == 1.0
    assert traj.outputs["contact.gap"].min() > -1e-9
    assert traj.constraint_residual().max() < 1e-9
    assert np.abs(traj.q[:, 1] - 0.1).max() < 1e-9  # the body stays on the table
    assert traj.q[-1, 0] > 0.01  # the sled travelled
    assert traj.energy_balance().max_relative() < 1e-9


@pytest.mark.parametrize("efficiency", [1.0, 0.7])
def test_lossy_gear_drives_a_sled_on_a_frictional_table_into_its_limit(tmp_path, efficiency):
    """A lossy gear drives the sled over a table with Coulomb friction (μ) and joint friction
    in x into the x limit: the contact slides, the limit takes a plastic impact with the
    contact's cone in the same impulse problem (no normal impulse: the cone takes none), the
    sled rests on the limit while the motor pushes; the body never leaves the table and the
    energy audit closes (motor, gear losses, friction, impact)."""
    path = tmp_path / "sled.urdf"
    path.write_text(SLED.replace('lower="-50" upper="50"', 'lower="-50" upper="0.05"'))
    robot = px.load_urdf(path)
    drives = {"x": Drive(MOTOR, Gear(RATIO, efficiency=efficiency))}
    contact = Contact(plane("tip", (0.0, 0.0, 0.0)), friction=0.1, name="table")
    system = px.System(robot, drives=drives, contacts=[contact], joint_friction={"x": 0.2})
    # 12 V: the motor's stall force through the gear (η k V N / R = 4.2 N at η = 0.7) beats the
    # table's and the joint's friction (μ m g + F_c = 2.16 N) from rest
    traj = px.simulate(system, 0.6, q0=np.array([0.0, 0.1]), control=[12.0], output_dt=0.01)
    names = [e.name for e in traj.events]
    assert "limit:x" in names
    hit = traj.events[names.index("limit:x")]
    assert hit.info["approach_velocity"] < 0.0 and hit.info["energy_loss"] > 0.0
    after = traj.t > hit.t
    assert np.abs(traj.v[after, 0]).max() < 1e-9  # resting on the limit
    assert traj.outputs["friction:table.state"][after, 0].min() == 1.0  # stuck on the table
    assert np.abs(traj.q[:, 1] - 0.1).max() < 1e-9  # never leaves nor penetrates the table
    assert traj.q[:, 0].max() <= 0.05 + 1e-9
    assert traj.energy_balance().max_relative() < 1e-9


def test_elastic_support_flexible_forearm_drives_limits_and_a_two_sided_contact():
    """Everything at once: the six_dof_arm with a flexible forearm on an elastic mount with a
    coupled 6×6 stiffness and damping, harmonic drives, a wrist driven into its stop, and the
    pen (its own spring and damper) pressing on a compliant, massive table with a contact
    layer (model (d)): the energy audit balances."""
    robot, q_arm = _flexible_six_dof_arm()
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    support = px.ElasticSupport(
        a @ a.T * 2e3 + np.diag([4e5, 4e5, 2e5, 3e4, 3e4, 2e4]), b @ b.T + np.eye(6) * 20.0
    )
    robot = px.add_support(robot, support)
    q0 = np.concatenate([np.zeros(6), q_arm])
    wrist = robot.model.joints[robot.joint_id("wrist_3")]
    robot.model.upperPositionLimit[wrist.idx_q] = q0[wrist.idx_q] + 0.01
    v0 = np.zeros(robot.nv)
    v0[wrist.idx_v] = 1.0
    env = DynamicEnvironment(
        mass=2.0, stiffness=2.0e4, damping=100.0, contact_stiffness=5e4, contact_damping=30.0
    )
    pen = Contact(plane("pen_tip", _tip(robot, q0)), tool_stiffness=8e4, tool_damping=20.0)
    system = px.System(robot, drives=harmonic_drives(JOINTS), contacts=[pen], environment=env)
    assert {c.name for c in system.components} >= {"support", "contact", "joint_limits"}
    traj = px.simulate(system, 0.2, q0=q0, v0=v0, control=np.full(6, 1.0), output_dt=0.005)
    assert any(e.name.startswith("limit") for e in traj.events), [e.name for e in traj.events]
    assert traj.outputs["contact.force"][:, 0].max() > 1.0  # the pen presses on the table
    assert np.abs(traj.q[:, :6]).max() > 1e-6  # the mount moves
    assert traj.energy_balance().max_relative() < 1e-8


def test_natural_frequencies_of_a_flexible_arm_on_an_elastic_mount():
    """The sublinks' springs and the mount's 6×6 stiffness in one eigenproblem on Pinocchio's
    mass matrix (assembled here from the sublinks' stiffness and the mount's matrix)."""
    robot, q_arm = _flexible_six_dof_arm()
    rng = np.random.default_rng(4)
    a = rng.standard_normal((6, 6))
    k = a @ a.T * 2e3 + np.diag([4e5, 4e5, 2e5, 3e4, 3e4, 2e4])
    mounted = px.add_support(robot, px.ElasticSupport(k))
    q = np.concatenate([np.zeros(6), q_arm])
    stiffness = np.zeros((mounted.nv, mounted.nv))
    stiffness[:6, :6] = k
    stiffness[6:, 6:] = np.diag(robot.joint_stiffness)
    mass = pin.crba(mounted.model, mounted.model.createData(), q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    locked = JOINTS  # the rigid joints held: the mount's and the forearm's modes remain
    free = [i for i in range(mounted.nv) if i not in [mounted.velocity_index(j) for j in locked]]
    from scipy.linalg import eigh

    values = eigh(stiffness[np.ix_(free, free)], mass[np.ix_(free, free)], eigvals_only=True)
    expected = np.sqrt(values) / (2 * np.pi)
    f = px.natural_frequencies(mounted, q, locked_joints=locked)
    np.testing.assert_allclose(f, expected, rtol=1e-9)
    assert f.size == 6 + robot.elastic_dofs().size
