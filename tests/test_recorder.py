"""The recorder of simulate's segments, and the Trajectory it builds as pure data: its outputs
do not follow a System, a model or a control law changed after the run, it references none of
them, and a save/load keeps every output bit for bit."""

from __future__ import annotations

import dataclasses
import gc
import threading
import types
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.drives import DCMotor, Drive, Gear
from pinext.simulation.chart import Chart
from pinext.simulation.component import Component
from pinext.simulation.controls import Schedule, as_control
from pinext.simulation.outputs import LazyOutputs, Outputs, sample_outputs
from pinext.simulation.recorder import Recorder, applied_inputs
from tests.conftest import pendulum_urdf


def test_a_continuing_segment_that_did_not_advance_ends_where_it_started():
    """A restart whose solver stops at once (its only sample is the start, which the previous
    segment recorded) ends at (t, x); it raised IndexError on an empty segment."""
    system = px.System(px.load_robot("six_dof_arm"))
    x = system.initial_state()
    chart = Chart(system, x, False)
    phase = system.initial_phase(0.0, x)
    y = chart.to_internal(x)[:, None]
    record = Recorder(system)
    first = SimpleNamespace(t=np.array([0.0, 0.25]), y=np.hstack((y, y)), t_events=None)
    record.segment(first, chart, 0.0, x, phase, None, physical=False, continuing=False)
    again = SimpleNamespace(t=np.array([0.25]), y=y, t_events=None)
    t_end, x_end = record.segment(
        again, chart, 0.25, x, phase, None, physical=False, continuing=True
    )
    assert t_end == 0.25 and np.array_equal(x_end, x)


def _flyer_wheel_arm() -> px.System:
    """A free flyer carrying a continuous joint and a revolute joint (unit spheres)."""
    model = pin.Model()
    base = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    wheel = model.addJoint(base, pin.JointModelRUBY(), pin.SE3.Identity(), "wheel")
    arm = model.addJoint(base, pin.JointModelRX(), pin.SE3.Identity(), "arm")
    for j in (base, wheel, arm):
        model.appendBodyToJoint(j, pin.Inertia.FromSphere(1.0, 0.1), pin.SE3.Identity())
    return px.System(px.Robot.from_model(model))


def test_chart_rate_moves_the_configuration_at_the_velocity():
    """The chart of a free flyer, a continuous joint and a revolute joint (position and
    angles as they are, the orientation as a rotation vector at the anchor): at a seeded
    random point far from the anchor, moving the internal coordinates at ``q_rate(y, v)``
    moves the configuration at the velocity v (Pinocchio's ``difference`` of the two
    configurations, central differences: O(ε²)); and the coordinates of a configuration
    give it back."""
    system = _flyer_wheel_arm()
    model = system.model
    rng = np.random.default_rng(3)
    q_anchor = pin.normalize(model, rng.uniform(-1, 1, model.nq))
    chart = Chart(system, system.initial_state(q_anchor), False)
    # the rotation vector re-centres (within ±CHART_RADIUS), nothing else
    assert chart.recentring is not None
    assert sorted(set(chart.recentring.entry.tolist())) == [3, 4, 5]
    y = np.zeros(system.nx - (model.nq - model.nv))
    y[: model.nv] = rng.normal(size=model.nv) * 0.6
    v = rng.normal(size=model.nv)
    rate, eps = chart.q_rate(y, v), 1e-5
    ahead, behind = y.copy(), y.copy()
    ahead[: model.nv] += eps * rate
    behind[: model.nv] -= eps * rate
    moved = pin.difference(model, chart.configuration(behind), chart.configuration(ahead))
    np.testing.assert_allclose(moved / (2 * eps), v, rtol=0, atol=1e-8)
    q = chart.configuration(y)
    back = chart.angles.coordinates(q, model.nv, chart.anchor)
    np.testing.assert_allclose(back, y[: model.nv], rtol=0, atol=1e-12)


def test_a_segment_converts_its_samples_in_one_loop_as_the_chart_converts_each():
    """The recorder's compiled conversion (:func:`pinext.compiled.charts.public_states`) of
    seeded random samples on the chart of a free flyer (its quaternion from a rotation vector
    at a random anchor), a continuous joint (cos θ, sin θ) and a revolute joint equals
    ``Chart.to_public`` of each sample, to rounding (the same source, compiled)."""
    from pinext.compiled.charts import public_states

    system = _flyer_wheel_arm()
    model = system.model
    rng = np.random.default_rng(5)
    x = system.initial_state(pin.normalize(model, rng.uniform(-1, 1, model.nq)))
    chart = Chart(system, x, False)
    samples = rng.normal(size=(20, x.size - (model.nq - model.nv)))
    expected = np.array([chart.to_public(y) for y in samples])
    np.testing.assert_allclose(public_states(chart, samples), expected, rtol=0, atol=1e-15)


