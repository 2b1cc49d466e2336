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
from pinext.compiled.struct import view
from pinext.contact import JointLimits
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
    """Same samples and events; states equal to ``tol`` relative to their scale. Samples
    within ``tol`` of one instant (an event's: a sample before it, one after each event
    there) are compared by the first and the last, and the events there as a set
    (:func:`assert_same_events`): two events a rounding apart are one instant or two as the
    rounding decides (another BLAS, another path), not as the physics does."""
    ka, kb = _instant_ends(a.t, tol), _instant_ends(b.t, tol)
    assert ka.shape == kb.shape, (a.t[-3:], b.t[-3:])
    np.testing.assert_allclose(a.t[ka], b.t[kb], rtol=0, atol=tol)
    scale = max(1.0, float(np.abs(b.x).max()))
    gap = np.abs(a.x[ka] - b.x[kb]).max()
    assert gap <= tol * scale, gap
    assert_same_events(a, b, tol)


def _instant_ends(t, tol):
    """The first and the last index of each run of sample times within ``tol`` of its first."""
    ends, i = [], 0
    while i < t.size:
        j = i
        while j + 1 < t.size and t[j + 1] - t[i] <= tol:
            j += 1
        ends += [i, j]
        i = j + 1
    return np.array(ends)


def assert_same_events(a, b, tolerance=1e-9):
    """The two runs have the same events: at each instant the same set of names, the
    instants equal within ``tolerance`` [s]. Events within ``tolerance`` of an instant's
    first are one set: which of two events at one instant the solver meets first is a tie
    that the rounding decides (another BLAS, another path), not a result."""

    def instants(traj):
        found: list[tuple[float, list[str]]] = []
        for e in traj.events:
            if found and e.t - found[-1][0] <= tolerance:
                found[-1][1].append(e.name)
            else:
                found.append((e.t, [e.name]))
        return [t for t, _ in found], [sorted(names) for _, names in found]

    (ta, na), (tb, nb) = instants(a), instants(b)
    assert na == nb
    np.testing.assert_allclose(ta, tb, rtol=0, atol=tolerance)


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
    assert any(e.name.startswith("limit:") for e in b.events)
    assert_same(a, b)
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] > 2  # stops held in compiled code


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


def test_unsupported_joint_is_announced(monkeypatch, caplog):
    """Why a model runs on the Python path is logged once (INFO of the ``pinext`` logger),
    not warned: the user cannot act on it."""
    import logging

    model = pin.Model()
    inertia = pin.Inertia.FromSphere(1.0, 0.1)
    j = model.addJoint(0, pin.JointModelHZ(0.1), pin.SE3.Identity(), "screw")
    model.appendBodyToJoint(j, inertia, pin.SE3.Identity())
    robot = px.Robot.from_model(model)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with caplog.at_level(logging.INFO, logger="pinext"):
        traj = px.simulate(px.System(robot, joint_limits=False), 0.1)
    assert "screw" in caplog.text and "Python path" in caplog.text
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
        compiled_rhs(view(kernel), 0.0, y, out)
        expected = reference(0.0, y)
        np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12 * np.abs(expected).max())


def test_one_step_equals_the_python_step(tmp_path):
    """From the same state with the same step size: the same state to 1e-12, its evaluations
    counted (a step's 11 stages at least; no more than the Python path's, which evaluates f at
    the start and the last FSAL again)."""
    from pinext.compiled.dop853 import _NFEV, N_INT, Locator, _state_at
    from pinext.compiled.phase import rhs as compiled_rhs
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
        got, f0 = np.empty_like(y), np.empty_like(y)
        compiled_rhs(view(kernel), 0.2, y, f0)
        it = np.zeros(N_INT, dtype=np.int64)
        loc = Locator(f0, np.empty((16, y.size)), it, np.empty(8), np.empty(0), np.empty(y.size))
        _state_at(view(kernel), 0.2, y, 0.2 + h, 1e-6, 1e-8, 1.0, got, loc)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
        assert 11 <= it[_NFEV] <= run.nfev - 2


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


def test_stiff_damped_transmissions_start_with_radau(tmp_path, monkeypatch, caplog):
    """Stiff, well damped transmissions at a loose tolerance: their fast modes die out early
    (decaying_fast_modes), so the run starts with Radau (announced), takes a fifth of DOP853's
    evaluations, and stays within the tolerance of a tight run."""
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
    with caplog.at_level("INFO", logger="pinext"):
        switched = px.simulate(build(), 2.0, q0=q0, control=np.array([1.0, -1.0]), rtol=1e-4,
                               atol=1e-6, output_dt=0.01)  # fmt: skip
    assert "stiff from the start: its fast modes die out" in caplog.text
    stats = switched.meta["stats"]
    assert stats["method"] == "Radau" and stats["switched_to_radau_at"] is None
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


def test_accurately_resolved_oscillation_does_not_switch(tmp_path, monkeypatch):
    """No false alarm: an undamped flexible arm whose excited modes the tolerance resolves
    (its steps are set by accuracy, h|λ| well inside the stability region) stays on DOP853."""
    from pinext.flexible import FlexibleLink
    from pinext.robots import robot_path

    bar = FlexibleLink("bar", 10, 1e11, 0.01**4 / 12)
    robot = px.load_urdf(robot_path("flexible_arm"), flexible=[bar])
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    for rtol in (1e-3, 1e-6):
        run = px.simulate(robot, 0.5, control=np.r_[0.5, np.zeros(10)], rtol=rtol,
                          atol=rtol * 1e-3)  # fmt: skip
        assert run.meta["stats"]["switched_to_radau_at"] is None


def assert_radau_jacobian_matches_central_differences(kernel, y, t=0.1):
    """The compiled Radau's Jacobian (forward differences of the right-hand side in every core
    column) against central differences of the compiled right-hand side, to 1e-6 of its
    largest entry (the forward differences' truncation, √ε relative)."""
    from pinext.compiled import radau
    from pinext.compiled.phase import rhs as compiled_rhs

    n = y.size
    f = np.empty(n)
    compiled_rhs(view(kernel), t, y, f)
    jac = np.empty((n, n))
    radau._jacobian(view(kernel), t, y, f.copy(), jac, y.copy(), np.empty(n))
    central = np.empty((n, n))
    plus, minus = np.empty(n), np.empty(n)
    for j in range(n):
        step = 1e-6 * max(1.0, abs(y[j]))
        e = np.zeros(n)
        e[j] = step
        compiled_rhs(view(kernel), t, y + e, plus)
        compiled_rhs(view(kernel), t, y - e, minus)
        central[:, j] = (plus - minus) / (2 * step)
    assert np.abs(jac - central).max() < 1e-6 * np.abs(central).max()


def stiff_drives(robot, joints, stiffness=2e5, damping=2.0, resistance=1.0):
    """A System whose DC drives have stiff elastic transmissions (DOP853 is stability-bound).
    With the defaults their fast modes die out within a few hundredths of a second (the run
    starts with Radau); undamped and behind a large winding resistance (little back-EMF
    damping) they keep ringing for seconds (the run starts with DOP853)."""
    motor = dict(resistance=resistance, torque_constant=0.05, back_emf_constant=0.05,
                 rotor_inertia=1e-5)  # fmt: skip
    return px.System(
        robot,
        drives={
            j: Drive(DCMotor(**motor), ElasticTransmission(50.0, stiffness, damping))
            for j in joints
        },
    )


def assert_close(a, b, tol):
    """Same samples; states within ``tol`` of their scale; events alike, their times to tol."""
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=tol)
    scale = max(1.0, float(np.abs(b.x).max()))
    assert np.abs(a.x - b.x).max() <= tol * scale, np.abs(a.x - b.x).max() / scale
    assert [e.name for e in a.events] == [e.name for e in b.events]
    for ea, eb in zip(a.events, b.events, strict=True):
        assert abs(ea.t - eb.t) <= tol


