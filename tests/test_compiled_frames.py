"""Loop closures on the compiled path (pinext.compiled.frames): the frame rows against
Pinocchio's frame kinematics (through Loop.kinematics) and pin.constraintDynamics, and a loop
with elastic drives, joint limits and joint friction in one System, on both paths."""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.compiled import path as compiled_path
from pinext.compiled.phase import rhs as compiled_rhs
from pinext.compiled.struct import view
from pinext.contact.constrained import baumgarte
from pinext.contact.limits import VelocityLimitWarning
from pinext.drives import DCMotor, Drive, ElasticTransmission
from pinext.robots import robot_path
from pinext.simulation.chart import Chart

from ._contact_models import pinocchio_loop_rows
from .models import arm_with_welded_box, tilted_table
from .test_assembly import _pin_two_welds

ROOT = Path(__file__).resolve().parents[1]
#: The tests compare the paths themselves (or the compiled kernel with Pinocchio).
BOTH_PATHS = False
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow"]


def _kernel(system, x, control=None):
    law = px.simulation.arguments.checked_control(control, system, x)
    phase = system.initial_phase(0.0, x, law)
    chart = Chart(system, x)
    kernel = compiled_path.phase_kernel(system, phase, chart, law)
    assert kernel is not None, "the phase does not compile"
    return kernel, chart, phase


def _states(system, rng, q_arm=None):
    """A seeded random closed state (the kernel's phase starts there) and the same state with
    the arm moved by 1e-2 rad and 0.1 rad/s: the loop open, its residual and Baumgarte's
    terms not zero."""
    q = pin.neutral(system.model)
    q[:6] = rng.uniform(-1.2, 1.2, 6) if q_arm is None else q_arm
    nq = system.model.nq
    if q_arm is None:
        closed = px.close_loops(system, q, rng.normal(size=system.model.nv))
    else:
        closed = system.initial_state(q, np.zeros(system.model.nv))
    opened = closed.copy()
    opened[:6] += rng.normal(scale=1e-2, size=6)
    opened[nq : nq + 6] += rng.normal(scale=1e-1, size=6)
    return closed, opened


@pytest.mark.parametrize("kind", ["point", "hinge", "weld"])
@pytest.mark.parametrize("load", ["mass", "body", "world"])
def test_frame_rows_equal_pinocchios_frame_kinematics(kind, load):
    """J and γ = J̇v + 2ω Jv + ω² φ of the compiled rows against Pinocchio's
    LOCAL_WORLD_ALIGNED frame Jacobians and classical accelerations and pin.log3
    (``_contact_models.pinocchio_loop_rows``), 5 seeded open
    states: the arm's tool joined to a point mass (three translations), to a rigid body (free
    flyer, chart with rotation vectors), or to a frame fixed in the world. Tolerances are
    rounding of O(1) sums: 1e-12 on J, 1e-10 relative on γ."""
    arm = px.load_robot("six_dof_arm")
    if load == "world":
        robot, frame_b = arm, "universe"
    else:
        inertia = pin.Inertia.FromBox(2.0, 0.3, 0.2, 0.1).inertia if load == "body" else None
        robot, frame_b = px.free_body(arm, "load", 2.0, inertia), "load"
    rng = np.random.default_rng(11)
    loop_args: dict = dict(stabilization=20.0)
    if kind == "hinge":
        loop_args["axis"] = (0.2, 1.0, -0.3)
    q0 = pin.neutral(arm.model)
    if load == "world":  # closed where the arm starts (B' placed in the world there)
        q0[:6] = rng.uniform(-1.2, 1.2, 6)
        loop = px.Loop.closed_at(arm.model, q0, "tool", "universe", kind, **loop_args)
    else:
        loop = px.Loop("tool", frame_b, kind, **loop_args)
    system = px.System(robot, loops=[loop], joint_limits=False)
    nq = system.model.nq
    for _ in range(5):
        closed, x = _states(system, rng, q0[:6] if load == "world" else None)
        kernel, chart, _ = _kernel(system, closed)
        y = chart.to_internal(x)
        compiled_rhs(view(kernel), 0.0, y, np.empty(y.size))
        q, v = chart.configuration(y), x[nq : nq + system.model.nv]
        data = system.model.createData()
        pin.computeAllTerms(system.model, data, q, v)
        residual, jacobian, drift = pinocchio_loop_rows(loop, system.model, data)
        w = loop.stabilization
        gamma = drift + 2 * w * jacobian @ v + w**2 * residual
        assert np.abs(residual).max() > 1e-4  # the loop is open: φ matters
        np.testing.assert_allclose(kernel.frames.jac, jacobian, rtol=0, atol=1e-12)
        scale = 1.0 + np.abs(gamma).max()
        np.testing.assert_allclose(kernel.frames.gamma, gamma, rtol=0, atol=1e-10 * scale)


