"""The compiled simulation path against the Python path (the reference).

Both run DOP853 with the step control of scipy's ``dop853`` code. One step from the same state
with the same size gives the same state to 1e-12; over a run the step sizes drift apart at the
level of the rounding of the error estimate (the compiled ABA equals ``pin.aba`` to about
1e-14, and the estimate is a difference of nearly equal stage sums), so whole trajectories are
compared at their common sample times to a tolerance set by ``rtol`` (the two runs are two
solutions within the requested accuracy), and events at the same instants to the same level.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.compiled import path as compiled_path
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.simulation.controls import Schedule

from .conftest import pendulum_urdf

#: These tests choose the path of each run themselves (tests/conftest.py).
BOTH_PATHS = False


def both(monkeypatch, build, t_final, **kwargs):
    """Run a freshly built System on the compiled and on the Python path."""
    runs = {}
    for label, flag in (("compiled", "0"), ("python", "1")):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            runs[label] = px.simulate(build(), t_final, **kwargs)
    return runs["compiled"], runs["python"]


def assert_same(a, b, tol=1e-8):
    """Same samples and events; states equal to ``tol`` relative to their scale."""
    assert a.t.shape == b.t.shape, (a.t[-3:], b.t[-3:])
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=tol)
    scale = max(1.0, float(np.abs(b.x).max()))
    assert np.abs(a.x - b.x).max() <= tol * scale, np.abs(a.x - b.x).max()
    assert [e.name for e in a.events] == [e.name for e in b.events]
    for ea, eb in zip(a.events, b.events, strict=True):
        assert abs(ea.t - eb.t) <= tol


def pendulum(tmp_path, n=3, damping=0.0):
    path = tmp_path / "pendulum.urdf"
    path.write_text(pendulum_urdf(n, damping=damping))
    return px.load_urdf(path)


def test_bare_pendulum_same_steps(tmp_path, monkeypatch):
    robot = pendulum(tmp_path, damping=0.05)
    q0 = np.array([1.0, -0.5, 0.3])
    a, b = both(monkeypatch, lambda: px.System(robot), 2.0, q0=q0, output_dt=0.01)
    assert abs(a.meta["stats"]["nfev"] - b.meta["stats"]["nfev"]) < 0.05 * b.meta["stats"]["nfev"]
    assert_same(a, b)
    assert a.energy_balance().max_relative() < 1e-9


def test_joint_limit_impacts_located_alike(tmp_path, monkeypatch):
    """The nearest-limit event runs in the compiled loop; its impact map in Python."""
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(2).replace('lower="-10" upper="10"', 'lower="-0.4" upper="0.4"'))
    robot = px.load_urdf(path)
    a, b = both(
        monkeypatch,
        lambda: px.System(robot),
        1.5,
        q0=np.array([0.3, 0.0]),
        v0=np.array([3.0, -2.0]),
        output_dt=0.01,
    )
    assert any(e.name.startswith("limit") for e in b.events)
    assert_same(a, b)


def test_sampled_output_and_constant_torque(tmp_path, monkeypatch):
    robot = pendulum(tmp_path)
    a, b = both(
        monkeypatch, lambda: px.System(robot), 1.0, control=np.array([0.5, 0.0, -0.2]),
        output_dt=0.01,
    )  # fmt: skip
    assert a.t.size == 101
    assert_same(a, b)


@pytest.mark.parametrize("kind", ["zoh", "linear"])
def test_schedule_breakpoints(tmp_path, monkeypatch, kind):
    robot = pendulum(tmp_path, n=2)
    times = np.linspace(0.0, 0.8, 9)
    values = np.column_stack((np.sin(5 * times), np.cos(3 * times)))
    a, b = both(
        monkeypatch,
        lambda: px.System(robot),
        1.0,
        control=Schedule(times, values, kind),
        output_dt=0.01,
    )
    assert_same(a, b)


def test_dc_motors_and_elastic_transmissions(tmp_path, monkeypatch):
    """A linear phase: the fused matrices of the drives around the compiled ABA."""
    robot = pendulum(tmp_path, n=2)
    motor = dict(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)

    def build():
        return px.System(
            robot,
            drives={
                "j0": Drive(DCMotor(**motor), ElasticTransmission(50.0, 500.0, 0.5)),
                "j1": Drive(DCMotor(**motor), Gear(30.0)),
            },
        )

    a, b = both(monkeypatch, build, 0.5, control=np.array([2.0, -1.0]), output_dt=0.01)
    assert_same(a, b)
    assert a.energy_balance().max_relative() < 1e-8


def test_python_control_law_takes_the_python_path(tmp_path, monkeypatch):
    robot = pendulum(tmp_path, n=2)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    system = px.System(robot)
    x = system.initial_state()
    law = px.simulation.arguments.checked_control(lambda t, x: -x[2:4], system, x)
    phase = system.initial_phase(0.0, x, law)
    from pinext.simulation.chart import Chart

    assert compiled_path.phase_kernel(system, phase, Chart(system, x), law) is None
    traj = px.simulate(system, 0.1, control=lambda t, x: -x[2:4])
    assert traj.energy_balance().max_relative() < 1e-9


def test_unsupported_joint_is_announced(monkeypatch):
    model = pin.Model()
    inertia = pin.Inertia.FromSphere(1.0, 0.1)
    j = model.addJoint(0, pin.JointModelHZ(0.1), pin.SE3.Identity(), "screw")
    model.appendBodyToJoint(j, inertia, pin.SE3.Identity())
    robot = px.Robot.from_model(model)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with pytest.warns(RuntimeWarning, match="screw"):
        traj = px.simulate(px.System(robot, joint_limits=False), 0.1)
    assert np.all(np.isfinite(traj.x))


def test_compiled_kernel_equals_fused_rhs(tmp_path):
    """One evaluation: the compiled right-hand side against the Python one, random states."""
    from pinext.compiled.phase import rhs as compiled_rhs
    from pinext.simulation.chart import Chart
    from pinext.simulation.linear import fused_rhs

    robot = pendulum(tmp_path, n=3)
    motor = dict(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)
    system = px.System(
        robot, drives={"j1": Drive(DCMotor(**motor), ElasticTransmission(40.0, 300.0, 0.2))}
    )
    rng = np.random.default_rng(3)
    x = system.initial_state() + rng.standard_normal(system.nx)
    law = px.simulation.arguments.checked_control(np.array([1.5]), system, x)
    phase = system.initial_phase(0.0, x, law)
    kernel = compiled_path.phase_kernel(system, phase, Chart(system, x), law)
    reference = fused_rhs(system, phase, law, None)
    for _ in range(5):
        y = system.initial_state() + rng.standard_normal(system.nx)
        out = np.empty_like(y)
        compiled_rhs(kernel, 0.0, y, out)
        expected = reference(0.0, y)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_one_step_equals_the_python_step(tmp_path):
    """From the same state with the same step size: the same state to 1e-12."""
    from pinext.compiled.dop853 import _state_at
    from pinext.simulation import dop853 as python_dop853
    from pinext.simulation.chart import Chart
    from pinext.simulation.rhs import make_rhs

    robot = pendulum(tmp_path, n=3, damping=0.1)
    system = px.System(robot)
    rng = np.random.default_rng(7)
    x = system.initial_state()
    law = px.simulation.arguments.checked_control(None, system, x)
    phase = system.initial_phase(0.0, x, law)
    chart = Chart(system, x)
    kernel = compiled_path.phase_kernel(system, phase, chart, law)
    rhs = make_rhs(system, phase, chart, law, None)
    for h in (1e-3, 1e-2, 5e-2):
        y = x.copy()
        y[:6] = rng.uniform(-1.0, 1.0, 6)
        run = python_dop853._Run(rhs, y.size, 1e-6, 1e-8, 1.0)
        expected = run.state_at(0.2, y, 0.2 + h)
        got = np.empty_like(y)
        _state_at(kernel, 0.2, y, 0.2 + h, 1e-6, 1e-8, 1.0, got)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_blow_up_raises_with_time_and_state(tmp_path, monkeypatch):
    """A run that overflows stops with IntegrationError, on both paths alike."""
    robot = pendulum(tmp_path, n=2)
    schedule = Schedule([0.0, 0.05], [[0.0, 0.0], [1e308, -1e308]], "linear")
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        with pytest.raises(px.exceptions.IntegrationError) as caught:
            px.simulate(px.System(robot), 0.1, control=schedule)
        assert 0.0 < caught.value.time <= 0.05
        assert np.all(np.isfinite(caught.value.state))


def test_stability_bound_run_switches_to_radau(tmp_path, monkeypatch):
    """A stiff transmission at a loose tolerance: DOP853's stiffness test fires, the run goes
    on with Radau (announced), and the result stays within the tolerance of a tight run."""
    robot = pendulum(tmp_path, n=2, damping=0.02)
    motor = dict(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)

    def build():
        return px.System(
            robot,
            drives={
                "j0": Drive(DCMotor(**motor), ElasticTransmission(50.0, 2e5, 2.0)),
                "j1": Drive(DCMotor(**motor), ElasticTransmission(50.0, 2e5, 2.0)),
            },
        )

    q0 = np.array([0.4, -0.3])
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with pytest.warns(RuntimeWarning, match="became stiff"):
        switched = px.simulate(build(), 2.0, q0=q0, control=np.array([1.0, -1.0]), rtol=1e-4,
                               atol=1e-6, output_dt=0.01)  # fmt: skip
    stats = switched.meta["stats"]
    assert stats["method"] == "Radau" and 0.0 < stats["switched_to_radau_at"] < 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        explicit = px.simulate(build(), 2.0, q0=q0, control=np.array([1.0, -1.0]), rtol=1e-4,
                               atol=1e-6, output_dt=0.01, method="DOP853")  # fmt: skip
        tight = px.simulate(build(), 2.0, q0=q0, control=np.array([1.0, -1.0]), rtol=1e-11,
                            atol=1e-13, output_dt=0.01, method="DOP853")  # fmt: skip
    assert explicit.meta["stats"]["switched_to_radau_at"] is None
    assert stats["nfev"] < 0.2 * explicit.meta["stats"]["nfev"]  # steps follow the accuracy
    assert np.abs(switched.q - tight.q).max() < 1e-4
    assert switched.energy_balance().max_relative() < 1e-5


def test_momentum_method_compiled_equals_python(tmp_path, monkeypatch):
    """Celentano's scheme (state q, p = M v) on both paths, with drives in the phase."""
    robot = pendulum(tmp_path, n=3, damping=0.05)
    motor = dict(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)

    def build():
        return px.System(
            robot,
            drives={"j1": Drive(DCMotor(**motor), ElasticTransmission(30.0, 400.0, 0.3))},
            joint_limits=False,
        )

    a, b = both(
        monkeypatch, build, 1.0, q0=np.array([0.8, -0.4, 0.2]), control=np.array([1.5]),
        method="momentum", output_dt=0.01,
    )  # fmt: skip
    assert a.meta["stats"]["method"] == "momentum"
    assert_same(a, b)
    aba_route, _ = both(
        monkeypatch, build, 1.0, q0=np.array([0.8, -0.4, 0.2]), control=np.array([1.5]),
        output_dt=0.01, rtol=1e-12, atol=1e-14,
    )  # fmt: skip
    assert np.abs(a.x - aba_route.x).max() < 1e-7
    assert a.energy_balance().max_relative() < 1e-8