def test_compiled_radau_agrees_with_scipy_radau(tmp_path, monkeypatch):
    """method='Radau' on a compiled phase (finite-difference Jacobian) against scipy's Radau
    on the Python path (analytic Jacobian): stiff transmissions, joint-limit impacts, sampled
    output; the same steps up to the Jacobian, the states to what the runs' global errors
    support.

    Two adaptive integrators agree to the sum of their global errors, not to ``rtol``: each
    path's global error is estimated by the same run at ``rtol / 10`` (Radau5 is of order 5,
    so the tighter run's own error is a sixth of it or less), and the two paths must agree
    within twice the sum of those estimates."""
    path = tmp_path / "p.urdf"
    path.write_text(pendulum_urdf(2, damping=0.02).replace('lower="-10"', 'lower="-0.35"'))
    robot = px.load_urdf(path)
    rtol = 1e-6

    def runs(rtol):
        return both(
            monkeypatch, lambda: stiff_drives(robot, ("j0", "j1")), 1.5, q0=np.array([0.3, -0.2]),
            control=np.array([-2.0, 1.0]), rtol=rtol, atol=rtol / 100, output_dt=0.01,
            method="Radau",
        )  # fmt: skip

    a, b = runs(rtol)
    a_fine, b_fine = runs(rtol / 10)
    assert a.meta["stats"]["method"] == b.meta["stats"]["method"] == "Radau"
    assert np.isin(np.round(np.linspace(0.0, 1.5, 151), 12), np.round(a.t, 12)).all()
    assert any(e.name.startswith("limit") for e in b.events)
    assert abs(a.meta["stats"]["nfev"] - b.meta["stats"]["nfev"]) < 0.2 * b.meta["stats"]["nfev"]
    scale = max(1.0, float(np.abs(b.x).max()))
    error_a = np.abs(a.x - a_fine.x).max() / scale
    error_b = np.abs(b.x - b_fine.x).max() / scale
    assert max(error_a, error_b) < 1e3 * rtol  # each run converges at its tolerance
    assert_close(a, b, 2.0 * (error_a + error_b))
    assert a.energy_balance().max_relative() < 10 * rtol
    assert b.energy_balance().max_relative() < 10 * rtol


@pytest.mark.parametrize("nq", [0, 7])
def test_radau_iteration_matrix_solves_equal_numpy(nq):
    """The compiled Radau's factors of c I − J and their solves (the q̇ = v rows and the two
    power rows eliminated when nq > 0) equal numpy's dense solve, for the real c and the
    complex one, on a seeded Jacobian of that structure (the Panda with elastic drives' 30
    states). Tolerance: 100 ε cond(c I − J)."""
    from pinext.compiled.radau import MU_COMPLEX, MU_REAL, _factor, _solve

    rng = np.random.default_rng(11)
    n, h = 30, 2e-3
    J = rng.standard_normal((n, n)) * rng.uniform(0.1, 3e3, n)  # rows of every scale
    if nq:
        J[:nq] = 0.0
        J[np.arange(nq), nq + np.arange(nq)] = 1.0  # q̇ = v
        J[:, n - 2 :] = 0.0  # the power integrals are read by nothing
    lu_r, lu_c = np.empty((n, n)), np.empty((n, n), dtype=np.complex128)
    piv_r, piv_c = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    _factor(J, h, nq, lu_r, piv_r, lu_c, piv_c)
    for c, lu, piv in ((MU_REAL / h, lu_r, piv_r), (MU_COMPLEX / h, lu_c, piv_c)):
        matrix = c * np.eye(n) - J
        b = rng.standard_normal(n)
        if isinstance(c, complex):
            b = b + 1j * rng.standard_normal(n)
        x = b.copy()
        _solve(lu, piv, x, J, c, nq)
        expected = np.linalg.solve(matrix, b)
        bound = 100 * np.finfo(float).eps * np.linalg.cond(matrix)
        assert np.abs(x - expected).max() <= bound * np.abs(expected).max()


def test_compiled_radau_every_step_output(tmp_path, monkeypatch):
    """Without output_dt: one sample per accepted step, as solve_ivp gives them."""
    robot = pendulum(tmp_path, n=2, damping=0.02)
    a, b = both(
        monkeypatch, lambda: stiff_drives(robot, ("j0", "j1")), 0.5, q0=np.array([0.4, -0.3]),
        control=np.array([1.0, -1.0]), rtol=1e-5, atol=1e-7, method="Radau",
    )  # fmt: skip
    assert abs(a.t.size - b.t.size) <= 0.1 * b.t.size
    q_b = np.array([np.interp(a.t, b.t, b.q[:, j]) for j in range(2)]).T
    assert np.abs(a.q - q_b).max() < 1e-3  # linear interpolation of b between its steps
    assert np.abs(a.x[-1] - b.x[-1]).max() <= 1e-4 * max(1.0, np.abs(b.x[-1]).max())


