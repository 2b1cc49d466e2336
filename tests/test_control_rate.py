"""Control laws sampled at a fixed period (zero-order hold): simulate(..., control_period=T_s).

Oracles: a :class:`pinext.Schedule` of kind ``"zoh"`` holding the same samples (the hold is
exact), the continuous law (the hold's error is O(T_s): it halves with the period), a tight
continuous run (no drift from resuming the integrator at every sample), the event time of the
same motion under a constant input, and Pinocchio's ``rnea`` for the sampled inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter
from pinext.simulation.controls import Schedule

from .conftest import pendulum_urdf
from .test_compiled_path import stiff_drives

OPTIONS = dict(rtol=1e-10, atol=1e-12)


def pendulum(tmp_path, n=2, damping=0.0, limits=None):
    text = pendulum_urdf(n, damping=damping)
    if limits is not None:
        text = text.replace('lower="-10" upper="10"', f'lower="{limits[0]}" upper="{limits[1]}"')
    path = tmp_path / "pendulum.urdf"
    path.write_text(text)
    return px.load_urdf(path)


def quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return px.simulate(*args, **kwargs)


def f(t):
    """A known input signal [N.m]."""
    return np.array([2.0 * np.sin(5.0 * t) + 0.5, -1.5 * np.cos(3.0 * t)])


def test_hold_equals_a_zoh_schedule_of_the_samples(tmp_path):
    """A law returning f(t) sampled every T_s is the Schedule (kind 'zoh') of f(k T_s)."""
    robot = pendulum(tmp_path, damping=0.05)
    period, t_final = 0.01, 0.5
    q0 = np.array([0.4, -0.3])
    held = quiet(
        px.System(robot), t_final, q0=q0, control=lambda t, x: f(t), control_period=period,
        output_dt=0.01, **OPTIONS,
    )  # fmt: skip
    times = period * np.arange(round(t_final / period))
    schedule = Schedule(times, np.array([f(t) for t in times]), kind="zoh")
    ref = quiet(px.System(robot), t_final, q0=q0, control=schedule, output_dt=0.01, **OPTIONS)
    np.testing.assert_allclose(held.t, ref.t, rtol=0, atol=1e-12)
    assert np.abs(held.x - ref.x).max() < 1e-8
    assert held.meta["stats"]["control_samples"] == times.size
    assert held.meta["stats"]["control_period"] == period
    # the recorded input is the held sample, at and between the sample times
    u = held.outputs["input"]
    np.testing.assert_allclose(u, np.array([schedule(t) for t in held.t]), atol=1e-12)


def test_sample_sees_the_state_at_the_sample_time(tmp_path):
    """The law is called once per period, at t_k = k T_s, with the state of the run there."""
    robot = pendulum(tmp_path, damping=0.05)
    calls = []

    def law(t, x):
        calls.append((t, x.copy()))
        return -5.0 * x[:2] - 0.5 * x[2:4]

    traj = quiet(px.System(robot), 0.2, q0=np.array([0.4, -0.3]), control=law,
                 control_period=0.02, output_dt=0.02, **OPTIONS)  # fmt: skip
    sampled = [(t, x) for t, x in calls[1:]]  # the first call checks the law's shape
    times = np.array([t for t, _ in sampled])
    np.testing.assert_allclose(times, 0.02 * np.arange(10), atol=1e-15)
    for t, x in sampled:
        i = int(np.argmin(np.abs(traj.t - t)))
        assert np.abs(x - traj.x[i]).max() < 1e-9  # the located sample time vs the output


def pd_law(t, x):
    """A PD law on a two-link pendulum with a moving set point [N.m]."""
    q_ref = np.array([0.6 * np.sin(2.0 * t), -0.4])
    return 60.0 * (q_ref - x[:2]) - 4.0 * x[2:4]


def test_hold_converges_to_the_continuous_law_at_first_order(tmp_path):
    """The hold's error against the continuous law is O(T_s): halving the period halves it."""
    robot = pendulum(tmp_path, damping=0.02)
    kwargs = dict(q0=np.array([0.4, -0.3]), control=pd_law, output_dt=0.01, **OPTIONS)
    continuous = quiet(px.System(robot), 1.0, **kwargs)
    assert continuous.meta["stats"]["control_period"] is None
    errors = []
    for period in (4e-3, 2e-3, 1e-3):
        held = quiet(px.System(robot), 1.0, control_period=period, **kwargs)
        errors.append(np.abs(held.q - continuous.q).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 1.8) & (ratios < 2.2)), (errors, ratios)
    assert errors[-1] < 5e-3


