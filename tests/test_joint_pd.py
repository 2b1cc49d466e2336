"""JointPD against closed forms: the steady state of a pendulum under PD, the reference held
exactly with gravity compensation (rigid joints and elastic drives)."""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest
from scipy.optimize import brentq

import pinext as px
from pinext.control.reference import JointReference
from pinext.exceptions import InvalidParameter
from pinext.simulation.controls import Schedule

from .conftest import pendulum_urdf
from .test_compiled_path import stiff_drives

OPTIONS = dict(rtol=1e-10, atol=1e-12)


def pendulum(tmp_path, n=1, damping=0.0):
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n, damping=damping))
    return px.load_urdf(path)


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return px.simulate(*args, **kwargs)


def test_pendulum_steady_state_balances_gravity(tmp_path):
    """One link (m = 1 kg, centre of mass l = 0.2 m from the joint) under PD without gravity
    compensation settles where k_p (θ_r − θ) = m g l sin θ."""
    robot = pendulum(tmp_path)
    kp, theta_r = 8.0, 0.9
    law = px.control.JointPD(robot, [theta_r], kp=kp, kd=1.0)
    traj = quiet(robot, 2.5, q0=np.array([0.0]), control=law, **OPTIONS)
    m, g, lever = 1.0, 9.81, 0.2
    expected = brentq(lambda th: kp * (theta_r - th) - m * g * lever * np.sin(th), 0.0, theta_r)
    assert traj.meta["stats"]["control_period"] == 1e-3
    assert traj.q[-1, 0] == pytest.approx(expected, abs=1e-6)
    assert abs(traj.v[-1, 0]) < 1e-5


def test_gravity_compensation_holds_the_reference(tmp_path):
    """Two links, PD + g(q) (Takegaki & Arimoto 1981): the reference is the rest state."""
    robot = pendulum(tmp_path, n=2)
    q_r = np.array([0.7, -0.5])
    law = px.control.JointPD(robot, q_r, kp=[60.0, 40.0], kd=[6.0, 4.0],
                             gravity_compensation=True)  # fmt: skip
    traj = quiet(robot, 3.0, q0=np.zeros(2), control=law, control_period=5e-3, **OPTIONS)
    assert np.abs(traj.q[-1] - q_r).max() < 1e-6


def test_elastic_drives_hold_the_reference(tmp_path):
    """Motor-side PD with the springs preloaded by g(q_r) (Tomei 1991): at rest the links are
    at the reference and each spring carries its joint's gravity torque,
    c (θ / N − q) = g(q)."""
    robot = pendulum(tmp_path, n=2, damping=0.1)
    system = stiff_drives(robot, ("j0", "j1"), stiffness=2e3, damping=2.0, resistance=1.0)
    q_r = np.array([0.6, -0.4])
    law = px.control.JointPD(system, q_r, kp=2.0, kd=0.02, gravity_compensation=True)
    traj = quiet(system, 4.0, x0=system.initial_state(np.zeros(2)), control=law,
                 rtol=1e-9, atol=1e-11)  # fmt: skip
    assert np.abs(traj.q[-1] - q_r).max() < 1e-6
    theta = traj.x[-1, system.layout["drives.motor_angle"]]
    gravity = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), traj.q[-1])
    np.testing.assert_allclose(2e3 * (theta / 50.0 - traj.q[-1]), gravity, rtol=1e-5, atol=1e-7)


def test_schedule_reference_gives_its_slope_as_velocity():
    schedule = Schedule([0.0, 1.0, 3.0], [[0.0, 1.0], [2.0, 1.0], [2.0, 3.0]])
    ref = JointReference(schedule, 2, 2)
    q, v, a = ref(0.5)
    np.testing.assert_allclose(q, [1.0, 1.0])
    np.testing.assert_allclose(v, [2.0, 0.0])
    np.testing.assert_allclose(ref(2.0)[1], [0.0, 1.0])
    np.testing.assert_allclose(a, 0.0)


def test_function_reference_differentiated_when_it_gives_positions_only():
    ref = JointReference(lambda t: np.array([np.sin(2 * t)]), 1, 1)
    q, v, a = ref(0.3)
    assert v[0] == pytest.approx(2 * np.cos(0.6), abs=1e-7)
    assert a[0] == pytest.approx(-4 * np.sin(0.6), abs=1e-5)