def test_switch_to_radau_stays_compiled(tmp_path, monkeypatch, caplog):
    """DOP853's stiffness test fires; the rest of the run goes on with the compiled Radau
    (scipy's solve_ivp is never called) and stays within the tolerance of a tight run."""
    import importlib

    run_module = importlib.import_module("pinext.simulation.run")

    robot = pendulum(tmp_path, n=2, damping=0.02)
    kwargs = dict(q0=np.array([0.4, -0.3]), control=np.array([80.0, -80.0]), output_dt=0.01)

    def ringing():  # lightly damped: the start is not classed stiff, DOP853's test fires later
        return stiff_drives(robot, ("j0", "j1"), damping=0.0, resistance=200.0)

    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        tight = px.simulate(ringing(), 2.0, rtol=1e-11, atol=1e-13, method="DOP853", **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("scipy's solve_ivp called")

    monkeypatch.setattr(run_module, "solve_ivp", refuse)
    # the mechanism of the switch: this short scene's rest needs fewer stability-bound steps
    # than SWITCH_STEPS, below which the default keeps DOP853
    monkeypatch.setattr(run_module, "SWITCH_STEPS", 0.0)
    rtol = 1e-4
    with caplog.at_level("INFO", logger="pinext"):
        run = px.simulate(ringing(), 2.0, rtol=rtol, atol=1e-6, **kwargs)
    assert "became stiff" in caplog.text
    assert run.meta["stats"]["method"] == "Radau"
    assert 0.0 < run.meta["stats"]["switched_to_radau_at"] < 2.0
    assert np.abs(run.q - tight.q).max() < 10 * rtol
    assert run.energy_balance().max_relative() < 10 * rtol
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        radau = px.simulate(ringing(), 2.0, rtol=rtol, atol=1e-6, method="Radau", **kwargs)
    assert np.abs(radau.q - tight.q).max() < 10 * rtol


ROTOR_URDF = """<robot name="rotor"><link name="base"/>
<link name="disc"><inertial><origin xyz="0 0 0"/><mass value="2.0"/>
<inertia ixx="0.01" iyy="0.01" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>
<joint name="j0" type="revolute"><parent link="base"/><child link="disc"/>
<axis xyz="0 0 1"/><limit lower="-100" upper="100" effort="100" velocity="100"/>
<dynamics damping="0.01"/></joint></robot>"""


@pytest.mark.parametrize("rtol", [1e-4, 1e-7])
def test_compiled_radau_on_a_stiff_linear_system(tmp_path, rtol):
    """A disc turning about the vertical (no gravity torque: the dynamics are affine) driven
    through a stiff elastic transmission: ẏ = A y + b exactly, solved by the matrix
    exponential (scipy.linalg.expm of the augmented matrix [[A, b], [0, 0]]); the compiled
    Radau's samples agree to the tolerance (the stiff mode is damped: the global error stays
    below the local tolerance, about 0.1 rtol here)."""
    from scipy.integrate import solve_ivp
    from scipy.linalg import expm

    from pinext.compiled.phase import rhs as compiled_rhs
    from pinext.simulation.chart import Chart
    from pinext.simulation.linear import fused_rhs

    path = tmp_path / "rotor.urdf"
    path.write_text(ROTOR_URDF)
    system = stiff_drives(px.load_urdf(path), ("j0",), stiffness=5e6, damping=100.0)
    x = system.initial_state()
    x[:4] = [0.3, -1.0, 50.0 * 0.3, 50.0 * -1.0]  # q, v, motor angle and speed (ratio 50)
    law = px.simulation.arguments.checked_control(np.array([3.0]), system, x)
    phase = system.initial_phase(0.0, x, law)
    kernel = compiled_path.phase_kernel(system, phase, Chart(system, x), law)
    assert kernel is not None
    reference = fused_rhs(system, phase, law, None)  # the Python right-hand side
    n = system.nx - 2  # the core states (the last two integrate the power: quadratic)
    f0 = reference(0.0, np.zeros(system.nx))[:n]
    a_mat = np.column_stack([reference(0.0, np.eye(system.nx)[j])[:n] - f0 for j in range(n)])
    rng = np.random.default_rng(11)
    y_rand = rng.standard_normal(system.nx)  # the dynamics are affine: checked, not assumed
    np.testing.assert_allclose(reference(0.0, y_rand)[:n], a_mat @ y_rand[:n] + f0, atol=1e-6)
    out = np.empty(system.nx)
    compiled_rhs(view(kernel), 0.0, y_rand, out)
    np.testing.assert_allclose(out[:n], a_mat @ y_rand[:n] + f0, atol=1e-6)
    stiffest = np.abs(np.linalg.eigvals(a_mat)).max()
    assert stiffest > 1e4  # stiff: explicit steps would be < 1e-4 s
    t_eval = np.linspace(0.0, 0.5, 51)
    sol = compiled_path.solve(
        kernel, (0.0, 0.5), x, t_eval=t_eval, rtol=rtol, atol=rtol * 1e-2, method="Radau"
    )
    assert sol.status == 0
    np.testing.assert_array_equal(sol.t, t_eval)
    aug = np.zeros((n + 1, n + 1))
    aug[:n, :n] = a_mat
    aug[:n, n] = f0
    z0 = np.append(x[:n], 1.0)
    exact = np.array([(expm(aug * t) @ z0)[:n] for t in t_eval]).T
    scale = np.abs(exact).max(axis=1, keepdims=True) + 1e-2
    assert np.abs((sol.y[:n] - exact) / scale).max() < rtol
    # the same algorithm as scipy's Radau (analytic Jacobian): about the same evaluations
    scipy_run = solve_ivp(
        reference, (0.0, 0.5), x, method="Radau", t_eval=t_eval, rtol=rtol, atol=rtol * 1e-2,
        jac=reference.jac,
    )  # fmt: skip
    assert abs(sol.nfev - scipy_run.nfev) < 0.1 * scipy_run.nfev
    assert np.abs((scipy_run.y[:n] - exact) / scale).max() < rtol


def test_compiled_solve_refuses_unknown_method(tmp_path):
    from pinext.exceptions import InvalidParameter
    from pinext.simulation.chart import Chart

    system = px.System(pendulum(tmp_path, n=1))
    x = system.initial_state()
    law = px.simulation.arguments.checked_control(None, system, x)
    kernel = compiled_path.phase_kernel(
        system, system.initial_phase(0.0, x, law), Chart(system, x), law
    )
    with pytest.raises(InvalidParameter, match="DOP853, Radau"):
        compiled_path.solve(kernel, (0.0, 1.0), x, method="BDF")


def test_compiled_radau_jacobian_equals_the_analytic_one(tmp_path):
    """The compiled Radau's Jacobian (forward differences of the compiled right-hand side in
    every core column) against the Python path's analytic one (Pinocchio's
    computeABADerivatives), with an inductive motor, an elastic transmission and a gear, at
    random states."""
    from pinext.compiled import radau
    from pinext.simulation.chart import Chart
    from pinext.simulation.linear import fused_rhs

    robot = pendulum(tmp_path, n=3, damping=0.1)
    motor = dict(resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5)
    system = px.System(
        robot,
        drives={
            "j1": Drive(DCMotor(**motor, inductance=1e-3), ElasticTransmission(40.0, 300.0, 0.2)),
            "j2": Drive(DCMotor(**motor), Gear(20.0)),
        },
    )
    rng = np.random.default_rng(5)
    x = system.initial_state()
    law = px.simulation.arguments.checked_control(np.array([1.5, -0.5]), system, x)
    phase = system.initial_phase(0.0, x, law)
    kernel = compiled_path.phase_kernel(system, phase, Chart(system, x), law)
    reference = fused_rhs(system, phase, law, None)
    for _ in range(4):
        y = system.initial_state() + rng.standard_normal(system.nx)
        f = reference(0.3, y)
        jac = np.empty((y.size, y.size))
        evals = radau._jacobian(view(kernel), 0.3, y, f, jac, y.copy(), f.copy())
        assert evals == y.size - 2  # one evaluation per core state (not the power integrals)
        expected = np.asarray(reference.jac(0.3, y))
        scale = np.abs(expected).max()
        # forward differences: O(√ε) relative (truncation, and round-off ε |f| / δ)
        assert np.abs(jac - expected).max() < 1e-6 * scale


def test_compiled_radau_blow_up_raises_with_time_and_state(tmp_path, monkeypatch):
    """An overflowing input: the compiled Radau stops (non-finite stages, steps halved to
    nothing) and simulate raises IntegrationError with a finite state, progress bar shown."""
    robot = pendulum(tmp_path, n=2)
    schedule = Schedule([0.0, 0.05], [[0.0, 0.0], [1e308, -1e308]], "linear")
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    with pytest.raises(px.exceptions.IntegrationError) as caught:
        px.simulate(px.System(robot), 0.1, control=schedule, method="Radau", progress=True)
    assert 0.0 < caught.value.time <= 0.05
    assert np.all(np.isfinite(caught.value.state))


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


def test_ur5_held_on_its_stops_and_lifted_off_in_compiled_code(ur5_urdf, monkeypatch):
    """The UR5 falls onto two stops, rests on them (locked-joint rows solved with the ABA's
    factors) and lifts off (the reaction's zero located in the compiled loop)."""
    robot = px.load_urdf(ur5_urdf)
    q0 = np.array([0, -1.0, 1.0, 0, 0.5, 0])
    a, b = both(monkeypatch, lambda: px.System(robot), 2.0, q0=q0, output_dt=0.01)
    names = [e.name for e in b.events]
    assert "limit-off:wrist_1_joint" in names and "limit-off:elbow_joint" in names
    assert_same(a, b)
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] == len(names) + 1
    assert a.energy_balance().max_relative() < 1e-9
    limits = next(c for c in px.System(robot).components if isinstance(c, px.contact.JointLimits))
    reaction = a.outputs[f"{limits.name}.force"]
    assert reaction.max() > 1.0 and reaction.min() > -1e-9  # held by pushing, never pulling


