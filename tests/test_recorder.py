"""The recorder of simulate's segments."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import pinext as px
from pinext.simulation.chart import Chart
from pinext.simulation.recorder import Recorder


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


def test_chart_rate_solves_only_the_curved_blocks_of_dintegrate():
    """q_rate solves dIntegrate's blocks of the free-flyer (SE(3)) and leaves the revolute
    and unbounded revolute DOFs (identity blocks) as they are: equal to the full solve at a
    seeded random tangent vector far from the anchor."""
    import pinocchio as pin

    model = pin.Model()
    base = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    wheel = model.addJoint(base, pin.JointModelRUBY(), pin.SE3.Identity(), "wheel")
    arm = model.addJoint(base, pin.JointModelRX(), pin.SE3.Identity(), "arm")
    for j in (base, wheel, arm):
        model.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    system = px.System(px.Robot.from_model(model))
    rng = np.random.default_rng(3)
    chart = Chart(
        system,
        system.initial_state(pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))),
        False,
    )
    y = np.zeros(system.nx - (model.nq - model.nv))
    y[: model.nv] = rng.normal(size=model.nv)
    v = rng.normal(size=model.nv)
    full = np.linalg.solve(
        pin.dIntegrate(model, chart.anchor, y[: model.nv], pin.ArgumentPosition.ARG1), v
    )
    assert list(chart.curved) == list(range(6))
    np.testing.assert_allclose(chart.q_rate(y, v), full, rtol=1e-12, atol=1e-12)