def _cell():
    spec = importlib.util.spec_from_file_location("carry", ROOT / "examples/two_arms_carry.py")
    carry = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(carry)
    system, x0 = carry.build()
    loops = [c for c in system.components if isinstance(c, px.Loop)]
    return system, loops, x0


def test_two_welds_equal_constraint_dynamics():
    """Two arms welded to a box (12 rows on 18 dofs, a free flyer): the compiled accelerations
    equal pin.constraintDynamics (two CONTACT_6D models, bare index-1 rows) on 5 seeded
    closed states with random torques, to 1e-9 relative (the KKT system's conditioning)."""
    system, loops, x0 = _cell()
    model = system.model
    for loop in loops:
        loop.stabilization = None
    rng = np.random.default_rng(5)
    q0, _ = system.split(x0)
    for _ in range(5):
        q = q0.copy()
        q[:12] += rng.normal(scale=0.05, size=12)
        x = px.close_loops(system, q, rng.normal(size=model.nv))
        q, v = system.split(x)
        tau = np.r_[rng.normal(scale=5.0, size=12), np.zeros(6)]
        kernel, chart, _ = _kernel(system, x, tau)
        y = chart.to_internal(x)
        out = np.empty_like(y)
        compiled_rhs(view(kernel), 0.0, y, out)
        a_pin, _, _ = _pin_two_welds(system, loops, q, v, tau)
        a = out[model.nv : 2 * model.nv]
        assert np.abs(a - a_pin).max() < 1e-9 * (1.0 + np.abs(a_pin).max())


def _on_both_paths(monkeypatch, run, name=lambda event: event.name):
    """``run()`` on the compiled path and on the Python path (velocity-limit reports
    silenced): (compiled, python), the compiled run having compiled every segment, the Python
    one none, and both having met the same events (as ``name`` tells them apart)."""
    runs = []
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", VelocityLimitWarning)
            runs.append(run())
    compiled, python = runs
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]
    assert python.meta["stats"]["compiled_segments"] == 0
    assert [name(e) for e in compiled.events] == [name(e) for e in python.events]
    return compiled, python


def test_a_loop_with_drives_limits_and_friction_on_both_paths(tmp_path, monkeypatch):
    """The arm with its load welded, elastic drives, joint friction and limits, 1 s from rest
    at a seeded pose: the compiled run compiles every segment, meets the same events at the
    same times (1e-8 s) and follows the Python run to 1e-7 (both at rtol 1e-10); on each the
    weld holds (1e-9) and the energy audit closes (1e-8)."""
    system, x0 = arm_with_welded_box(tmp_path)
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(system, 1.0, x0=x0, rtol=1e-10, atol=1e-12, output_dt=0.01),
    )
    names = [e.name for e in compiled.events]
    assert any(n.startswith("limit:") for n in names)  # a stop is met
    assert any(n.startswith("limit-off:") for n in names)  # and left (a Reaction event)
    assert any("friction" in n for n in names)  # a joint sticks or slips
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-8
    assert np.abs(compiled.x[:, : system.model.nq] - python.x[:, : system.model.nq]).max() < 1e-7
    for traj in (compiled, python):
        assert traj.constraint_residual("loop:tool-box").max() < 1e-9
        assert traj.energy_balance().max_relative() < 1e-8