MOTOR = dict(
    resistance=0.5,
    torque_constant=0.05,
    back_emf_constant=0.05,
    rotor_inertia=2e-5,
    viscous_friction=1e-6,
)
DURATION = 0.5


@pytest.fixture
def scene(tmp_path):
    """A double pendulum behind two DC drives (rigid gears, N = 20), with its joint limits,
    and a Python law whose gain lives in a list the test can change after the run."""
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n=2))
    robot = px.load_urdf(path)
    joints = list(robot.model.names)[1:]
    drives = {j: Drive(DCMotor(**MOTOR), Gear(20.0)) for j in joints}
    system = px.System(robot, drives=drives)
    gain = [2.0]
    nq = system.model.nq

    def law(t, x):
        return gain[0] * np.array([np.sin(3.0 * t), -x[nq]])

    return system, law, gain


def _run(system, law):
    return px.simulate(system, DURATION, q0=np.array([0.4, -0.3]), control=law, output_dt=0.01)


def _reachable(root) -> list:
    """Every object reachable from ``root`` through references (functions through their
    closures and defaults, not their module's globals; modules and classes not entered)."""
    seen: dict[int, object] = {}
    stack = [root]
    while stack:
        obj = stack.pop()
        if id(obj) in seen or isinstance(obj, (type, types.ModuleType)):
            continue
        seen[id(obj)] = obj
        if isinstance(obj, types.FunctionType):
            refs = [obj.__closure__, obj.__defaults__, obj.__kwdefaults__]
        else:
            refs = gc.get_referents(obj)
        stack.extend(r for r in refs if r is not None)
    return list(seen.values())


def _same_outputs(a, b) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        assert np.asarray(a[name]).dtype == np.asarray(b[name]).dtype, name
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)  # NaN equals NaN


def test_outputs_do_not_follow_a_system_changed_after_the_run(scene, simulation_path):
    system, law, gain = scene
    reference = _run(system, law)
    expected = {k: v.copy() for k, v in reference.outputs.items()}
    balance = reference.energy_balance().max_relative()
    assert balance < 1e-8

    traj = _run(system, law)
    # after the run: a heavier link, more joint damping, another gain, on every object the
    # user holds
    for model in (system.model, system.robot.model):
        inertia = model.inertias[1]
        inertia.mass = 3.0 * inertia.mass
        model.inertias[1] = inertia
    system.damping[:] += 5.0
    gain[0] = -7.0

    _same_outputs(traj.outputs, expected)
    assert traj.energy_balance().max_relative() == balance
    # the changes matter: outputs computed from the changed System break the energy balance
    changed = sample_outputs(
        system,
        traj.t,
        traj.x,
        traj.outputs["input"],
        traj.phase_index,
        [p.modes for p in traj.phases],
    )
    kinetic = changed["energy.kinetic"]
    assert np.abs(kinetic - expected["energy.kinetic"]).max() > 1e-3 * np.abs(kinetic).max()


def test_a_trajectory_references_no_live_object(scene, simulation_path):
    system, law, _ = scene
    traj = _run(system, law)
    live = [system, system.robot, system.model, system.data, system.robot.model, law]
    live += list(system.components)
    assert isinstance(traj.outputs, LazyOutputs)  # the outputs are not read yet
    reachable = {id(obj) for obj in _reachable(traj)}
    assert not [obj for obj in live if id(obj) in reachable]
    for drive in system.drives.values():  # shared only as frozen values, which cannot change
        if id(drive) in reachable:
            for part in (drive, drive.actuator, drive.transmission):
                with pytest.raises(dataclasses.FrozenInstanceError):
                    part.__setattr__("backlash" if part is drive.transmission else "x", 1.0)

    traj.outputs["input"]  # once read, no System, Robot, model or data at all
    found = [
        type(obj).__name__
        for obj in _reachable(traj)
        if isinstance(obj, (px.System, px.Robot, pin.Model, pin.Data, Component))
    ]
    assert found == []


def test_a_time_stepping_trajectory_references_no_live_object(tmp_path, simulation_path):
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n=2))
    robot = px.load_urdf(path)

    def law(t, x):
        return np.array([0.1, -0.1])

    traj = px.simulate(
        robot, 0.05, q0=np.array([0.4, -0.3]), control=law, method="timestepping", dt=1e-3
    )
    found = [
        type(obj).__name__
        for obj in _reachable(traj)
        if isinstance(obj, (px.System, px.Robot, pin.Model, pin.Data, Component)) or obj is law
    ]
    assert found == []