def test_resumed_integration_does_not_drift_on_a_ringing_drive(tmp_path):
    """The ringing-drive scene of test_compiled_path: a constant returned by a law sampled
    2000 times (2000 resumes of the same integrator) stays within the tolerance of a tight
    continuous run, as a run without samples does."""
    robot = pendulum(tmp_path, damping=0.02)
    u = np.array([80.0, -80.0])
    kwargs = dict(q0=np.array([0.4, -0.3]), output_dt=0.01)

    def ringing():
        return stiff_drives(robot, ("j0", "j1"), damping=0.0, resistance=200.0)

    tight = quiet(ringing(), 2.0, rtol=1e-11, atol=1e-13, method="DOP853", control=u, **kwargs)
    rtol = 1e-4
    for method in ("DOP853", "Radau"):
        held = quiet(
            ringing(), 2.0, rtol=rtol, atol=1e-6, method=method, control=lambda t, x: u,
            control_period=1e-3, **kwargs,
        )  # fmt: skip
        assert held.meta["stats"]["control_samples"] == 2000
        assert np.abs(held.q - tight.q).max() < 10 * rtol, method


def test_joint_limit_inside_a_period_is_located(tmp_path):
    """A held constant pushes the pendulum into its stop between two samples: the impact is
    located at the time of the same run under the constant itself (not at a sample time),
    and the run goes on holding the same input after it."""
    robot = pendulum(tmp_path, n=1, limits=(-10, 0.3))
    u = np.array([6.0])
    kwargs = dict(q0=np.array([0.0]), **OPTIONS)
    ref = quiet(px.System(robot), 0.5, control=u, **kwargs)
    period = 0.05
    held = quiet(px.System(robot), 0.5, control=lambda t, x: u, control_period=period, **kwargs)
    impacts = [e.t for e in held.events]
    assert impacts and len(impacts) == len(ref.events)
    np.testing.assert_allclose(impacts, [e.t for e in ref.events], rtol=0, atol=1e-9)
    assert all(abs(t / period - round(t / period)) > 1e-3 for t in impacts[:1])
    assert np.abs(held.x[-1] - ref.x[-1]).max() < 1e-7


def test_compiled_and_python_paths_agree(tmp_path, monkeypatch):
    robot = pendulum(tmp_path, damping=0.02)
    runs = []
    for flag in ("0", "1"):
        monkeypatch.setenv("PINEXT_NO_COMPILED", flag)
        runs.append(
            quiet(
                px.System(robot),
                0.5,
                q0=np.array([0.4, -0.3]),
                control=pd_law,
                control_period=5e-3,
                output_dt=0.01,
                **OPTIONS,
            )  # fmt: skip
        )
    compiled, python = runs
    assert compiled.meta["stats"]["compiled_segments"] == compiled.meta["stats"]["segments"]
    assert python.meta["stats"]["compiled_segments"] == 0
    assert compiled.meta["stats"]["control_samples"] == python.meta["stats"]["control_samples"]
    assert np.abs(compiled.x - python.x).max() < 1e-8


class Damp(px.control.Controller):
    def __call__(self, t, q, v, sensors):
        return -2.0 * v


def test_default_period_rule(tmp_path):
    """A Controller is sampled every 1 ms by default; u(t, x) stays continuous; 0 makes any
    law continuous."""
    robot = pendulum(tmp_path)
    q0 = np.array([0.4, -0.3])
    law = Damp()
    stats = quiet(px.System(robot), 0.05, q0=q0, control=law).meta["stats"]
    assert stats["control_period"] == 1e-3 and stats["control_samples"] == 50
    stats = quiet(px.System(robot), 0.05, q0=q0, control=law, control_period=0).meta["stats"]
    assert stats["control_period"] is None and stats["control_samples"] == 0
    stats = quiet(px.System(robot), 0.05, q0=q0, control=lambda t, x: -x[2:4]).meta["stats"]
    assert stats["control_period"] is None


def test_a_plain_function_of_t_q_v_sensors_is_a_controller(tmp_path):
    """``law(t, q, v, sensors)`` written as a plain function is the Controller it spells:
    sampled every 1 ms by default, continuous with ``control_period=0``, and the same run
    bit for bit as the :class:`Controller` subclass with the same body; in time stepping
    too. A function that takes neither (t, x) nor (t, q, v, sensors) is refused, naming
    both signatures."""
    robot = pendulum(tmp_path)
    q0 = np.array([0.4, -0.3])

    def damp(t, q, v, sensors):
        return -2.0 * v

    for period in (None, 0):
        a = quiet(px.System(robot), 0.05, q0=q0, control=damp, control_period=period)
        b = quiet(px.System(robot), 0.05, q0=q0, control=Damp(), control_period=period)
        assert a.meta["stats"]["control_period"] == (1e-3 if period is None else None)
        np.testing.assert_array_equal(a.x, b.x)
    stepped = [
        px.simulate(robot, 0.02, q0=q0, control=law, method="timestepping", dt=1e-3)
        for law in (damp, Damp())
    ]
    np.testing.assert_array_equal(stepped[0].x, stepped[1].x)
    with pytest.raises(InvalidParameter, match=r"u\(t, x\)"):
        px.simulate(px.System(robot), 0.01, control=lambda t, q, v: -v)