def test_contact_rows_equal_the_constraint_kinematics():
    """A closed contact of the six-DOF arm's tool point (offset in the tool frame) on a tilted
    plane: the compiled row J and γ, and the Python path's (the same FrameRows block through
    Pinocchio's joint motions), against the Contact's functional coordinate z (Pinocchio's
    frame Jacobian and classical acceleration), and its gap against ``approach_gap``, on 5
    seeded states. Rounding of O(1) sums: 1e-12, 1e-10 relative."""
    from pinext.contact.component import ContactModes, ContactState

    arm = px.load_robot("six_dof_arm")
    rng = np.random.default_rng(4)
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    tool = pin.SE3(np.eye(3), np.array([0.01, -0.02, 0.05]))
    contact = tilted_table(arm, "tool", q0, 0.0, tool)
    system = px.System(arm, contacts=[contact], joint_limits=False)
    comp = next(c for c in system.components if c.name == "contact")
    x0 = system.initial_state(q0, np.zeros(6))  # the tool on the plane, at rest: closed
    law = px.simulation.arguments.checked_control(None, system, x0)
    closed = system.initial_phase(0.0, x0, law)
    assert closed.get("contact") == ContactModes((ContactState.CLOSED,))
    free = closed.replace("contact", ContactModes((ContactState.FREE,)))
    kernel = compiled_path.phase_kernel(system, closed, Chart(system, x0), law)
    watching = compiled_path.phase_kernel(system, free, Chart(system, x0), law)
    assert comp.compiled_rows(closed.get("contact")).m == 1
    data = arm.model.createData()
    for _ in range(5):
        q, v = q0 + rng.normal(scale=0.05, size=6), rng.normal(size=6)
        x = system.initial_state(q, v)
        compiled_rhs(view(kernel), 0.0, x.copy(), np.empty(x.size))
        compiled_rhs(view(watching), 0.0, x.copy(), np.empty(x.size))
        pin.computeAllTerms(arm.model, data, q, v)
        kin = contact.constraint.evaluate(arm.model, data, 0.0)
        gamma = kin.drift - baumgarte(kin, v, contact.stabilization)
        np.testing.assert_allclose(kernel.frames.jac, kin.jacobian, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kernel.frames.gamma, gamma, rtol=0, atol=1e-10)
        python = comp._row_kinematics(0, data, 0.0)  # the Python path's row: the same block
        for got, want in zip(python, kin, strict=True):
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
        gap = contact.constraint.approach_gap(arm.model, data, 0.0)
        assert abs(gap) > 1e-3 and abs(watching.frames.gap[0] - gap) < 1e-12


def test_bouncing_tool_on_both_paths(monkeypatch):
    """The arm falls limp onto a tilted table, its tool bouncing (e = 0.5) until the bounces
    are cut (rest velocity) and it rests, slides and lifts off: every segment compiled (the
    approach gap and the lift-off reaction are compiled events, the bounces applied inside
    the compiled run: pinext.compiled.impacts), the same events as the
    Python path at the same times (1e-9 s), the same path (1e-8), the audit closed (1e-9)."""
    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    system = px.System(arm, contacts=[tilted_table(arm, "tool", q0, 0.1)], joint_limits=False)
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(system, 1.5, q0=q0, rtol=1e-10, atol=1e-12, output_dt=0.01),
    )
    assert compiled.meta["stats"]["loop_events"] > 5  # bounces applied in the loop
    names = [e.name for e in compiled.events]
    assert names.count("contact:tool") > 5
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-9
    assert np.abs(compiled.q - python.q).max() < 1e-8
    assert compiled.energy_balance().max_relative() < 1e-9


def test_bounces_share_their_kernel_without_sharing_their_state(monkeypatch):
    """Each bounce's flight is a phase of its own (its contact carries the time it left), yet
    the flights share one compiled kernel, taken from the engine's cache (phases of one
    :attr:`Phase.structure`): fewer kernels than phases, and the run equals, bit for bit, the
    run that builds a fresh kernel for every segment (no work array carries anything from one
    segment to the next)."""
    from pinext.simulation.caches import cache

    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    table = tilted_table(arm, "tool", q0, 0.1)

    def run():
        system = px.System(arm, contacts=[table], joint_limits=False)
        traj = px.simulate(system, 1.0, q0=q0, rtol=1e-10, atol=1e-12, output_dt=0.01)
        return traj, len(cache(system, "phase_kernels"))

    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        shared, kernels = run()
        monkeypatch.setattr(
            compiled_path,
            "engine_cache",
            lambda system, name: {} if name == "phase_kernels" else cache(system, name),
        )
        fresh, _ = run()
    stats = shared.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]
    assert len({p.modes for p in shared.phases}) > kernels + 5
    assert [e.name for e in shared.events] == [e.name for e in fresh.events]
    np.testing.assert_array_equal(shared.t, fresh.t)
    np.testing.assert_array_equal(shared.x, fresh.x)


