"""The compiled DOP853 driver: accuracy, event location and direction, failures, and agreement
with solve_ivp's DOP853 (the same method stepped in Python)."""

import gc
import weakref

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from pinext.simulation import dop853


def oscillator(t, y):
    return np.array([y[1], -y[0]])


def event(direction):
    def g(t, y):
        return y[0]

    g.direction = direction
    return g


def test_matches_the_closed_form_and_counts_evaluations():
    sol = dop853.solve(oscillator, (0.0, 10.0), [1.0, 0.0], rtol=1e-11, atol=1e-13)
    assert sol.status == 0 and sol.t[0] == 0.0 and sol.t[-1] == 10.0
    assert np.all(np.diff(sol.t) > 0)
    exact = np.array([np.cos(sol.t), -np.sin(sol.t)])
    assert np.abs(sol.y - exact).max() < 1e-9
    assert sol.nfev > 12 * (len(sol.t) - 1)  # 12 stages per step, plus rejected steps


@pytest.mark.parametrize(("direction", "root"), [(-1, np.pi / 2), (1, 1.5 * np.pi), (0, np.pi / 2)])
def test_event_located_to_the_step_tolerance_in_its_direction(direction, root):
    sol = dop853.solve(
        oscillator, (0.0, 10.0), [1.0, 0.0], events=[event(direction)], rtol=1e-13, atol=1e-15
    )
    assert sol.status == 1
    assert abs(sol.t_events[0][0] - root) < 1e-12
    assert sol.t[-1] == sol.t_events[0][0]  # the last sample is the event state
    # the root of g on the step's 7th-order dense output to 4 ε; the state there integrated
    # from the step's start: g of it within the step's local tolerance (rtol |y| + atol)
    assert abs(sol.y_events[0][0][0]) < 1e-13 + 1e-15
    assert np.all(sol.t[:-1] < root)


def test_earliest_of_two_events_wins():
    late = event(-1)

    def early(t, y):
        return t - 1.0

    early.direction = 1
    sol = dop853.solve(oscillator, (0.0, 10.0), [1.0, 0.0], events=[late, early])
    assert sol.t_events[0].size == 0
    assert abs(sol.t_events[1][0] - 1.0) < 1e-13


def test_same_event_time_and_state_as_solve_ivp():
    def pendulum(t, y):
        return np.array([y[1], -9.81 * np.sin(y[0])])

    g = event(-1)
    g.terminal = True
    ours = dop853.solve(pendulum, (0.0, 5.0), [2.5, 0.0], events=[g])
    ref = solve_ivp(pendulum, (0.0, 5.0), [2.5, 0.0], "DOP853", rtol=1e-12, atol=1e-14, events=g)
    assert abs(ours.t_events[0][0] - ref.t_events[0][0]) < 1e-9
    assert np.abs(ours.y_events[0][0] - ref.y_events[0][0]).max() < 1e-8


def test_errors_in_the_right_hand_side_and_events_propagate_unchanged():
    class Boom(Exception):
        pass

    def rhs(t, y):
        if t > 1.0:
            raise Boom("rhs")
        return oscillator(t, y)

    with pytest.raises(Boom, match="rhs"):
        dop853.solve(rhs, (0.0, 2.0), [1.0, 0.0])

    def g(t, y):
        if t > 0.5:
            raise Boom("event")
        return 1.0

    with pytest.raises(Boom, match="event"):
        dop853.solve(oscillator, (0.0, 2.0), [1.0, 0.0], events=[g])


def test_non_finite_right_hand_side_fails_with_the_last_good_state():
    def rhs(t, y):
        return oscillator(t, y) if t < 1.0 else np.full(2, np.nan)

    sol = dop853.solve(rhs, (0.0, 2.0), [1.0, 0.0])
    assert sol.status == -1 and "step size" in sol.message
    assert 0.5 < sol.t[-1] < 1.0
    assert np.all(np.isfinite(sol.y))


def test_max_step_is_respected():
    sol = dop853.solve(oscillator, (0.0, 1.0), [1.0, 0.0], max_step=0.01)
    assert np.diff(sol.t)[:-1].max() <= 0.01 + 1e-15
    assert np.diff(sol.t)[-1] <= 0.0101  # DOP853 may stretch its last step by 1 %


def test_sampled_output_is_dop853s_dense_output():
    t_eval = np.linspace(0.0, 10.0, 101)
    sol = dop853.solve(oscillator, (0.0, 10.0), [1.0, 0.0], t_eval=t_eval, rtol=1e-11, atol=1e-13)
    np.testing.assert_array_equal(sol.t, t_eval)
    exact = np.array([np.cos(t_eval), -np.sin(t_eval)])
    assert np.abs(sol.y - exact).max() < 1e-9  # a 7th-order interpolant, not a cubic one


def test_sampled_output_matches_solve_ivp_on_a_nonlinear_pendulum():
    def pendulum(t, y):
        return np.array([y[1], -9.81 * np.sin(y[0])])

    t_eval = np.linspace(0.0, 3.0, 31)
    ours = dop853.solve(pendulum, (0.0, 3.0), [2.5, 0.0], t_eval=t_eval, rtol=1e-12, atol=1e-14)
    ref = solve_ivp(
        pendulum, (0.0, 3.0), [2.5, 0.0], "DOP853", t_eval=t_eval, rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(ours.y, ref.y, atol=1e-9)


def test_sampled_output_stops_at_the_event():
    t_eval = np.arange(0.0, 10.0, 0.1)
    sol = dop853.solve(oscillator, (0.0, 10.0), [1.0, 0.0], t_eval=t_eval, events=[event(-1)])
    assert sol.status == 1
    root = sol.t_events[0][0]
    np.testing.assert_array_equal(sol.t, t_eval[t_eval <= root])
    assert np.abs(sol.y[0] - np.cos(sol.t)).max() < 1e-9


def test_an_event_that_crosses_and_returns_before_another_events_root_is_found():
    """p = t − t²/2 dips past 0.45 for t in (1 − √0.1, 1 + √0.1) and comes back within one
    step; the time event at 1.2 ends that step with the first event past zero: its root,
    earlier, is the event (it used to be missed, and the next segment started beyond it)."""

    def dip(t, y):
        return 0.45 - y[0]

    def clock(t, y):
        return 1.2 - t

    dip.direction = clock.direction = -1
    sol = dop853.solve(
        lambda t, y: np.array([y[1], -1.0]), (0.0, 3.0), np.array([0.0, 1.0]), events=[dip, clock]
    )
    assert sol.status == 1 and sol.t_events[1].size == 0
    assert sol.t_events[0][0] == pytest.approx(1.0 - np.sqrt(0.1), abs=1e-12)


@pytest.mark.parametrize("stopped", [False, True])
def test_a_finished_run_keeps_nothing_of_its_callbacks_alive(stopped):
    """scipy's compiled DOP853 keeps a reference to the callbacks of its last run; through
    them a finished simulation's System (370 MB for a legged robot on the Python path) stayed
    alive until the process ended. The right-hand side and the events hold an object here:
    once the run and its result are dropped, a collection frees it."""

    class Held:
        pass

    held = Held()
    alive = weakref.ref(held)

    def fun(t, y, held=held):
        return oscillator(t, y)

    def g(t, y, held=held):
        return y[0]

    g.direction = -1
    sol = dop853.solve(fun, (0.0, 10.0), [1.0, 0.0], events=[g] if stopped else None)
    assert sol.status == (1 if stopped else 0)
    del held, fun, g, sol
    gc.collect()
    assert alive() is None
