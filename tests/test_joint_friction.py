"""Coulomb friction in the joints (pinext.contact.joint_friction): a pendulum with a friction
torque stops where the energy balance of each half swing says (closed form per swing) and sticks
once gravity's torque is within ±F_c; the URDF's <dynamics friction> drives it; combined with a
joint limit and a frictional contact, the energy audit closes."""

import warnings

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import brentq

import pinext as px
from pinext.contact import Contact, JointFriction, plane
from tests.conftest import pendulum_urdf
from tests.models import assert_sound_run, random_pose

G = 9.81
MASS, LENGTH = 1.0, 0.5

URDF = """<robot name="pendulum">
  <link name="base"/>
  <link name="bob">
    <inertial><origin xyz="0 0 -{l}"/><mass value="{m}"/>
      <inertia ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="hinge" type="{kind}">
    <parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>
    <limit lower="{lower}" upper="{upper}" effort="100" velocity="100"/>
    <dynamics damping="0" friction="{friction}"/>
  </joint>
</robot>
"""


def _pendulum(tmp_path, friction, lower=-3.0, upper=3.0, kind="revolute"):
    path = tmp_path / "pendulum.urdf"
    path.write_text(
        URDF.format(l=LENGTH, m=MASS, friction=friction, lower=lower, upper=upper, kind=kind)
    )
    return px.load_urdf(path)


def _stops(q0, friction):
    """Rest angles of the pendulum by hand: between two rests q_k, q_{k+1} (opposite sides)
    the energy balance is  m g l (cos q_{k+1} − cos q_k) = F_c |q_k − q_{k+1}|  (gravity's
    potential −m g l cos q, friction dissipating F_c per radian); it stops for good once
    m g l |sin q_k| ≤ F_c."""
    stops = [q0]
    mgl = MASS * G * LENGTH
    while mgl * abs(np.sin(stops[-1])) > friction:
        q = stops[-1]
        s = np.sign(q)

        def balance(p, q=q):
            return mgl * (np.cos(p) - np.cos(q)) - friction * abs(q - p)

        stops.append(brentq(balance, q - s * 1e-6, -q))
    return stops


def test_pendulum_with_joint_friction_stops_at_the_closed_form_angles(tmp_path):
    friction = 0.6
    robot = _pendulum(tmp_path, friction)
    system = px.System(robot, joint_limits=False)
    assert isinstance(system.components[-1], JointFriction)  # read from <dynamics friction>
    q0 = 1.2
    traj = px.simulate(system, 8.0, q0=np.array([q0]))
    stops = [e for e in traj.events if e.name == "hinge.friction_stops"]
    expected = _stops(q0, friction)[1:]
    assert len(stops) == len(expected)
    for event, angle in zip(stops, expected, strict=True):
        at = np.flatnonzero(traj.t == event.t)[-1]
        assert traj.q[at, 0] == pytest.approx(angle, abs=1e-9)
    assert traj.phases[-1].name == "friction:S"
    final = traj.q[-1, 0]
    assert MASS * G * LENGTH * abs(np.sin(final)) <= friction
    # stuck: the friction torque holds gravity's torque exactly
    torque = traj.outputs["joint_friction.torque"][-1, 0]
    assert torque == pytest.approx(MASS * G * LENGTH * np.sin(final), rel=1e-9)
    assert np.abs(traj.v[traj.t > stops[-1].t]).max() < 1e-9
    balance = traj.energy_balance()
    assert np.abs(balance.residual).max() < 1e-9
    # dissipation by hand: F_c times the path length
    path = np.abs(np.diff([q0, *expected])).sum()
    assert balance.dissipated[-1] == pytest.approx(friction * path, rel=1e-9)


def test_pendulum_within_the_friction_torque_stays_stuck(tmp_path):
    friction = 2.0
    system = px.System(_pendulum(tmp_path, friction), joint_limits=False)
    q0 = np.arcsin(0.9 * friction / (MASS * G * LENGTH))
    traj = px.simulate(system, 1.0, q0=np.array([q0]))
    assert not traj.events and [p.name for p in traj.phases] == ["friction:S"]
    assert np.abs(traj.q[:, 0] - q0).max() < 1e-12
    np.testing.assert_allclose(
        traj.outputs["joint_friction.torque"][:, 0], 0.9 * friction, rtol=1e-9
    )