def test_a_run_of_many_segments_pauses_for_its_bar_a_few_times_in_all(monkeypatch):
    """The pauses of the compiled loop for the progress bar are counted in evaluations
    (FIRST_PAUSE at first, fourfold more while they come faster than BAR_INTERVAL, a fourth
    after a pause that took over a second: the kernels' first compilation), and their spacing
    carries over from one segment to the next: the bouncing tool's 2 s (two dozen bounces a
    few hundred evaluations apart, most applied inside the compiled run) return to Python once
    per segment, and besides at most once per FIRST_PAUSE / 4 evaluations, not a few times
    per segment nor once per bounce."""
    from pinext.compiled import impacts

    calls = []

    def counted(advance):
        def call(*args):
            calls.append(1)
            return advance(*args)

        return call

    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    system = px.System(arm, contacts=[tilted_table(arm, "tool", q0, 0.1)], joint_limits=False)
    monkeypatch.setattr(compiled_path._dop, "advance", counted(compiled_path._dop.advance))
    monkeypatch.setattr(impacts, "dop853_bouncing", counted(impacts.dop853_bouncing))
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    traj = px.simulate(system, 2.0, q0=q0)
    stats = traj.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] and len(traj.events) > 20
    assert len(calls) <= stats["segments"] + stats["nfev"] // (compiled_path.FIRST_PAUSE // 4)


def test_a_welded_box_on_a_table_with_drives_limits_and_friction(tmp_path, monkeypatch):
    """Every row kind at once: the arm holding a box (weld loop), elastic DC drives, URDF
    joint friction and joint limits, and a corner of the box falling onto a tilted table
    (contact: impacts, rest, lift-off), 1 s on both paths: every segment compiled, the same
    events at the same times (1e-8 s), the same path (1e-7), the weld held (1e-9) and the audit
    closed (1e-8)."""
    system, x0 = arm_with_welded_box(tmp_path, table=0.02)
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(system, 1.0, x0=x0, rtol=1e-10, atol=1e-12, output_dt=0.01),
    )
    names = [e.name for e in compiled.events]
    assert "contact:box" in names
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-8
    assert np.abs(compiled.x[:, : system.model.nq] - python.x[:, : system.model.nq]).max() < 1e-7
    for traj in (compiled, python):
        assert traj.constraint_residual("loop:tool-box").max() < 1e-9
        assert traj.energy_balance().max_relative() < 1e-8


def test_cartesian_law_in_the_kernel_equals_the_python_law():
    """The writing task's CartesianPD evaluated by the compiled kernel (compiled kinematics,
    Jacobian, log3 and gravity torque) against its Python evaluation (Pinocchio's), at 5
    seeded states and times: 1e-10 relative."""
    from pinext import tasks
    from pinext.compiled.phase import _inputs

    robot = tasks.writing_arm()
    model = robot.model
    q0 = tasks.start_configuration(model, np.array([0.55, -0.1, 0.25]))
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    start = data.oMf[model.getFrameId(tasks.FRAME)].copy()
    law = tasks.writing_controller(model, start, 0.2, 10.0, 0.6, (0.8, 2.6), 0.2)
    system = px.System(robot, joint_limits=False)
    x0 = system.initial_state(q0)
    state_law = px.simulation.arguments.checked_control(law, system, x0)
    kernel, _, _ = _kernel(system, x0, law)
    assert kernel.cartesian.gains.size == 9
    rng = np.random.default_rng(8)
    for _ in range(5):
        x = system.initial_state(q0 + rng.normal(scale=0.2, size=6), rng.normal(size=6))
        t = rng.uniform(0.0, 3.0)
        u = np.empty(6)
        _inputs(view(kernel), t, x, u)
        expected = state_law(t, x)
        np.testing.assert_allclose(u, expected, rtol=0, atol=1e-10 * np.abs(expected).max())