@pytest.mark.parametrize("q0", [[0.35, 0.1, 0.0], [-0.35, -0.35, 0.1]])
def test_compiled_radau_jacobian_on_a_held_phase(tmp_path, q0):
    """A joint held on its stop (locked-joint row in the compiled phase) with drives: the
    compiled Radau's Jacobian (exact drive columns through the constrained accelerations)
    against central differences of the compiled right-hand side."""
    from pinext.simulation.chart import Chart

    path = tmp_path / "p.urdf"
    limits = 'lower="-0.35" upper="0.35"'
    path.write_text(pendulum_urdf(3, damping=0.02).replace('lower="-10" upper="10"', limits))
    system = stiff_drives(px.load_urdf(path), ("j0", "j2"), stiffness=300.0)
    x = px.simulation.arguments.as_initial_state(system, None, np.array(q0), None)
    law = px.simulation.arguments.checked_control(np.array([0.5, -0.5]), system, x)
    kernel = compiled_path.phase_kernel(
        system, system.initial_phase(0.0, x, law), Chart(system, x), law
    )
    assert kernel is not None and kernel.lam.size == 1  # j0 held
    rng = np.random.default_rng(1)
    y = x.copy()
    y[3:] += rng.uniform(-0.1, 0.1, y.size - 3)
    assert_radau_jacobian_matches_central_differences(kernel, y)


# -- constant-Jacobian rows: joints on their stops and the Panda's <mimic> fingers together --

FINGERS = ("panda_finger_joint1", "panda_finger_joint2")
READY = [0.0, 0.3, 0.0, -0.3, 0.0, 1.571, 0.785]


def _finger_indices(model):
    return [model.joints[model.getJointId(j)].idx_v for j in FINGERS]


def _panda_start(panda, fingers=0.01):
    system = px.System(panda)
    q = pin.neutral(system.model)
    q[:7] = READY
    q[_finger_indices(system.model)] = fingers
    return px.close_loops(system, q)


def test_panda_with_its_mimic_fingers_runs_compiled(panda, monkeypatch):
    """The full Panda (JointLimits and the <mimic> coupling of its fingers) under gravity with a
    push on the first finger: every segment compiled (the coupling row, and the stops the
    arm meets, solved with the ABA's factors), the same run as the Python path, the coupling
    force alike, the fingers mirrored, the energy balanced."""
    model = panda.model
    i1, i2 = _finger_indices(model)
    push = np.zeros(model.nv)
    push[i1] = 0.02  # [N]: the fingers open, not up to their stops within the run
    x0 = _panda_start(panda)
    a, b = both(monkeypatch, lambda: px.System(panda), 0.5, x0=x0, control=push, output_dt=0.01)
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] == len(a.events) + 1
    assert b.meta["stats"]["compiled_segments"] == 0
    assert any(e.name.startswith("limit:panda_joint") for e in b.events)  # stops met too
    assert_same(a, b)
    force = "mimic:panda_finger_joint2.force"
    scale = np.abs(b.outputs[force]).max()
    assert scale > 1e-3
    assert np.abs(a.outputs[force] - b.outputs[force]).max() <= 1e-8 * max(1.0, scale)
    assert np.ptp(a.q[:, i1]) > 1e-3  # the fingers move
    assert np.abs(a.q[:, i2] - a.q[:, i1]).max() < 1e-9
    assert a.energy_balance().max_relative() < 1e-9


def test_panda_with_saturating_elastic_drives_and_its_mimic_fingers_runs_compiled(
    panda, monkeypatch
):
    """The full Panda with a 48 V DC motor behind an elastic transmission on each arm joint
    (:data:`pinext.drives.HARMONIC_DRIVE_MOTOR`), its limits and its <mimic> fingers, driven by
    voltages that ramp to ±80 V: the amplifier clips them at 48 V in the compiled kernel as the
    drives do on the Python path; every segment compiled, the same run, the energy balanced."""
    from pinext.drives import HARMONIC_DRIVE_MOTOR

    joints = [f"panda_joint{i}" for i in range(1, 8)]
    drives = {j: Drive(HARMONIC_DRIVE_MOTOR, ElasticTransmission(100.0, 2e4, 10.0)) for j in joints}
    start = _panda_start(panda)
    x0 = px.System(panda, drives=drives).initial_state(start[:9], start[9:18])
    ramp = Schedule([0.0, 0.3], [np.zeros(7), 80.0 * np.array([1, -1, 1, -1, 1, -1, 1])])
    a, b = both(
        monkeypatch, lambda: px.System(panda, drives=drives), 0.3, x0=x0, control=ramp,
        output_dt=0.01,
    )  # fmt: skip
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"]
    assert b.meta["stats"]["compiled_segments"] == 0
    assert_same(a, b, tol=1e-7)
    voltage = b.outputs["drives.voltage"]
    assert np.abs(voltage).max() == pytest.approx(48.0, abs=1e-12)  # clipped from t = 0.18 s on
    assert a.energy_balance().max_relative() < 1e-8


#: The six-DOF arm's joints and a pose away from its singularities [rad].
ARM_JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
ARM_Q0 = np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2])


def _driven_arm(monkeypatch, drives, t_final, control):
    """The six-DOF arm with ``drives`` from ARM_Q0 under ``control``, on both paths."""
    return both(
        monkeypatch, lambda: px.System(px.load_robot("six_dof_arm"), drives=drives), t_final,
        q0=ARM_Q0, control=control, output_dt=0.01,
    )  # fmt: skip


def test_lossy_gears_moving_and_stuck_run_compiled(monkeypatch):
    """Six lossy gears (η' = 0.7, η'' = 0.5, Vukobratović & Potkonjak after (20.69)) behind
    6 V amplifiers, the voltages reversed twice: every segment compiled, the moving modes
    (their rotors' e J N² in the packed armature, the loss's part through the acceleration in
    the power, the power-flow and motor-stop events as GEAR and DISTANCES forms) and the stuck
    gears (a row each, their slip tests as GEAR_HOLD forms); the same events at the same
    instants, the same run, the energy balanced."""
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, voltage_limit=6.0)
    lossy = Gear(50.0, efficiency=0.7, backdrive_efficiency=0.5)
    push = np.array([8.0, 4.0, -4.0, 2.0, -2.0, 1.0])
    volts = Schedule([0.0, 0.15, 0.3, 0.45], [push, -push, push, np.zeros(6)])
    a, b = _driven_arm(monkeypatch, dict.fromkeys(ARM_JOINTS, Drive(motor, lossy)), 0.5, volts)
    stats = a.meta["stats"]
    kinds = {e.name.split(".")[-1] for e in a.events}
    assert {"gear_torque_zero", "motor_stops", "gear_slips_low", "gear_slips_high"} <= kinds
    assert stats["segments"] == stats["compiled_segments"] > 20
    assert b.meta["stats"]["compiled_segments"] == 0
    assert_same(a, b, tol=1e-9)
    assert a.energy_balance().max_relative() < 1e-12


def test_a_bounce_in_the_compiled_loop_meets_the_rotors_own_inertia(monkeypatch):
    """Lossy gears move (their rotors reflect e J N² in the phase's dynamics) while the tool
    bounces on a table (restitution 0.5) inside the compiled loop: the impulse meets the
    System's own mass matrix, rotors J N², as the Python path's impact does (it met e J N²
    before, and the runs parted at the first bounce); the same events, to the rounding a
    cascade of bounces amplifies."""
    q0 = ARM_Q0

    def build():
        robot = px.load_robot("six_dof_arm")
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, q0)
        table = px.plane(
            "tool", data.oMf[robot.model.getFrameId("tool")].translation - [0, 0, 0.02]
        )
        drive = Drive(DCMotor(1.2, 0.05, 0.05, 2e-5), Gear(5.0, efficiency=0.8))
        contact = px.Contact(table, restitution=0.5)
        return px.System(robot, contacts=[contact], drives=dict.fromkeys(ARM_JOINTS, drive))

    a, b = both(monkeypatch, build, 0.6, q0=q0, control=np.zeros(6), output_dt=0.01)
    assert a.meta["stats"]["loop_events"] > 3  # bounces applied inside the compiled loop
    assert a.meta["stats"]["compiled_segments"] == a.meta["stats"]["segments"]
    assert_same(a, b, tol=1e-7)
    assert a.energy_balance().max_relative() < 1e-10