def test_save_and_load_keep_every_output_bit_for_bit(scene, tmp_path, simulation_path):
    system, law, _ = scene
    traj = _run(system, law)
    loaded = px.Trajectory.load(traj.save(tmp_path / "run.npz"))
    assert {"input", "energy.kinetic", "drives.current", "joint_limits.force"} <= set(
        loaded.outputs
    )
    _same_outputs(loaded.outputs, traj.outputs)
    np.testing.assert_array_equal(loaded.x, traj.x)
    assert loaded.energy_balance().max_relative() == traj.energy_balance().max_relative()


class _Uncopyable(Component):
    """A component holding a lock (which cannot be deep-copied) and reporting a signal."""

    name = "uncopyable"

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def outputs(self, t, x, q, v, u, mode, step):
        return {"twice_t": np.array([2.0 * t])}


def test_a_system_that_cannot_be_copied_has_its_outputs_computed_at_the_end(scene, simulation_path):
    system, law, _ = scene
    uncopyable = _Uncopyable()
    system = px.System(system.robot, drives=system.drives, components=[uncopyable])
    traj = _run(system, law)
    assert type(traj.outputs) is Outputs  # computed already, nothing held for later
    np.testing.assert_array_equal(traj.outputs["uncopyable.twice_t"][:, 0], 2.0 * traj.t)
    assert traj.energy_balance().max_relative() < 1e-8


@pytest.mark.parametrize("kind", ["zoh", "linear"])
def test_schedule_values_at_equal_its_calls_bit_for_bit(kind):
    rng = np.random.default_rng(3)
    times = np.cumsum(rng.uniform(0.01, 0.2, 12))
    schedule = Schedule(times, rng.normal(size=(12, 3)), kind=kind)
    samples = np.r_[-1.0, times[0], rng.uniform(-0.5, times[-1] + 0.5, 200), times, 99.0]
    expected = np.array([schedule(t) for t in samples])
    np.testing.assert_array_equal(schedule.values_at(samples), expected)


def test_applied_inputs_equal_the_law_at_each_sample():
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(0.0, 1.0, 50))
    x = rng.normal(size=(50, 5))
    laws = [
        as_control(None, 2),
        as_control([1.5, -2.0], 2),
        Schedule([0.0, 0.3, 0.7], [[0.0, 1.0], [2.0, -1.0], [0.5, 0.5]], kind="linear"),
        lambda t, x: np.array([t * x[0], np.cos(x[1])]),
    ]
    for law in laws:
        expected = np.array([law(ti, xi) for ti, xi in zip(t, x, strict=True)], dtype=float)
        inputs = applied_inputs(law, t, x)
        assert inputs.shape == (50, 2)
        np.testing.assert_array_equal(inputs, expected)
        inputs[:] = 0.0  # a copy: the law's own value is untouched
        np.testing.assert_array_equal(np.array(law(t[0], x[0]), dtype=float), expected[0])


def test_the_private_copy_leaves_the_caches_behind_and_runs_alike(tmp_path, simulation_path):
    """The six-DOF arm with its stops, falling onto a table: after a run its JointLimits and
    contact component hold caches of events, forms and frame rows; the trajectory's private
    copy of the System (:func:`frozen_copy`) and a pickled System hold none (rebuilt on
    demand), and each runs the same scene bit for bit as the original. The copies hold no
    Pinocchio Data until they run, then their own (:class:`pinext.model.FreshData`):
    Pinocchio's own pickled Data lacks its constraint workspaces, and the contact's
    ``forwardDynamics`` on it crashed the process."""
    import pickle

    from pinext.contact import Contact, plane
    from pinext.robots import robot_path
    from pinext.simulation.recorder import frozen_copy

    arm = px.load_urdf(robot_path("six_dof_arm"))
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    data = arm.model.createData()
    pin.framesForwardKinematics(arm.model, data, q0)
    height = data.oMf[arm.model.getFrameId("tool")].translation[2] - 0.05
    system = px.System(arm, contacts=[Contact(plane("tool", (0.0, 0.0, height)), 0.5)])
    reference = px.simulate(system, 0.5, q0=q0)
    limits, contact = system.components
    assert limits._events and limits._forms and contact._blocks

    def made(s):
        """The Pinocchio Data held by the System, its robot and its components."""
        holders = [s, s.robot, *s.components]
        return [v for h in holders for v in vars(h).values() if isinstance(v, pin.Data)]

    assert made(system)
    unused = pickle.loads(pickle.dumps(frozen_copy(system)))
    for copy in (frozen_copy(system), pickle.loads(pickle.dumps(system)), unused):
        limits, contact = copy.components
        assert not (limits._events or limits._forms or contact._blocks)
        assert not made(copy)
        traj = px.simulate(copy, 0.5, q0=q0)
        np.testing.assert_array_equal(traj.x, reference.x)
        assert [(e.t, e.name) for e in traj.events] == [(e.t, e.name) for e in reference.events]
        assert made(copy) and not {id(d) for d in made(copy)} & {id(d) for d in made(system)}