@pytest.mark.parametrize("environment", ["rigid", "compliant", "spring"])
def test_writing_task_on_both_paths(monkeypatch, environment):
    """The writing task (approach, impact, writing with its Cartesian law) on the rigid table
    and on model (c)'s table mass (its row coupled to the mass, the compliance 1/m_e in the
    compiled solve): every segment compiled, the impact at the Python path's time (1e-9 s),
    the same path and table motion (1e-8, both at rtol 1e-10), the same normal force (1e-8
    of its 10 N) and the same recorded torques (the kernel's against the law's own)."""
    from pinext.tasks import run_writing_task

    compiled, python = _on_both_paths(
        monkeypatch, lambda: run_writing_task(environment, 3.0, output_dt=0.01)
    )
    assert [e.name for e in compiled.events] == ["contact:table"]
    assert abs(compiled.events[0].t - python.events[0].t) < 1e-9
    assert np.abs(compiled.x[:, :-2] - python.x[:, :-2]).max() < 1e-8
    force = compiled.outputs["contact.force"], python.outputs["contact.force"]
    assert np.abs(force[0] - force[1]).max() < 1e-8 * np.abs(force[1]).max()
    u = compiled.outputs["input"], python.outputs["input"]  # the law's torques, recorded
    assert np.abs(u[0] - u[1]).max() < 1e-8 * np.abs(u[1]).max()


def test_a_flexible_arm_driven_into_a_wall_on_both_paths(monkeypatch):
    """Flexible links, an elastic DC drive, a joint limit and a contact in one System: the
    flexible arm (four sublinks) swung by its hub's drive into a wall, its tip bouncing
    (e = 0.5) until it rests: every segment compiled, the same events at the same times
    (1e-8 s), the same path (1e-7, both at rtol 1e-10) and the audit closed (1e-9)."""
    from pinext.contact import Contact, plane
    from pinext.flexible import FlexibleLink

    robot = px.load_urdf(
        robot_path("flexible_arm"), flexible=[FlexibleLink("bar", 4, 7e10, 0.01**4 / 12)]
    )
    robot.model.upperPositionLimit[0] = 0.6  # the hub's stop, past the wall
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    wall = Contact(plane("tip", (0.0, 0.5, 0.0), (0.0, -1.0, 0.0)), restitution=0.5)
    system = px.System(
        robot, drives={"hub": Drive(motor, ElasticTransmission(50.0, 500.0, 1.0))}, contacts=[wall]
    )
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(
            system, 1.5, control=[6.0], rtol=1e-10, atol=1e-12, output_dt=0.01, progress=False
        ),
    )
    names = [e.name for e in compiled.events]
    assert names.count("contact:tip") > 5
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-8
    nq = system.model.nq
    assert np.abs(compiled.x[:, :nq] - python.x[:, :nq]).max() < 1e-7
    for traj in (compiled, python):
        assert traj.energy_balance().max_relative() < 1e-9