def test_backlash_beside_a_lossy_gear_runs_compiled(monkeypatch):
    """A gear with 0.02 rad of backlash (restitution 0.3) on the elbow beside a lossy gear on
    a wrist, 12 V amplifiers, the voltages reversed twice: every segment compiled (the motor
    in its play driven through the joint's acceleration, ψ̈ = τ_s/(N J) − q̈; the flanks'
    approach as DISTANCES and LEAVING forms, an engaged flank's torque N τ_s − I_m q̈ as a
    GEAR form; the flank impacts applied between segments), the same events and run as the
    Python path, the energy balanced."""
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, voltage_limit=12.0)
    drives = {
        "elbow": Drive(motor, Gear(50.0, backlash=0.02, restitution=0.3)),
        "wrist_1": Drive(motor, Gear(30.0, efficiency=0.8)),
    }
    volts = Schedule([0.0, 0.2, 0.4], [[6.0, 3.0], [-6.0, -3.0], [6.0, 3.0]], kind="zoh")
    a, b = _driven_arm(monkeypatch, drives, 0.6, volts)
    stats = a.meta["stats"]
    kinds = {e.name.split(".")[-1] for e in a.events}
    assert {"backlash_engages", "backlash_separates", "gear_torque_zero"} <= kinds
    assert stats["segments"] == stats["compiled_segments"] > 20
    assert_same(a, b, tol=1e-9)
    assert a.energy_balance().max_relative() < 1e-11


@pytest.mark.parametrize("case", ["tool on a rigid table", "undamped series", "damped series"])
def test_a_compliant_tool_runs_compiled(monkeypatch, case):
    """A pen with its own spring and damper on an immobile table, or in series with the layer
    of a massive table: undamped (the series amounts to one spring and damper,
    SeriesCompliance.single) or both damped (the tool's compression a state, its rate
    forms.series_rate); the arm falls onto the table, the pen presses and lifts off: every
    segment compiled, the Python path's run."""
    from pinext.contact import DynamicEnvironment

    q0 = ARM_Q0

    def build():
        robot = px.load_robot("six_dof_arm")
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, q0)
        table = px.plane("pen_tip", data.oMf[robot.model.getFrameId("pen_tip")].translation)
        if case == "tool on a rigid table":
            pen = px.Contact(table, tool_stiffness=8e4, tool_damping=20.0)
            return px.System(robot, contacts=[pen])
        damped = case == "damped series"
        env = DynamicEnvironment(
            mass=2.0, stiffness=2e4, damping=100.0, contact_stiffness=5e4,
            contact_damping=30.0 if damped else 0.0,
        )  # fmt: skip
        pen = px.Contact(table, tool_stiffness=8e4, tool_damping=20.0 if damped else 0.0)
        return px.System(robot, contacts=[pen], environment=env)

    # (the free fall ends in near-grazing impacts after 0.24 s, where the runs part; the pen
    # on the rigid table lands at 0.1875 s on an event whose value crosses at a slope of
    # 4e-5 of its scale: the states' 1e-13 agreement there places it 2.5e-9 s apart, so the
    # comparison at 1e-9 ends before it)
    t_final = 0.18 if case == "tool on a rigid table" else 0.2
    a, b = both(monkeypatch, build, t_final, q0=q0, output_dt=0.01)
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] > 1
    assert any(e.name.startswith("lift-off:pen_tip") for e in a.events)
    assert_same(a, b, tol=1e-9)
    assert a.energy_balance().max_relative() < 1e-11


def _panda_system(panda, order="limits first"):
    """The Panda System; ``"mimic first"``: the coupling before the limits among the
    components (its row then comes first in the phase)."""
    if order == "limits first":
        return px.System(panda)
    coupling = px.Mimic(*FINGERS[::-1])
    return px.System(
        panda, mimic=False, joint_limits=False, components=[coupling, JointLimits(panda.model)]
    )


@pytest.mark.parametrize("order", ["limits first", "mimic first"])
def test_panda_joint_held_on_its_stop_with_the_mimic_row(panda, monkeypatch, order):
    """Joint 4 driven onto its upper stop and held there while the fingers are coupled (two
    components' rows in one compiled phase, in the order of the components: the lift-off's
    reaction is its owner's row, offset by the rows before it), then pulled off by a ramp
    (the lift-off located in the compiled loop): events at the same instants as on the
    Python path, in either component order."""
    from pinext.simulation.controls import Schedule

    model = panda.model
    start, end = np.zeros(model.nv), np.zeros(model.nv)
    start[3], end[3] = 20.0, -60.0  # [N.m] on joint 4
    law = Schedule([0.0, 0.5], [start, end], "linear")
    x0 = _panda_start(panda)
    build = lambda: _panda_system(panda, order)  # noqa: E731
    names = [c.name for c in build().components]
    first = names.index("joint_limits") < names.index("mimic:panda_finger_joint2")
    assert first == (order == "limits first")
    a, b = both(monkeypatch, build, 0.5, x0=x0, control=law, output_dt=0.01)
    names = [e.name for e in b.events]
    assert names[:2] == ["limit:panda_joint4", "limit-off:panda_joint4"]
    stats = a.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] == len(names) + 1
    assert_same(a, b)
    for key in ("joint_limits.force", "mimic:panda_finger_joint2.force"):
        scale = max(1.0, np.abs(b.outputs[key]).max())
        assert np.abs(a.outputs[key] - b.outputs[key]).max() <= 1e-8 * scale, key
    held = (a.t > b.events[0].t + 0.01) & (a.t < b.events[1].t - 0.01)
    i4 = list(panda.model.names).index("panda_joint4") - 1
    assert held.sum() > 3 and np.all(a.outputs["joint_limits.force"][held, i4] > 0.0)
    i1, i2 = _finger_indices(model)
    assert np.abs(a.q[:, i2] - a.q[:, i1]).max() < 1e-9
    assert a.energy_balance().max_relative() < 1e-9


@pytest.mark.parametrize("case", ["limits", "mimic", "both", "dependent"])
def test_compiled_rows_equal_the_acceleration_step(panda, case):
    """One evaluation at seeded random states: the compiled right-hand side with its rows
    against the Python one, and the compiled reactions λ against the step's (in the step's
    row order), to 1e-10 relative. ``dependent``: both fingers held on their stops and the
    coupling row (rank 2 of 3 rows: the step's minimum-norm reactions)."""
    from pinext.compiled.phase import rhs as compiled_rhs
    from pinext.contact.limits import FREE, LOWER, UPPER, LimitModes
    from pinext.simulation.chart import Chart
    from pinext.simulation.rhs import make_rhs

    system = px.System(panda, mimic=case != "limits", joint_limits=case != "mimic")
    model = system.model
    i1, i2 = _finger_indices(model)
    rng = np.random.default_rng(11)
    q = pin.neutral(model)
    q[:7] = READY
    x = system.initial_state(q, np.zeros(model.nv))
    law = px.simulation.arguments.checked_control(rng.normal(size=model.nv), system, x)
    phase = system.initial_phase(0.0, x, law)
    if case != "mimic":
        limits = next(c for c in system.components if isinstance(c, px.contact.JointLimits))
        states = [FREE] * len(limits.limits)
        states[3], states[1] = UPPER, LOWER
        if case == "dependent":
            states[i1] = states[i2] = UPPER
        phase = phase.replace(limits.name, LimitModes(tuple(states), tuple(limits.joints)))
    kernel = compiled_path.phase_kernel(system, phase, Chart(system, x), law)
    assert kernel is not None
    rows = {"limits": 2, "mimic": 1, "both": 3, "dependent": 5}[case]
    assert kernel.lam.size == rows and kernel.mu.size == rows - (case == "dependent")
    reference = make_rhs(system, phase, Chart(system, x), law, None)
    step = system.acceleration_step(phase)
    u = law(0.0, x)
    for _ in range(4):
        y = x.copy()
        y[: 2 * model.nv] += rng.uniform(-0.3, 0.3, 2 * model.nv)
        y[[i1, i2]] = 0.02 + rng.uniform(-1e-3, 1e-3, 2)  # near the coupling, off by a little
        out = np.empty_like(y)
        compiled_rhs(view(kernel), 0.0, y, out)
        expected = reference(0.0, y)
        assert np.abs(out - expected).max() <= 1e-10 * np.abs(expected).max()
        forces = step(0.0, y, u).forces
        lam = np.concatenate([forces[c.name] for c, _ in step.constrained])
        assert np.abs(kernel.lam - lam).max() <= 1e-10 * np.abs(lam).max()