def test_bad_arguments(tmp_path):
    robot = pendulum(tmp_path, n=2)
    with pytest.raises(InvalidParameter, match="kp"):
        px.control.JointPD(robot, np.zeros(2), kp=-1.0, kd=1.0)
    with pytest.raises(InvalidParameter, match="reference"):
        px.control.JointPD(robot, np.zeros(3), kp=1.0, kd=1.0)
    with pytest.raises(InvalidParameter, match="kd"):
        px.control.JointPD(robot, np.zeros(2), kp=1.0, kd=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("gain", ["50", True, None, [1.0, [2.0, 3.0]]])
def test_gains_that_are_not_numbers_are_refused(tmp_path, gain):
    """Before: ``kp="50"`` was taken as 50 and ``kp=True`` as 1 (CartesianPD and the
    task-space controllers refuse both), a ragged list ended in numpy's ValueError; now each
    is refused naming the gain and what is valid."""
    robot = pendulum(tmp_path, n=2)
    with pytest.raises(InvalidParameter, match=r"kp must be a non-negative number or 2 of them"):
        px.control.JointPD(robot, np.zeros(2), kp=gain, kd=1.0)
    with pytest.raises(InvalidParameter, match=r"kd must be a non-negative number or 2 of them"):
        px.control.JointPD(robot, np.zeros(2), kp=1.0, kd=gain)


def test_positions_of_a_vectorised_and_of_a_scalar_reference_agree():
    grid = np.linspace(0.0, 1.0, 7)

    def scalar_only(t):
        return np.array([float(t) ** 2, np.sin(float(t))])

    vectorised = JointReference(lambda t: np.stack([t**2, np.sin(t)], axis=-1), 2, 2)
    expected = np.array([scalar_only(t) for t in grid])
    np.testing.assert_allclose(vectorised.positions(grid), expected, atol=1e-15)
    np.testing.assert_allclose(JointReference(scalar_only, 2, 2).positions(grid), expected)


@pytest.mark.parametrize("reference", ["constant", "linear"])
def test_compiled_pd_law_equals_the_python_law(reference, monkeypatch):
    """A continuous JointPD (``control_period=0``) on the six-DOF arm to a constant and to an
    interpolated Schedule (its samples are breakpoints of the run), with its joint limits:
    evaluated inside the compiled right-hand side (every segment compiled, no Python per
    evaluation), the run equals the Python path's, which calls the law at every evaluation
    (same events at the same times, 1e-9 s; paths and the inputs' work ∫uᵀv dt 1e-9 and 1e-8
    relative; both at rtol 1e-10), and its audit closes (1e-9)."""
    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    goal = q0 + np.array([0.8, -0.5, 0.6, -0.4, 0.9, 3.5])  # wrist_3 driven into its stop
    target = {
        "constant": goal,
        "linear": Schedule([0.0, 0.3, 0.6], [q0, goal, q0], "linear"),
    }[reference]
    system = px.System(arm)
    law = px.control.JointPD(system, target, kp=np.full(6, 40.0), kd=np.full(6, 2.0))
    runs = {}
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # velocity-limit reports
            runs[flag] = px.simulate(
                system,
                1.0,
                q0=q0,
                control=law,
                control_period=0.0,  # the continuous law
                rtol=1e-10,
                atol=1e-12,
                output_dt=0.01,
            )
    compiled, python = runs["0"], runs["1"]
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] and stats["control_period"] is None
    assert python.meta["stats"]["compiled_segments"] == 0
    names = [e.name for e in compiled.events]
    assert names == [e.name for e in python.events] and "limit:wrist_3" in names
    times = np.array([e.t for e in compiled.events])
    assert np.abs(times - [e.t for e in python.events]).max() < 1e-9
    assert np.abs(compiled.q - python.q).max() < 1e-9
    work = system.layout["input_work"]  # ∫ uᵀv dt, integrated with the law's own u on each path
    w, w_ref = compiled.x[:, work], python.x[:, work]
    assert np.abs(w - w_ref).max() < 1e-8 * (1.0 + np.abs(w_ref).max())
    assert compiled.energy_balance().max_relative() < 1e-9


def test_held_pd_law_is_sampled_inside_the_compiled_loop(monkeypatch):
    """A JointPD held at its control period (the default for a Controller, 1 ms): sampled
    inside the compiled loop, the law is called from Python only where a run's segment starts
    (at the start and after each event), yet the run equals the Python path's, which calls it
    at every sample: the same number of samples, the same events, paths to 1e-9 and the same
    recorded inputs (the held samples, 1e-9 relative)."""
    arm = px.load_robot("six_dof_arm")
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    goal = q0 + np.array([0.8, -0.5, 0.6, -0.4, 0.9, 3.5])  # wrist_3 driven into its stop
    system = px.System(arm)
    law = px.control.JointPD(system, goal, kp=np.full(6, 40.0), kd=np.full(6, 0.5))
    calls = [0]
    call = px.control.JointPD.__call__

    def counted(self, *args):
        calls[0] += args[0] > 0.0  # (at t = 0 the start's stability probe calls it too)
        return call(self, *args)

    monkeypatch.setattr(px.control.JointPD, "__call__", counted)
    runs, counts = {}, {}
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        calls[0] = 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # velocity-limit reports
            runs[flag] = px.simulate(
                system, 0.5, q0=q0, control=law, rtol=1e-10, atol=1e-12, output_dt=0.005
            )
        counts[flag] = calls[0]
    compiled, python = runs["0"], runs["1"]
    stats = compiled.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] and stats["control_period"] == 1e-3
    assert stats["control_samples"] == python.meta["stats"]["control_samples"] == 500
    assert counts["0"] <= stats["segments"] < 20 and counts["1"] >= 499  # samples at t > 0
    names = [e.name for e in compiled.events]
    assert names == [e.name for e in python.events] and "limit:wrist_3" in names
    assert np.abs(compiled.q - python.q).max() < 1e-9
    u, u_ref = compiled.outputs["input"], python.outputs["input"]
    assert np.abs(u - u_ref).max() < 1e-9 * np.abs(u_ref).max()