def test_a_layer_in_front_of_a_free_mass_on_both_paths(monkeypatch, tmp_path):
    """A body (m = 2 kg, no gravity) meets a free mass (m_e = 3 kg) through a massless layer
    (k_c, model (d)) with a rigid tool: the compiled layer (its force, the mass and the
    compression) gives the closed forms of an undamped impact through a spring, the contact
    lasting π √(m_eff / k_c) and the velocities coming out as in an elastic collision
    (1e-9), with the approach and the lift-off located as on the Python path (1e-12 s) and
    the energy audit closed (1e-10)."""
    from pinext.contact import Contact, DynamicEnvironment, plane

    mass, m_e, k_c = 2.0, 3.0, 6.0e4
    urdf = tmp_path / "slider.urdf"
    urdf.write_text(
        '<robot name="slider"><link name="base"/><joint name="z" type="prismatic">'
        '<parent link="base"/><child link="body"/><axis xyz="0 0 1"/>'
        '<limit lower="-5" upper="5" effort="100" velocity="10"/></joint><link name="body">'
        f'<inertial><mass value="{mass}"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" '
        'iyz="0" izz="0.01"/></inertial></link><joint name="tip_joint" type="fixed">'
        '<parent link="body"/><child link="tip"/><origin xyz="0 0 -0.1"/></joint>'
        '<link name="tip"/></robot>'
    )
    robot = px.load_urdf(urdf)
    robot.model.gravity = pin.Motion.Zero()
    environment = DynamicEnvironment(mass=m_e, stiffness=0.0, damping=0.0, contact_stiffness=k_c)
    system = px.System(
        robot, contacts=[Contact(plane("tip", (0.0, 0.0, 0.0)))], environment=environment
    )

    def run():
        return px.simulate(system, 0.1, q0=np.array([0.11]), v0=np.array([-1.0]), rtol=1e-11)

    compiled, python = _on_both_paths(monkeypatch, run)
    assert [e.name for e in compiled.events] == ["contact:tip", "lift-off:tip"]
    for a, b in zip(compiled.events, python.events, strict=True):
        assert abs(a.t - b.t) < 1e-12
    reduced = mass * m_e / (mass + m_e)
    duration = compiled.events[1].t - compiled.events[0].t
    assert duration == pytest.approx(np.pi * np.sqrt(reduced / k_c), rel=1e-9)
    assert compiled.v[-1, 0] == pytest.approx((mass - m_e) / (mass + m_e) * -1.0, rel=1e-9)
    assert compiled.energy_balance().max_relative() < 1e-10


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_the_panda_hand_dropped_on_a_table_on_both_paths(monkeypatch, panda, seed):
    """example-robot-data's Panda (joint limits, its ``<mimic>`` fingers and URDF friction on)
    falling limp from a seeded random pose onto a table 5 cm below its hand (e = 0.3): every
    segment compiled, the same events (impacts, stops, rests) at the Python path's times
    (1e-7 s: both runs at rtol 1e-10, an event time inherits a path error of ~1e-10 divided by
    approach speeds of ~1e-3), the same final pose (1e-8 rad) and both runs sound (limits
    hold, the energy balances: :func:`tests.models.assert_sound_run`). The two fingers, one
    mirroring the other, meet their stops at the same instant: which of the tied stops names
    the event is rounding, so the event is told by its time and "a finger stop"."""
    from pinext.contact import Contact, plane
    from tests.models import assert_sound_run, random_pose

    model = panda.model
    q0 = random_pose(model, np.random.default_rng(seed))
    fingers = [model.joints[model.getJointId(f"panda_finger_joint{k}")].idx_q for k in (1, 2)]
    q0[fingers[1]] = q0[fingers[0]]  # the mimic coupling closed
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    height = data.oMf[model.getFrameId("panda_hand")].translation[2] - 0.05
    table = Contact(plane("panda_hand", (0.0, 0.0, height)), restitution=0.3)
    system = px.System(panda, contacts=[table])
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(system, 1.0, q0=q0),
        name=lambda e: e.name.replace("finger_joint2", "finger_joint1"),
    )
    assert any(e.name == "contact:panda_hand" for e in compiled.events)
    for a, b in zip(compiled.events, python.events, strict=True):
        assert abs(a.t - b.t) < 1e-7
    assert np.abs(compiled.q[-1] - python.q[-1]).max() < 1e-8
    for traj in (compiled, python):
        assert_sound_run(model, traj)


@pytest.mark.parametrize("model", ["c", "d"])
def test_a_dynamic_table_with_drives_limits_and_friction_on_both_paths(
    tmp_path, monkeypatch, model
):
    """The six-DOF arm with elastic DC drives on three joints, URDF Coulomb friction in two
    and its limits, falling limp from a seeded pose onto a massive compliant table (model
    (c): the tool's row on the table's mass; model (d): the same behind a damped layer) 2 cm
    below its tool, 1 s: the tool bounces on the mass (c) or presses and leaves the layer
    (d) while the joints stick and slip; every segment compiled, the same events at the same
    times (1e-8 s), the same path and table motion (1e-7, both at rtol 1e-10), and each run's
    energy audit closed (1e-8) — the environment's states, the drives' and the friction's
    rows in one compiled phase."""
    from pinext.contact import Contact, DynamicEnvironment, plane

    text = robot_path("six_dof_arm").read_text().replace('friction="0.0"', 'friction="0.3"', 2)
    urdf = tmp_path / "arm.urdf"
    urdf.write_text(text)
    arm = px.load_urdf(urdf, package_dirs=[robot_path("six_dof_arm").parent])
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    data = arm.model.createData()
    pin.framesForwardKinematics(arm.model, data, q0)
    height = data.oMf[arm.model.getFrameId("tool")].translation[2] - 0.02
    layer = {"contact_stiffness": 5.0e4, "contact_damping": 50.0} if model == "d" else {}
    table = DynamicEnvironment(mass=2.0, stiffness=2.0e4, damping=100.0, **layer)
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    drives = {j: Drive(motor, ElasticTransmission(100.0, 3000.0, 2.0)) for j in JOINTS}
    system = px.System(
        arm,
        drives=drives,
        contacts=[Contact(plane("tool", (0.0, 0.0, height)), restitution=0.3)],
        environment=table,
    )
    compiled, python = _on_both_paths(
        monkeypatch,
        lambda: px.simulate(system, 1.0, q0=q0, rtol=1e-10, atol=1e-12, output_dt=0.01),
    )
    names = [e.name for e in compiled.events]
    assert names.count("contact:tool") >= 2 and any("friction_slips" in n for n in names)
    assert model == "c" or "lift-off:tool" in names
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-8
    assert np.abs(compiled.x[:, :-2] - python.x[:, :-2]).max() < 1e-7
    for traj in (compiled, python):
        assert traj.energy_balance().max_relative() < 1e-8


