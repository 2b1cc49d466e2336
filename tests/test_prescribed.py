"""Prescribed motion: a kinematically driven joint and its driving torque."""

from __future__ import annotations

import re

import numpy as np
import pinocchio as pin
import pytest
from scipy.interpolate import CubicSpline

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound

from .conftest import ROOT

OMEGA, PERIOD = 6.0, 15.0


def spin_up(t: float) -> tuple[float, float, float]:
    """ω(t) = (Ω/T)(t − (T/2π) sin(2πt/T)): rest to Ω = 6 rad/s in T = 15 s."""
    c, w = OMEGA / PERIOD, 2 * np.pi / PERIOD
    return (
        c * (t * t / 2 + (np.cos(w * t) - 1) / w**2),
        c * (t - np.sin(w * t) / w),
        c * (1 - np.cos(w * t)),
    )


def hub_torque_by_reduction(model, q, v, qdd_hub, stiffness):
    """The hub torque by eliminating the hub (McClamroch (1986) (24)–(28)): the free
    coordinates solve M_ff a_f = -K q_f - h_f - M_fh q̈_h, then τ_h = (M a + h)_h."""
    data = model.createData()
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    bias = pin.nonLinearEffects(model, data, q, v)
    free = np.arange(1, model.nv)
    rhs = -stiffness[free] * q[free] - bias[free] - mass[free, 0] * qdd_hub
    a = np.concatenate(([qdd_hub], np.linalg.solve(mass[np.ix_(free, free)], rhs)))
    return float(mass[0] @ a + bias[0])


def test_spin_up_of_the_flexible_arm_follows_the_law_and_reports_the_hub_torque():
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    # the hub spins several turns: the URDF's ±π limit of the hub is off
    system = px.System(robot, components=[px.Prescribed("hub", spin_up)])  # limits: the law's
    traj = px.simulate(system, PERIOD, output_dt=0.05)
    law = np.array([spin_up(t) for t in traj.t])
    assert traj.t[-1] == pytest.approx(PERIOD)
    assert np.abs(traj.q[:, 0] - law[:, 0]).max() < 1e-12
    assert np.abs(traj.v[:, 0] - law[:, 1]).max() < 1e-12
    torque = traj.outputs["prescribed:hub.torque"][:, 0]
    reference = np.array(
        [
            hub_torque_by_reduction(system.model, q, v, law[i, 2], system.stiffness)
            for i, (q, v) in enumerate(zip(traj.q, traj.v, strict=True))
        ]
    )
    assert np.abs(torque).max() > 0.1
    assert np.abs(torque - reference).max() < 1e-8
    # and Pinocchio's rnea on the accelerations of the step
    data = system.model.createData()
    for i in range(0, len(traj), 37):
        a = system.step(traj.t[i], traj.x[i]).a
        rnea = pin.rnea(system.model, data, traj.q[i], traj.v[i], a)
        assert rnea[0] == pytest.approx(torque[i], abs=1e-8)
    # the driving torque's work is the input work: the audit closes
    assert traj.energy_balance().max_relative() < 1e-9


def test_laws_as_spline_tuple_or_positions_agree():
    robot = px.load_urdf(px.robot_path("planar3r"))
    times = np.linspace(0.0, 1.0, 6)
    spline = CubicSpline(times, np.sin(times), bc_type="clamped")
    forms = [
        px.Prescribed(robot.model.names[1], spline),
        px.Prescribed(robot.model.names[1], lambda t: (spline(t), spline(t, 1), spline(t, 2))),
        px.Prescribed(robot.model.names[1], spline.__call__),  # positions only: differences
    ]
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=robot.nq), rng.normal(size=robot.nv)
    steps = [px.System(robot, components=[c]).step(0.37, np.r_[q, v, 0, 0]) for c in forms]
    assert np.allclose(steps[0].a, steps[1].a, rtol=0, atol=1e-12)
    assert np.allclose(steps[0].a, steps[2].a, rtol=0, atol=1e-5)
    assert steps[0].a[0] == pytest.approx(spline(0.37, 2), abs=1e-12)