def test_reaction_rows_are_offset_by_the_rows_before_their_owner():
    """A lift-off event's Reaction row is its owner's own; compiled_events adds the rows of
    the components before it."""
    from pinext.compiled import dop853
    from pinext.simulation.component import Event, Reaction

    events = [Event("a", lambda t, x: 1.0, compiled=Reaction(0)), Event("b", lambda t, x: 1.0,
              compiled=Reaction(1))]  # fmt: skip
    forms = compiled_path.compiled_events(events, None, [2, 0])
    assert list(forms[0]) == [dop853.REACTION] * 2
    assert list(forms[4]) == [2, 1]


def test_state_events_compiled_equal_their_closed_forms(tmp_path):
    """Every event kind that reads the state alone, laid out by its form's ``slots`` and
    evaluated by the compiled events (``events_at``), equals its closed form at seeded random
    states: the nearest of several stops ``min_k s_k (y_k − b_k)``, the separation test
    ``(φ − d0)/(t − t0)²`` of a stop left at t0 (and 1 where it rests where it left), the
    chart's re-centring ``R − max_k |y_k|`` and a breakpoint ``t − t_b``; each form's Python
    function (``value``) gives the same, so the kind's dispatch (``forms.event_value``) and
    the layout agree with what the Python path evaluates. Both sides round a few terms: 1e-15
    of the sum of their magnitudes (the separation test's divided by (t − t0)²)."""
    from pinext.compiled.events import events_at
    from pinext.simulation.chart import CHART_RADIUS, Chart
    from pinext.simulation.component import Event
    from pinext.simulation.events import REST_TOLERANCE, Breakpoint, Distances, Leaving

    system = px.System(pendulum(tmp_path, n=3))
    x = system.initial_state()
    law = px.simulation.arguments.checked_control(None, system, x)
    kernel = compiled_path.phase_kernel(
        system, system.initial_phase(0.0, x, law), Chart(system, x), law
    )
    rng = np.random.default_rng(11)
    for _ in range(20):
        y = rng.uniform(-1.5, 1.5, x.size)
        t, t0 = rng.uniform(0.5, 1.0), rng.uniform(0.0, 0.4)
        entry, sign = rng.permutation(3)[:2], rng.choice([-1.0, 1.0], 2)
        bound = rng.uniform(-1.0, 1.0, 2)
        stops = Distances(entry, sign, bound)
        d0 = rng.uniform(-1e-3, 0.0)
        left = Leaving(int(entry[0]), float(sign[0]), float(bound[0]), t0, d0, 3 + int(entry[0]))
        resting = y.copy()  # rests where it left: within the tolerance, at no rate
        resting[entry[0]] = bound[0] + sign[0] * (d0 + 0.5 * REST_TOLERANCE)
        resting[3 + entry[0]] = 0.0
        forms = [stops, left, Distances.within(np.arange(3), CHART_RADIUS), Breakpoint(t0)]
        laid = compiled_path.compiled_events([Event(str(f), f.value, compiled=f) for f in forms],
                                             None)  # fmt: skip
        expected = [
            np.min(sign * (y[entry] - bound)),
            (sign[0] * (y[entry[0]] - bound[0]) - d0) / (t - t0) ** 2,
            CHART_RADIUS - np.abs(y[:3]).max(),
            t - t0,
        ]
        scale = [  # the magnitudes each value sums (fastmath may fuse or reorder them)
            np.abs(y[entry]).max() + 1.0,
            (abs(y[entry[0]]) + abs(bound[0]) + abs(d0)) / (t - t0) ** 2,
            CHART_RADIUS + np.abs(y[:3]).max(),
            t + t0,
        ]
        for state, closed in ((y, expected), (resting, [None, 1.0, None, None])):
            out = np.empty(len(forms))
            events_at(kernel, t, state, laid, out, np.empty(x.size))
            python = [f.value(t, state) for f in forms]
            for got, py, want, size in zip(out, python, closed, scale, strict=True):
                for other in (py, want):
                    if other is not None:
                        assert abs(got - other) <= 1e-15 * size, (got, other, size)


def test_compiled_radau_jacobian_with_the_mimic_row_and_a_stop(panda):
    """Drives on the Panda with joint 4 held on its stop and the finger coupling: the compiled
    Radau's Jacobian (exact drive columns through the constrained accelerations of both
    components' rows) against central differences of the compiled right-hand side."""
    from pinext.contact.limits import FREE, UPPER, LimitModes
    from pinext.simulation.chart import Chart

    system = stiff_drives(panda, ("panda_joint1", "panda_joint4"), stiffness=300.0)
    model = system.model
    q = pin.neutral(model)
    q[:7] = READY
    q[3] = model.upperPositionLimit[3]
    x = px.simulation.arguments.as_initial_state(system, None, q, None)
    law = px.simulation.arguments.checked_control(np.array([0.5, 2.0]), system, x)
    phase = system.initial_phase(0.0, x, law)
    limits = next(c for c in system.components if isinstance(c, JointLimits))
    states = [FREE] * len(limits.limits)
    states[3] = UPPER
    phase = phase.replace(limits.name, LimitModes(tuple(states), tuple(limits.joints)))
    kernel = compiled_path.phase_kernel(system, phase, Chart(system, x), law)
    assert kernel is not None and kernel.lam.size == 2  # the stop and the coupling
    rng = np.random.default_rng(4)
    y = x.copy()
    y[model.nv :] += rng.uniform(-0.1, 0.1, y.size - model.nv)
    assert_radau_jacobian_matches_central_differences(kernel, y)


def _continuous_twins(tmp_path):
    """The three-link pendulum with j0 and j2 revolute and continuous (j1 stops at ±0.05 rad,
    j2 with URDF friction)."""
    text = pendulum_urdf(3).replace('lower="-10" upper="10"', 'lower="-1e10" upper="1e10"')
    head, third = text.split('<joint name="j2"')
    third = third.replace('<dynamics damping="0.0"/>', '<dynamics damping="0.0" friction="0.3"/>')
    head = head.replace('lower="-1e10" upper="1e10"', 'lower="-0.05" upper="0.05"')
    head = head.replace('lower="-0.05" upper="0.05"', 'lower="-1e10" upper="1e10"', 1)
    twins = {}
    for kind in ("revolute", "continuous"):
        path = tmp_path / f"{kind}.urdf"
        urdf = head + '<joint name="j2"' + third
        for joint in ("j0", "j2"):
            old = f'<joint name="{joint}" type="revolute">'
            assert old in urdf
            urdf = urdf.replace(old, old.replace("revolute", kind))
        path.write_text(urdf)
        twins[kind] = px.load_urdf(path)
    return twins