def test_a_cartesian_law_changed_between_runs_runs_as_changed():
    """The compiled form of a CartesianPD is built once a run (for every segment's kernel
    and for the recorded torques) and never kept across runs: a gain changed between two runs
    of one System runs the second run with the new gain, sample for sample as a new law with
    that gain, and differently from the first run."""
    import copy

    from pinext.tasks import writing_scene

    system, q0, law = writing_scene("rigid")

    def run(control):
        return px.simulate(system, 0.5, q0=q0, control=control, rtol=1e-8, progress=False)

    first = run(law)
    law.kp = 2.0 * law.kp
    second, fresh = run(law), run(copy.deepcopy(law))
    np.testing.assert_array_equal(second.x, fresh.x)
    np.testing.assert_array_equal(second.outputs["input"], fresh.outputs["input"])
    assert np.abs(second.x[-1] - first.x[-1]).max() > 1e-6


@pytest.mark.parametrize("method", ["DOP853", "Radau"])
def test_a_step_ends_with_the_events_of_its_own_state(monkeypatch, method):
    """The compiled integrators take the events' values at the end of a step from the step's
    own last evaluation there (DOP853's FSAL stage, Radau's f at the new point) instead of a
    second right-hand side: after every return that is not an event, the values they hold
    (``g_last``) equal the events evaluated afresh at the returned state (``events_at``),
    the tool's approach gap in flight and the contact's reaction while it rests and slides
    on the bouncing tool's table. Both are the same expressions of the same state: 1e-12 of
    their scale."""
    from pinext.compiled import dop853, radau
    from pinext.compiled.events import GAP, REACTION, events_at

    module = dop853 if method == "DOP853" else radau
    advance, checked = module.advance, []

    def checking(kernel, y, *args):
        code = advance(kernel, y, *args)
        st, g_last, evs = (args[i] for i in ((5, 10, 11) if method == "DOP853" else (12, 17, 18)))
        if code in (dop853.DONE, dop853.PAUSE) and g_last.size:
            fresh = np.empty(g_last.size)
            events_at(kernel, st[module._T], y.copy(), evs, fresh, np.empty(y.size))
            checked.append((set(evs[0].tolist()), np.abs(g_last - fresh).max()))
            assert np.abs(g_last - fresh).max() <= 1e-12 * max(1.0, np.abs(fresh).max())
        return code

    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    system = px.System(arm, contacts=[tilted_table(arm, "tool", q0, 0.1)], joint_limits=False)
    monkeypatch.setattr(module, "advance", checking)
    solve = px.compiled.solve  # (bounces applied in the loop would return through a wrapper)
    monkeypatch.setattr(px.compiled, "solve", lambda *a, **k: solve(*a, **{**k, "bounces": 0}))
    monkeypatch.setattr(compiled_path, "FIRST_PAUSE", 50)  # returns within the segments too
    monkeypatch.setattr(compiled_path, "BAR_INTERVAL", 0.0)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    traj = px.simulate(system, 1.5, q0=q0, method=method, progress=True)
    assert traj.meta["stats"]["compiled_segments"] == traj.meta["stats"]["segments"]
    kinds = set().union(*(k for k, _ in checked))
    assert {GAP, REACTION} <= kinds, kinds