def test_bad_prescriptions_are_rejected():
    robot = px.load_urdf(px.robot_path("planar3r"))
    with pytest.raises(NameNotFound, match="Available joint names"):
        px.System(robot, components=[px.Prescribed("nope", np.sin)])
    with pytest.raises(InvalidParameter, match="must be callable"):
        px.Prescribed("joint1", 3.0)
    floating = px.free_body(robot, "load", 1.0, np.eye(3) * 1e-3)
    with pytest.raises(InvalidParameter, match="revolute, continuous or prismatic"):
        px.System(floating, components=[px.Prescribed("load_joint", np.sin)])


def test_a_continuous_crank_is_prescribed_as_the_revolute_one(tmp_path):
    """The four-bar of examples/four_bar.py with its crank a URDF ``continuous`` joint
    (Pinocchio's unbounded revolute, q = (cos θ, sin θ)) driven through one revolution in
    1 s: close_loops puts it on its law, the configuration is (cos θ, sin θ) of the law's
    angle, and the crank torque and the coupler and rocker angles equal those of the
    revolute crank of the example to 1e-8 (two runs of the same physics in other
    coordinates, each integrated to rtol 1e-10)."""
    import importlib.util
    import warnings

    path = ROOT / "examples" / "four_bar.py"
    spec = importlib.util.spec_from_file_location("four_bar", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    revolute, reference = example.crank_run(1.0, output_dt=0.05)
    text = example.URDF.read_text()
    crank = '<joint name="crank_joint" type="revolute">'
    assert crank in text
    urdf = tmp_path / "four_bar_continuous.urdf"  # no meshes: it loads from anywhere
    urdf.write_text(text.replace(crank, crank.replace("revolute", "continuous")))
    robot = px.load_urdf(urdf)
    assert robot.model.joints[1].nq == 2
    theta0 = reference.q[0, 0]
    law = example.revolution(1.0)

    def position(t: float) -> tuple[float, float, float]:
        angle, rate, acceleration = law(t)
        return theta0 + angle, rate, acceleration

    system = px.System(robot, components=[px.Prescribed("crank_joint", position, name="crank")])
    guess = np.r_[np.cos(theta0) + 0.1, np.sin(theta0), reference.q[0, 1:] + 0.1]
    x0 = px.close_loops(system, guess)
    q0 = system.split(x0)[0]
    assert np.abs(q0[:2] - [np.cos(theta0), np.sin(theta0)]).max() < 1e-15
    assert np.abs(q0[2:] - reference.q[0, 1:]).max() < 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", px.contact.RedundantConstraintWarning)
        traj = px.simulate(system, 1.0, x0=x0, output_dt=0.05)
    angle = np.arctan2(traj.q[:, 1], traj.q[:, 0])
    wrapped = np.angle(np.exp(1j * (angle - reference.q[:, 0])))
    assert np.abs(wrapped).max() < 1e-12
    assert np.abs(traj.q[:, 2:] - reference.q[:, 1:]).max() < 1e-8
    assert np.abs(traj.v - reference.v).max() < 1e-7
    torque, expected = traj.outputs["crank.torque"][:, 0], reference.outputs["crank.torque"][:, 0]
    assert np.abs(torque - expected).max() < 1e-8 * (1 + np.abs(expected).max())
    assert traj.energy_balance().max_relative() < 1e-9


@pytest.mark.parametrize(
    ("law", "options", "named"),
    [
        (lambda t: None, {}, "the position law's value"),
        (np.sin, {"velocity": lambda t: None}, "velocity(t)"),
    ],
)
def test_a_law_that_returns_none_is_named(law, options, named):
    """Before: a law returning None was read as NaN ("the law gave non-finite values (q, qd,
    qdd) = (nan, nan, nan)"); now the value is named as not a number, with what is valid."""
    robot = px.load_urdf(px.robot_path("planar3r"))
    system = px.System(robot, components=[px.Prescribed("joint1", law, **options)])
    with pytest.raises(
        InvalidParameter, match=rf"{re.escape(named)} must be one number .*got None"
    ):
        px.simulate(system, 0.01, progress=False)