def test_continuous_joints_run_compiled_as_their_revolute_twins(tmp_path, monkeypatch):
    """A pendulum whose first and third joints are URDF ``continuous`` joints
    (q = (cos θ, sin θ)): the first spins through several turns while the second hits its
    stops and the third sticks and slips with URDF friction (its stuck row on an unbounded
    angle). The angle chart (θ integrated, (cos θ, sin θ) public) runs every segment
    compiled, and equals the same pendulum with revolute joints (Euclidean, the compiled
    path's reference) and the Python path's run to the accuracy of the runs."""
    twins = _continuous_twins(tmp_path)
    continuous = twins["continuous"]
    assert continuous.model.nq == 5 and continuous.model.nv == 3
    theta0, v0 = np.array([0.5, 0.0, 0.2]), np.array([14.0, 3.0, -1.0])
    kwargs = dict(v0=v0, output_dt=0.01)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    reference = px.simulate(px.System(twins["revolute"]), 1.0, q0=theta0, **kwargs)
    q0 = np.r_[np.cos(theta0[0]), np.sin(theta0[0]), 0.0, np.cos(0.2), np.sin(0.2)]
    runs = both(monkeypatch, lambda: px.System(continuous), 1.0, q0=q0, **kwargs)
    names = [e.name for e in reference.events]
    assert "limit:j1" in names and "j2.friction_stops" in names  # stops, and sticking
    assert any(e.startswith("j2.friction_slips") for e in names)
    assert np.ptp(reference.q[:, 0]) > 4 * np.pi  # several turns
    stats = runs[0].meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] > 3
    for traj, tol in zip(runs, (1e-9, 1e-7), strict=True):  # (compiled, python)
        assert traj.t.shape == reference.t.shape
        for public, angle in ((slice(0, 2), 0), (slice(3, 5), 2)):
            cos_sin = np.c_[np.cos(reference.q[:, angle]), np.sin(reference.q[:, angle])]
            assert np.abs(traj.q[:, public] - cos_sin).max() < tol
        assert np.abs(traj.q[:, 2] - reference.q[:, 1]).max() < tol
        assert np.abs(traj.v - reference.v).max() < tol * np.abs(reference.v).max()
        assert [e.name for e in traj.events] == names
        assert traj.energy_balance().max_relative() < 1e-8


def test_a_driven_continuous_joint_beside_stops_and_friction(tmp_path, monkeypatch):
    """The pendulum of the test above with its continuous first joint driven by a DC motor at a
    constant voltage through a rigid gear, beside j1's stops and j2's friction: the run turns
    the pendulum over, equals the revolute twin's (run compiled) with the compiled path
    enabled and on the Python path to the accuracy of the runs, and its energy (the motor's
    input and losses included) balances. (The drive's form reads the joint's public
    coordinates, so its phases on the continuous joint take the Python path.) An elastic
    transmission, whose spring would act on the periodic angle, is refused on a continuous
    joint with a pinext error that names the joint."""
    twins = _continuous_twins(tmp_path)
    motor = DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )

    def build(robot):
        return px.System(robot, drives={"j0": Drive(motor, Gear(20.0))})

    theta0, v0 = np.array([0.5, 0.0, 0.2]), np.array([2.0, 3.0, -1.0])
    kwargs = dict(v0=v0, control=np.array([48.0]), output_dt=0.01)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    reference = px.simulate(build(twins["revolute"]), 1.0, q0=theta0, **kwargs)
    q0 = np.r_[np.cos(0.5), np.sin(0.5), 0.0, np.cos(0.2), np.sin(0.2)]
    runs = both(monkeypatch, lambda: build(twins["continuous"]), 1.0, q0=q0, **kwargs)
    names = [e.name for e in reference.events]
    assert "limit:j1" in names and np.ptp(reference.q[:, 0]) > 2 * np.pi  # stops, turns
    for traj in runs:
        assert [e.name for e in traj.events] == names
        cos_sin = np.c_[np.cos(reference.q[:, 0]), np.sin(reference.q[:, 0])]
        assert np.abs(traj.q[:, :2] - cos_sin).max() < 1e-7
        assert np.abs(traj.q[:, 2] - reference.q[:, 1]).max() < 1e-7
        assert np.abs(traj.v - reference.v).max() < 1e-7 * np.abs(reference.v).max()
        assert traj.energy_balance().max_relative() < 1e-8
    elastic = Drive(motor, ElasticTransmission(20.0, 2e3, 0.5))
    with pytest.raises(px.exceptions.InvalidParameter, match="j0.*continuous"):
        px.System(twins["continuous"], drives={"j0": elastic})


def _tumbling_model() -> pin.Model:
    """A free-flying box carrying a ball-jointed link and, on that, an unaligned hinge."""
    model = pin.Model()
    fly = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    model.appendBodyToJoint(fly, pin.Inertia.FromBox(3.0, 0.4, 0.3, 0.2), pin.SE3.Identity())
    ball = model.addJoint(
        fly, pin.JointModelSpherical(), pin.SE3(np.eye(3), np.array([0.2, 0.0, 0.1])), "ball"
    )
    lever = pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.15]))
    model.appendBodyToJoint(ball, pin.Inertia.FromCylinder(0.5, 0.03, 0.3), lever)
    axis = np.array([1.0, 2.0, 0.5]) / np.linalg.norm([1.0, 2.0, 0.5])
    hinge = model.addJoint(
        ball, pin.JointModelRevoluteUnaligned(axis), pin.SE3(np.eye(3), np.array([0, 0, 0.3])),
        "hinge",
    )  # fmt: skip
    model.appendBodyToJoint(hinge, pin.Inertia.FromSphere(0.3, 0.05), lever)
    return model


def test_a_tumbling_free_body_runs_compiled_and_keeps_its_momentum(monkeypatch):
    """A free-flying box with a ball-jointed link and a hinge, spinning at ~10 rad/s and
    falling for 2 s: its quaternions are integrated as rotation vectors that re-centre every
    radian, on the compiled path as on the Python path (the same chart and arithmetic); the
    centroidal angular momentum (Pinocchio's ``computeCentroidalMomentum``, about the centre
    of mass: gravity exerts no torque there) stays constant and the linear momentum grows as
    m g t, to the integration's accuracy; the energy audit closes."""
    model = _tumbling_model()
    rng = np.random.default_rng(4)
    q0 = pin.neutral(model)
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3))).coeffs()
    q0[7:11] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-1, 1, 3))).coeffs()
    v0 = np.r_[rng.normal(size=3), rng.normal(scale=6.0, size=3), rng.normal(scale=3, size=4)]
    runs = both(monkeypatch, lambda: px.System(model), 2.0, q0=q0, v0=v0, output_dt=0.01)
    stats = runs[0].meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] >= 10  # re-centred every radian
    assert_same(*runs, tol=1e-9)
    data, mass = model.createData(), pin.computeTotalMass(model)
    for traj in runs:
        momenta = np.array(
            [
                pin.computeCentroidalMomentum(model, data, q, v).vector
                for q, v in zip(traj.q, traj.v, strict=True)
            ]
        )
        linear = momenta[:, :3] - mass * model.gravity.linear * traj.t[:, None]
        assert np.abs(linear - linear[0]).max() <= 1e-8 * (1 + np.abs(linear[0]).max())
        assert np.abs(momenta[:, 3:] - momenta[0, 3:]).max() <= 1e-8 * np.abs(momenta[0, 3:]).max()
        assert traj.energy_balance().max_relative() < 1e-8


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_free_body_released_at_rest_takes_a_first_step_of_its_scale(monkeypatch, seed):
    """The tumbling model released at rest from a seeded random orientation. Its chart is
    anchored at the start, where the rotation vector is zero: ``log_at`` of a quaternion at
    itself is exactly zero (q₀⁻¹ ⊗ q₀ = 1), not a rounding of 1e-17. Hairer's first-step
    guess ``0.01 |y₀| / |f₀|`` (HINIT853) divides such a rounding by atol, which made the
    first step ~1e-18 s and the run climb back by the step's sixfold growth (~12 steps);
    with y₀ = 0 the guess rests on f₀ and f' alone, h ≈ (0.01 / |f'|)^(1/8) capped at 100 ×
    1e-6 s. On both paths the first step is 1e-4 s."""
    from pinext.dynamics.rotations import log_at

    model = _tumbling_model()
    rng = np.random.default_rng(seed)
    q0 = pin.neutral(model)
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3))).coeffs()
    q0[7:11] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3))).coeffs()
    out = np.ones(6)
    log_at(q0, 3, q0, 3, out, 0)
    log_at(q0, 7, q0, 7, out, 3)
    assert not out.any()
    runs = both(monkeypatch, lambda: px.System(model), 0.1, q0=q0)
    for traj in runs:
        assert traj.t[1] == pytest.approx(1e-4, rel=1e-12)