def test_pendulum_stopped_by_its_limit_then_slips_back(tmp_path):
    """Joint limit + joint friction: the swing ends on the limit (plastic impact); gravity
    pulls the joint off at once and, since m g l sin(upper) > F_c, friction lets it slip
    back; the audit closes across the impact."""
    friction, upper = 0.6, 0.5
    system = px.System(_pendulum(tmp_path, friction, lower=-3.0, upper=upper))
    traj = px.simulate(system, 3.0, q0=np.array([-1.2]))
    names = [e.name for e in traj.events]
    assert names[0] == "limit:hinge"
    assert [p.name for p in traj.phases][:2] == ["friction:+", "friction:-"]
    first = traj.events[0]
    # speed at the limit by hand: ½ I v² = m g l (cos upper − cos q0) − F_c (upper − q0)
    inertia = MASS * LENGTH**2 + 1e-3
    energy = MASS * G * LENGTH * (np.cos(upper) - np.cos(-1.2)) - friction * (upper + 1.2)
    assert first.info["approach_velocity"] == pytest.approx(
        -np.sqrt(2 * energy / inertia), rel=1e-9
    )
    assert np.abs(traj.energy_balance().residual).max() < 1e-9
    assert traj.q[:, 0].max() <= upper + 1e-9


def _slider(mass=2.0):
    """A block on x and z prismatic joints, x limited to [-1, 0.2], with a frame "block"."""
    model = pin.Model()
    model.name = "slider"
    jx = model.addJoint(
        0,
        pin.JointModelPX(),
        pin.SE3.Identity(),
        "x",
        np.array([100.0]),
        np.array([100.0]),
        np.array([-1.0]),
        np.array([0.2]),
    )
    jz = model.addJoint(jx, pin.JointModelPZ(), pin.SE3.Identity(), "z")
    model.appendBodyToJoint(jz, pin.Inertia.FromSphere(mass, 0.05), pin.SE3.Identity())
    model.addFrame(pin.Frame("block", jz, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    return model


def test_block_with_joint_friction_contact_friction_and_a_limit():
    """A block sliding on a frictional plane (μ) with Coulomb friction F_c in its x joint hits
    its x limit: decelerates at μ g + F_c / m, stops on the limit in a plastic impact (the
    contact's cone takes no impulse: no normal impulse), then rests; energy closes."""
    mass, mu, fc, v0 = 2.0, 0.2, 1.0, 2.0
    contact = Contact(plane("block"), friction=mu, name="floor")
    system = px.System(_slider(mass), contacts=[contact], joint_friction={"x": fc})
    traj = px.simulate(system, 1.0, q0=np.zeros(2), v0=np.array([v0, 0.0]))
    decel = mu * G + fc / mass
    v_hit = np.sqrt(v0**2 - 2 * decel * 0.2)
    (hit,) = [e for e in traj.events if e.name == "limit:x"]
    assert hit.t == pytest.approx((v0 - v_hit) / decel, abs=1e-9)
    assert hit.info["approach_velocity"] == pytest.approx(-v_hit, rel=1e-9)
    assert hit.info["energy_loss"] == pytest.approx(0.5 * mass * v_hit**2, rel=1e-9)
    balance = traj.energy_balance()
    assert balance.dissipated[-1] == pytest.approx((mu * mass * G + fc) * 0.2, rel=1e-9)
    assert np.abs(balance.residual).max() < 1e-9
    assert np.abs(traj.v[traj.t > hit.t]).max() < 1e-9


def test_joint_friction_input_is_checked():
    model = _slider()
    with pytest.raises(px.exceptions.NameNotFound, match="nope"):
        JointFriction(model, {"nope": 1.0})
    with pytest.raises(px.exceptions.InvalidParameter, match=">= 0"):
        JointFriction(model, {"x": -1.0})


def test_extension_formats_set_the_joint_friction(tmp_path):
    """The sidecar's [joint_friction] table and the <pinext><joint_friction/> element override
    <dynamics friction>."""
    robot = _pendulum(tmp_path, 0.6)
    (tmp_path / "pendulum.pinext.toml").write_text("[joint_friction]\nhinge = 1.5\n")
    robot = px.load_urdf(tmp_path / "pendulum.urdf")
    (comp,) = [c for c in px.System(robot).components if isinstance(c, JointFriction)]
    assert comp.torque.tolist() == [1.5]
    text = (
        (tmp_path / "pendulum.urdf")
        .read_text()
        .replace(
            "</robot>", '<pinext><joint_friction joint="hinge" friction="0.25"/></pinext></robot>'
        )
    )
    (tmp_path / "pendulum.pinext.toml").unlink()
    (tmp_path / "pendulum.urdf").write_text(text)
    robot = px.load_urdf(tmp_path / "pendulum.urdf")
    (comp,) = [c for c in px.System(robot).components if isinstance(c, JointFriction)]
    assert comp.torque.tolist() == [0.25]
    assert not any(
        isinstance(c, JointFriction) for c in px.System(robot, joint_friction=False).components
    )


def test_time_stepping_joint_friction_converges_to_the_closed_form_stop(tmp_path):
    """Time stepping takes the URDF's joint friction as Pinocchio's
    JointFrictionConstraintModel (impulse bounds ±F_c h): the pendulum stops at the hand
    computed rest angle, the error falling with h (first order), and energy never rises."""
    friction = 0.6
    robot = _pendulum(tmp_path, friction)
    q0 = 1.2
    final = _stops(q0, friction)[-1]
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        traj = px.simulate(
            px.System(robot, joint_limits=False), 8.0, q0=np.array([q0]), method="timestepping",
            dt=dt,
        )  # fmt: skip
        errors.append(abs(traj.q[-1, 0] - final))
        assert np.abs(traj.v[-200:]).max() < 1e-9  # stuck for good
        energy = traj.energy_balance().energy
        assert np.diff(energy).max() < 1e-12  # friction only removes energy
    assert errors[-1] < 1e-5
    assert errors[2] < 0.7 * errors[1] < 0.49 * errors[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_joint_friction_limits_and_mimic_run_compiled_as_on_the_python_path(
    seed, simulation_path, monkeypatch, robots_dir
):
    """The Panda with Coulomb friction in its seven arm joints, its stops and its `<mimic>`
    fingers, from a seeded random pose: every phase (slipping, stuck, held on a stop) runs
    compiled, with the same events as the Python path and the same state to 1e-8 after 1 s
    (two implementations of one model, adaptive at rtol 1e-10); both runs are sound."""
    if simulation_path == "python":
        pytest.skip("compares both paths itself")
    robot = px.load_robot("panda")
    friction = {name: 1.5 for name in list(robot.model.names)[1:8]}
    q0 = random_pose(robot.model, np.random.default_rng(seed))
    runs = {}
    for which in ("compiled", "python"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", "1" if which == "python" else "0")
        system = px.System(robot, joint_friction=friction)
        runs[which] = px.simulate(system, 1.0, x0=px.close_loops(system, q0), progress=False)
        assert_sound_run(robot.model, runs[which])
    compiled, python = runs["compiled"], runs["python"]
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]

    def names(traj):  # the coupled fingers reach their stops together: a tie, either first
        return [e.name.replace("finger_joint2", "finger_joint1") for e in traj.events]

    assert names(compiled) == names(python)
    assert any(name.endswith("friction_stops") for name in names(compiled))
    np.testing.assert_allclose(
        [e.t for e in compiled.events], [e.t for e in python.events], rtol=0, atol=1e-8
    )
    np.testing.assert_allclose(compiled.q[-1], python.q[-1], atol=1e-8)
    np.testing.assert_allclose(compiled.v[-1], python.v[-1], atol=1e-8)


@pytest.mark.parametrize("seed", [0, 3])
def test_a_held_law_with_friction_limits_and_mimic_keeps_the_coulomb_law(
    seed, simulation_path, monkeypatch
):
    """The Panda with Coulomb friction (1.5 N.m) in its seven arm joints, its stops and its
    `<mimic>` fingers, under a `JointPD` held at 1 kHz to a Schedule, from a seeded random
    pose. A stuck joint starts slipping at the sample where the held torque jumps past its
    cone, and a joint that sticks or slips changes the reactions of the joints stuck before
    it, which slip in turn when they would need more than F_c. Checked: the Coulomb law
    |τ_f| ≤ F_c holds at every sample (1e-9 relative), the one after each event's map
    included (the samples that hold the state before it are left out); both runs are
    sound; the compiled path meets the Python path's events at its times (1e-8 s) and ends
    in its state (1e-8)."""
    if simulation_path == "python":
        pytest.skip("compares both paths itself")
    robot = px.load_robot("panda")
    friction = {name: 1.5 for name in list(robot.model.names)[1:8]}
    q0 = random_pose(robot.model, np.random.default_rng(seed))
    nv = robot.model.nv
    runs = {}
    for which in ("compiled", "python"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", "1" if which == "python" else "0")
        system = px.System(robot, joint_friction=friction)
        x0 = px.close_loops(system, q0)
        q_start = system.split(x0)[0]
        goal = px.Schedule([0.0, 0.5, 1.0], [q_start, q_start + 0.3, q_start], "linear")
        law = px.control.JointPD(system, goal, kp=np.full(nv, 30.0), kd=np.full(nv, 1.0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # velocity-limit reports
            run = px.simulate(system, 1.0, x0=x0, control=law, control_period=1e-3, progress=False)
        assert_sound_run(robot.model, run)
        before = [int(np.flatnonzero(run.t == e.t)[0]) for e in run.events]  # pre-map states
        torque = np.abs(np.delete(run.outputs["joint_friction.torque"], before, axis=0))
        assert torque.max() <= 1.5 * (1.0 + 1e-9), torque.max()
        runs[which] = run
    compiled, python = runs["compiled"], runs["python"]
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]
    assert any(".friction_slips" in e.name for e in compiled.events)

    def names(traj):  # the coupled fingers reach their stops together: a tie, either first
        return [e.name.replace("finger_joint2", "finger_joint1") for e in traj.events]

    assert names(compiled) == names(python)
    np.testing.assert_allclose(
        [e.t for e in compiled.events], [e.t for e in python.events], rtol=0, atol=1e-8
    )
    np.testing.assert_allclose(compiled.x[-1], python.x[-1], atol=1e-8)


def _two_links(tmp_path, shoulder_friction):
    """Two links of 0.4 m, 1 kg without gravity: the shoulder ``j0`` with a Coulomb friction
    torque, the elbow ``j1`` frictionless between stops at ±0.3 rad."""
    j0, j1 = pendulum_urdf(n=2).split('<joint name="j1"')
    j0 = j0.replace('damping="0.0"/>', f'damping="0.0" friction="{shoulder_friction}"/>')
    j1 = j1.replace('lower="-10" upper="10"', 'lower="-0.3" upper="0.3"')
    urdf = j0 + '<joint name="j1"' + j1
    path = tmp_path / "two_links.urdf"
    path.write_text(urdf)
    robot = px.load_urdf(path)
    robot.model.gravity = pin.Motion.Zero()
    return robot


@pytest.mark.parametrize("speed", [1e-4, 1.0])
def test_an_impact_passes_through_stuck_joints_only_when_faster_than_the_rest_velocity(
    tmp_path, speed
):
    """The elbow lands on its stop while friction holds the shoulder. Faster than the stop's
    rest velocity (1e-3 rad/s), the impact's impulse passes through the shoulder (a finite
    friction torque transmits none): q̇⁺ is the M-orthogonal projection with the elbow's row
    alone, the shoulder moves and slips until friction stops it. Slower, friction holds the
    shoulder through the impact: both rows held, q̇⁺ = 0 and the shoulder never moves, where
    it would otherwise creep at the order of the landing speed, slip and stop again at once.
    The energy audit closes across either."""
    robot = _two_links(tmp_path, shoulder_friction=50.0)
    system = px.System(robot)
    q0 = np.array([0.4, 0.3 - 1e-6])
    traj = px.simulate(system, 0.2, q0=q0, v0=np.array([0.0, speed]))
    first = traj.events[0]
    assert first.name == "limit:j1"
    after = np.flatnonzero(traj.t == first.t)[-1]
    v_before, v_after = traj.v[after - 1], traj.v[after]
    if speed < 1e-3:
        np.testing.assert_allclose(v_after, 0.0, rtol=0, atol=1e-12 * speed)
        assert "j0.friction_stops" not in [e.name for e in traj.events]
        assert np.abs(traj.q[:, 0] - q0[0]).max() < 1e-12  # the shoulder never moves
    else:
        mass = pin.crba(robot.model, robot.model.createData(), traj.q[after])
        mass = np.triu(mass) + np.triu(mass, 1).T
        row = np.array([[0.0, 1.0]])
        minv_jt = np.linalg.solve(mass, row.T)
        expected = v_before - minv_jt @ np.linalg.solve(row @ minv_jt, row @ v_before)
        np.testing.assert_allclose(v_after, expected, rtol=0, atol=1e-12 * speed)
        assert abs(v_after[0]) > 0.1 * speed
        assert "j0.friction_stops" in [e.name for e in traj.events]
    assert traj.energy_balance().max_relative() < 1e-8