@pytest.mark.parametrize("period", [0.0, 1e-3])
def test_stop_released_where_the_laws_jump_turns_its_reaction(period, simulation_path):
    """wrist_3 driven onto its upper stop by an interpolated reference that turns back at
    t = 0.3 s: the stop is left at a jump of the law's input, where its reaction turns from
    pushing to pulling without crossing zero between two instants the solver sees apart: at
    the breakpoint itself (the reference's slope jumps; continuous law) or at the first
    control sample that pulls (a law held every 1 ms). Oracle: at the release, ``pin.aba``
    under the input just before the jump accelerates wrist_3 into its stop, and under the
    input just after it away from the stop (one held row: the reaction has the sign of the
    free acceleration into the stop)."""
    arm = px.load_robot("six_dof_arm")
    model, data = arm.model, arm.model.createData()
    q0 = np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0])
    goal = q0 + np.array([0.8, -0.5, 0.6, -0.4, 0.9, 3.5])
    target = Schedule([0.0, 0.3, 0.6], [q0, goal, q0], "linear")
    system = px.System(arm)
    kp, kd = (10.0, 0.1) if period else (40.0, 2.0)  # gains the 1 ms hold keeps stable
    law = px.control.JointPD(system, target, kp=np.full(6, kp), kd=np.full(6, kd))
    run = quiet(system, 0.4, q0=q0, control=law, control_period=period, output_dt=1e-3, **OPTIONS)
    released = [e.t for e in run.events if e.name == "limit-off:wrist_3"]
    assert released, [(e.name, e.t) for e in run.events]
    t_b = released[0]
    assert t_b == 0.3 if not period else abs(t_b / period - round(t_b / period)) < 1e-9
    held = next(p for p in run.phases if p.t_end == t_b and p.t_start < t_b)
    assert held.name == "limit:wrist_3@upper"
    k = int(np.flatnonzero(run.t == t_b)[0])  # the state at the jump, before the release
    if period:  # the input held before the jump: the law at the previous sample
        j = int(np.flatnonzero(np.isclose(run.t, t_b - period, rtol=0.0, atol=1e-12))[-1])
        u_before = law(run.t[j], run.q[j], run.v[j], {})
    else:  # the reference's slope before the breakpoint
        u_before = law(np.nextafter(t_b, 0.0), run.q[k], run.v[k], {})
    u_after = law(t_b, run.q[k], run.v[k], {})
    for u, sign in ((u_before, 1.0), (u_after, -1.0)):
        assert sign * pin.aba(model, data, run.q[k], run.v[k], np.asarray(u))[5] > 0.0
    assert run.q[-1, 5] < run.q[k, 5]  # it left the stop


def test_a_subclass_with_its_own_law_runs_that_law_not_the_kernels(tmp_path):
    """The compiled engine evaluates a JointPD itself from its kernel form
    (:meth:`JointPD.kernel_form`); a subclass whose ``__call__`` is its own has no kernel
    form and its law runs. Here that law is the PD plus a constant 1 N.m: the pendulum
    (m = 1 kg, l = 0.2 m) settles where k_p (θ_r − θ) + 1 = m g l sin θ, not where the
    plain PD settles; a subclass that keeps the PD's law keeps its kernel form."""
    robot = pendulum(tmp_path)
    kp, theta_r, offset = 8.0, 0.9, 1.0

    class Offset(px.control.JointPD):
        def __call__(self, t, q, v, sensors):
            return super().__call__(t, q, v, sensors) + offset

    class Renamed(px.control.JointPD):
        pass

    assert Offset(robot, [theta_r], kp=kp, kd=1.0).kernel_form(robot.model) is None
    assert Renamed(robot, [theta_r], kp=kp, kd=1.0).kernel_form(robot.model).kind == "joint_pd"
    law = Offset(robot, [theta_r], kp=kp, kd=1.0)
    traj = quiet(robot, 2.5, q0=np.array([0.0]), control=law, control_period=0.0, **OPTIONS)
    m, g, lever = 1.0, 9.81, 0.2
    balance = lambda th: kp * (theta_r - th) + offset - m * g * lever * np.sin(th)  # noqa: E731
    expected = brentq(balance, 0.0, np.pi / 2)
    # 1e-6 rad: as the plain PD's steady state above (the oscillation left after 2.5 s)
    assert traj.q[-1, 0] == pytest.approx(expected, abs=1e-6)