def test_go1_with_friction_and_limits_runs_compiled(monkeypatch):
    """go1 (free flyer; URDF joint friction and limits, every joint sticking and slipping)
    from a seeded random pose and velocity: every segment runs compiled and equals the
    Python path, events included."""
    from pinext.check import random_state
    from pinext.robots import load_robot

    robot = load_robot("go1")
    rng = np.random.default_rng(3)
    q0 = random_state(robot.model, rng).q
    v0 = np.r_[rng.normal(size=6), rng.normal(scale=0.5, size=12)]
    runs = both(monkeypatch, lambda: px.System(robot), 1.0, q0=q0, v0=v0, output_dt=0.01)
    stats = runs[0].meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] > 5
    assert_same(*runs, tol=1e-8)
    assert runs[0].energy_balance().max_relative() < 1e-8


def test_a_short_run_pauses_for_its_progress_bar_a_few_times(tmp_path, monkeypatch):
    """The compiled loop returns to Python for the progress bar after FIRST_PAUSE evaluations
    at first, four times fewer whenever those pauses come faster than BAR_INTERVAL (more
    often only after a pause that took over a second, which a run of milliseconds has not):
    a bare pendulum's 10 s pause at least once and at most once per FIRST_PAUSE
    evaluations."""
    from pinext.compiled import path

    calls = []
    advance = path._dop.advance

    def counted(*args):
        calls.append(1)
        return advance(*args)

    monkeypatch.setattr(path._dop, "advance", counted)
    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    traj = px.simulate(px.System(pendulum(tmp_path)), 10.0, q0=np.array([1.0, 0.0, 0.0]))
    stats = traj.meta["stats"]
    assert stats["compiled_segments"] == stats["segments"] == 1
    assert stats["nfev"] > path.FIRST_PAUSE  # long enough to pause
    assert 2 <= len(calls) <= 1 + stats["nfev"] // path.FIRST_PAUSE


def test_a_run_says_how_much_of_its_time_the_compiled_loops_took(tmp_path, monkeypatch):
    """``stats["compiled_time"]``: the part of the run's wall time inside the compiled loops
    (the rest is Python between and around the segments): positive and within the wall time
    on the compiled path, zero on the Python path."""
    robot = pendulum(tmp_path)
    q0 = np.array([1.0, 0.0, 0.0])
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        stats = px.simulate(px.System(robot), 1.0, q0=q0).meta["stats"]
        if flag == "0":
            assert 0.0 < stats["compiled_time"] <= stats["wall_time"]
        else:
            assert stats["compiled_time"] == 0.0


def test_held_joints_by_the_hybrid_aba_equal_the_rows_solve(tmp_path, monkeypatch):
    """The six-DOF arm with the URDF's stops, Coulomb friction in two joints and elastic DC
    drives on three, falling 1.5 s: in every phase whose rows the hybrid ABA holds (a joint
    stuck by friction, a wrist on its stop, both), the compiled right-hand side and the
    rows' reactions at the segment's start equal those of the same kernel solving its rows
    with one M⁻¹ solve per row (:func:`pinext.compiled.phase._locked_rows`, which the
    acceleration step's tests hold to Pinocchio), to the mass matrix's conditioning."""
    from pinext.compiled.phase import rhs
    from tests.models import arm_with_friction_and_drives

    arm, drives = arm_with_friction_and_drives(tmp_path)
    system = px.System(arm, drives=drives)
    solve, starts = compiled_path.solve, []

    def spy(kernel, t_span, y0, **options):
        starts.append((kernel, np.array(y0, dtype=float)))
        return solve(kernel, t_span, y0, **options)

    monkeypatch.setenv("PINEXT_NO_COMPILED", "0")
    monkeypatch.setattr(px.compiled, "solve", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        px.simulate(system, 1.5, q0=np.array([0.2, 0.6, -1.1, 0.3, 1.2, 0.0]))
    held = [(kernel, y) for kernel, y in starts if kernel.hybrid]
    assert {kernel.lam.size for kernel, _ in held} == {1, 2}  # stuck, on a stop, both
    data = arm.model.createData()
    for kernel, y in held:
        hybrid, rows = np.empty_like(y), np.empty_like(y)
        rhs(kernel, 0.0, y, hybrid)
        reactions = kernel.lam.copy()
        rhs(kernel._replace(hybrid=False), 0.0, y, rows)
        mass = pin.crba(arm.model, data, y[: arm.model.nv])
        tol = 50.0 * np.linalg.cond(np.triu(mass) + np.triu(mass, 1).T) * np.finfo(float).eps
        assert np.abs(hybrid - rows).max() < tol * (1.0 + np.abs(rows).max())
        assert np.abs(reactions - kernel.lam).max() < tol * (1.0 + np.abs(kernel.lam).max())


SPRING_MASS = """<robot name="spring_mass"><link name="base"/>
<joint name="x" type="prismatic"><parent link="base"/><child link="cart"/><axis xyz="1 0 0"/>
<limit lower="-10" upper="10" effort="100" velocity="100"/></joint>
<link name="cart"><inertial><mass value="2.0"/>
<inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link></robot>"""


@pytest.mark.parametrize("method", ["DOP853", "Radau"])
def test_every_sample_comes_from_its_own_step_across_output_buffers(tmp_path, method, monkeypatch):
    """A spring–mass (m = 2 kg, k = 800 N/m: ω = 20 rad/s) sampled every 20 µs for 0.3 s:
    15 000 samples, several times the compiled loop's output buffer, with steps that hold
    dozens of samples each, so that buffers fill in the middle of a step. The run equals bit
    for bit the run whose buffer holds every sample (the samples after a full buffer were
    taken from the next step's interpolant, extrapolated backwards: 2.4e-8 of the amplitude
    off at DOP853's rtol 1e-11), and every sample equals the closed form x(t) = x0 cos ωt to
    the integration's own accuracy (DOP853 at rtol 1e-11: 1e-9 of the amplitude, 100 × its
    tolerance; Radau at 1e-9: 1e-6)."""
    path = tmp_path / "spring_mass.urdf"
    path.write_text(SPRING_MASS)
    robot = px.load_urdf(path)
    robot.joint_stiffness[:] = 800.0
    system = px.System(robot, joint_limits=False)
    x0, omega = 0.1, 20.0
    rtol, bound = (1e-11, 1e-9) if method == "DOP853" else (1e-9, 1e-6)
    runs = []
    for capacity in (compiled_path.OUTPUT_CAPACITY, 20_000):
        monkeypatch.setattr(compiled_path, "OUTPUT_CAPACITY", capacity)
        runs.append(px.simulate(
            system, 0.3, q0=np.array([x0]), method=method, output_dt=2e-5,
            rtol=rtol, atol=1e-14, progress=False,
        ))  # fmt: skip
    traj = runs[0]
    assert traj.meta["stats"]["compiled_segments"] == traj.meta["stats"]["segments"] == 1
    assert traj.t.size == 15001
    np.testing.assert_array_equal(traj.x, runs[1].x)
    np.testing.assert_array_equal(traj.t, np.unique(traj.t))
    error = np.abs(traj.q[:, 0] - x0 * np.cos(omega * traj.t)) / x0
    assert error.max() < bound, (int(error.argmax()), float(error.max()))