@pytest.mark.parametrize("period", [-1e-3, float("nan"), "1ms", float("inf")])
def test_bad_period(tmp_path, period):
    robot = pendulum(tmp_path)
    with pytest.raises(InvalidParameter, match="control_period"):
        px.simulate(px.System(robot), 0.01, control=Damp(), control_period=period)


def test_period_with_a_function_of_time_only_is_an_error(tmp_path):
    robot = pendulum(tmp_path)
    schedule = Schedule([0.0, 1.0], np.zeros((2, 2)))
    for control in (np.zeros(2), schedule, None):
        with pytest.raises(InvalidParameter, match="control_period"):
            px.simulate(px.System(robot), 0.01, control=control, control_period=1e-3)


def test_time_stepping_holds_the_law_over_its_period(tmp_path):
    """Time stepping (dt = 1 ms) with a 5 ms period: the law is called once per period."""
    robot = pendulum(tmp_path, n=1)
    calls = []

    def law(t, x):
        calls.append(t)
        return np.array([-3.0 * x[0]])

    traj = px.simulate(
        robot, 0.05, method="timestepping", dt=1e-3, q0=np.array([0.3]), control=law,
        control_period=5e-3,
    )  # fmt: skip
    sampled = np.unique(np.round(np.array(calls) / 5e-3, 9))  # the last one: at t_final
    np.testing.assert_allclose(sampled, np.arange(11))
    u = traj.outputs["input"][:, 0]
    for ti, ui in zip(traj.t, u, strict=True):  # held: -3 q at the period's start
        k = int(np.floor(ti / 5e-3 + 1e-9))
        j = int(np.argmin(np.abs(traj.t - 5e-3 * k)))
        assert ui == pytest.approx(-3.0 * traj.q[j, 0], abs=1e-12)


def test_sampled_input_matches_rnea_of_the_sampled_state(tmp_path):
    """ComputedTorque held over a period: the recorded input is Pinocchio's rnea at the state
    of the last sample."""
    robot = pendulum(tmp_path, damping=0.0)
    model, data = robot.model, robot.model.createData()
    ref = lambda t: (  # noqa: E731
        np.array([0.3 * np.sin(3 * t), -0.2]),
        np.array([0.9 * np.cos(3 * t), 0.0]),
        np.array([-2.7 * np.sin(3 * t), 0.0]),
    )
    law = px.control.ComputedTorque(robot, ref, kp=400.0, kd=40.0)
    traj = quiet(robot, 0.1, q0=np.array([0.0, -0.2]), control=law, control_period=1e-2,
                 output_dt=1e-2, **OPTIONS)  # fmt: skip
    for ti, xi, ui in zip(traj.t[:-1], traj.x[:-1], traj.outputs["input"][:-1], strict=True):
        q_r, v_r, a_r = ref(ti)
        q, v = xi[:2], xi[2:4]
        a = a_r + 400.0 * (q_r - q) + 40.0 * (v_r - v)
        np.testing.assert_allclose(ui, pin.rnea(model, data, q, v, a), atol=1e-9)


def test_an_unstable_held_law_is_explained(tmp_path):
    """A PD far too stiff for its period: the failure says the law is held and what to do."""
    robot = pendulum(tmp_path, n=1)
    law = lambda t, x: -4000.0 * x[:1] - 400.0 * x[1:2]  # noqa: E731  k_d T_s / m ≈ 75
    with pytest.raises(px.exceptions.IntegrationError, match="control_period=0"):
        quiet(px.System(robot, joint_limits=False), 3.0, q0=np.array([0.1]), control=law,
              control_period=1e-2)  # fmt: skip


def test_example_control_rate():
    """examples/control_rate.py: computed torque's error halves with the period; the PD with
    gravity compensation ends on its goal."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "control_rate.py"
    spec = importlib.util.spec_from_file_location("control_rate", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        results = example.track((2e-3, 1e-3, 0.0))
        assert example.hold_pose() < 1e-6
    assert 1.7 < results[2e-3][0] / results[1e-3][0] < 2.3
    assert results[0.0][0] < 1e-8
