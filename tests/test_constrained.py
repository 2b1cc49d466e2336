"""Constrained motion (20.88)–(20.89) against pin.constraintDynamics and KKT solves."""

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import (
    Contact,
    FunctionalCoordinates,
    RedundantConstraintWarning,
    consistent_initial_state,
    constrained_dynamics,
    peg_in_hole,
    plane,
    plastic_impact,
    point_contact,
    project_consistent,
)
from pinext.contact.constrained import InconsistentInitialConditionsWarning
from pinext.exceptions import ConstraintError

from ._contact_models import arm, kkt, mass_matrix


def _pin_constraint_dynamics(model, q, v, tau, contact_type, placement, reference):
    data = model.createData()
    fid = model.getFrameId("pen_tip")
    frame = model.frames[fid]
    cm = pin.RigidConstraintModel(
        contact_type, model, frame.parentJoint, frame.placement, 0, placement, reference
    )
    models = pin.StdVec_RigidConstraintModel()
    models.append(cm)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)  # mu = 0: the exact KKT solution
    a = pin.constraintDynamics(model, data, q, v, tau, models, datas, settings)
    return a, datas[0].contact_force.vector.copy()


def test_3d_point_constraint_equals_pin_constraint_dynamics():
    model = arm()
    rng = np.random.default_rng(10)
    for _ in range(3):
        q, v, tau = rng.uniform(-1, 1, 6), rng.normal(size=6), rng.normal(size=6) * 5
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        anchor = data.oMf[model.getFrameId("pen_tip")].copy()
        a_ref, f_ref = _pin_constraint_dynamics(
            model, q, v, tau, pin.ContactType.CONTACT_3D, anchor, pin.LOCAL_WORLD_ALIGNED
        )
        c = point_contact("pen_tip", pin.SE3(np.eye(3), anchor.translation), dim=3)
        res = constrained_dynamics(model, model.createData(), q, v, tau, c)
        np.testing.assert_allclose(res.acceleration, a_ref, atol=1e-8)
        np.testing.assert_allclose(res.force, f_ref[:3], atol=1e-8)


def test_6d_point_constraint_equals_pin_constraint_dynamics():
    model = arm()
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, tau = rng.uniform(-1, 1, 6), rng.normal(size=6) * 5
        v = np.zeros(6)  # a welded frame is at rest (the consistent velocity of a 6D contact)
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        anchor = data.oMf[model.getFrameId("pen_tip")].copy()
        a_ref, f_ref = _pin_constraint_dynamics(
            model, q, v, tau, pin.ContactType.CONTACT_6D, anchor, pin.LOCAL
        )
        c = point_contact("pen_tip", anchor, dim=6)  # object frame = the contact frame
        res = constrained_dynamics(model, model.createData(), q, v, tau, c)
        np.testing.assert_allclose(res.acceleration, a_ref, atol=1e-8)
        np.testing.assert_allclose(res.force, f_ref, atol=1e-8)


def _kkt_reference(model, q, v, tau, constraint):
    data = model.createData()
    M = mass_matrix(model, data, q)
    h = pin.nonLinearEffects(model, data, q, v)
    kin = constraint.kinematics(model, data, q, v)
    return kkt(M, h, tau, kin.jacobian, kin.drift)


@pytest.mark.parametrize("kind", ["plane", "peg"])
def test_plane_and_peg_in_hole_match_a_kkt_solve(kind):
    model = arm()
    rng = np.random.default_rng(12)
    if kind == "plane":
        c = plane("pen_tip", (0.0, 0.0, 0.3), (0.0, 0.3, 1.0))
        assert c.m == 1
    else:
        hole = pin.SE3(pin.rpy.rpyToMatrix(np.pi, 0, 0), np.array([0.5, 0, 0.3]))
        c = peg_in_hole("pen_tip", hole)
        assert c.m == 4
    q, v, tau = rng.uniform(-1, 1, 6), rng.normal(size=6), rng.normal(size=6)
    a_ref, f_ref = _kkt_reference(model, q, v, tau, c)
    res = constrained_dynamics(model, model.createData(), q, v, tau, c)
    np.testing.assert_allclose(res.acceleration, a_ref, atol=1e-9)
    np.testing.assert_allclose(res.force, f_ref, atol=1e-9)
    assert res.force.shape == (c.m,)


def test_rank_deficient_constraints_least_squares_with_warning():
    model = arm()
    rng = np.random.default_rng(13)
    q, v, tau = rng.uniform(-1, 1, 6), rng.normal(size=6), rng.normal(size=6)
    c = plane("pen_tip", (0, 0, 0.3))
    twice = [c, plane("pen_tip", (0, 0, 0.3))]  # the same constraint twice: J_c has rank 1
    with pytest.warns(RedundantConstraintWarning):
        res = constrained_dynamics(model, model.createData(), q, v, tau, twice)
    single = constrained_dynamics(model, model.createData(), q, v, tau, c)
    np.testing.assert_allclose(res.acceleration, single.acceleration, atol=1e-9)
    np.testing.assert_allclose(res.force.sum(), single.force[0], atol=1e-9)  # minimum norm split
    np.testing.assert_allclose(res.force[0], res.force[1], atol=1e-9)


def test_projection_gives_consistent_initial_conditions():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(14)
    anchor = pin.SE3(np.eye(3), np.array([0.4, 0.1, 0.5]))
    c = FunctionalCoordinates("pen_tip", anchor, ("x", "y", "z"))
    q, v = project_consistent(model, data, rng.uniform(-1, 1, 6), rng.normal(size=6), c)
    kin = c.kinematics(model, data, q, v)
    assert np.abs(kin.residual).max() < 1e-12
    assert np.abs(kin.rate(v)).max() < 1e-12


def test_unreachable_surface_cannot_be_projected():
    model = arm()
    c = plane("pen_tip", (0, 0, 5.0))  # 5 m above the base: out of reach
    with pytest.raises(ConstraintError):
        project_consistent(model, model.createData(), np.zeros(6), np.zeros(6), c, max_iter=20)


def _arm_on_table():
    model = arm()
    robot = px.Robot.from_model(model)
    system = px.System(robot, contacts=[Contact(plane("pen_tip", (0, 0, 0.3)), unilateral=False)])
    q = np.array([0.3, 0.7, 1.2, 0.2, 0.9, 0.1])
    return model, system, q


def test_inconsistent_initial_state_is_rejected_or_projected_with_warning():
    model, system, q = _arm_on_table()
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    # below the table: simulate rejects it
    q_bad = q.copy()
    contact = next(c for c in system.components if c.name == "contact")
    c = contact.contacts[0].constraint
    while c.gap(model, data, q_bad) > -1e-3:
        q_bad[1] += 0.01
    with pytest.raises(ConstraintError, match="consistent_initial_state"):
        px.simulate(system, 0.01, q0=q_bad)
    with pytest.warns(InconsistentInitialConditionsWarning):
        x0 = consistent_initial_state(system, q_bad, np.ones(6))
    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentInitialConditionsWarning)
        traj = px.simulate(system, 0.01, x0=x0)
    assert traj.phases[0].name == "constrained"


def test_constraint_drift_below_1e_8_over_5_s():
    model, system, q = _arm_on_table()
    with pytest.warns(InconsistentInitialConditionsWarning):
        x0 = consistent_initial_state(system, q, np.zeros(6))
    # gravity pulls the unactuated arm along the table for 5 s (bilateral plane); on the way
    # joints hit their ±π limits (impacts and lift-offs) while the tip stays on the table
    traj = px.simulate(system, 5.0, x0=x0)
    assert all(p.name.startswith("constrained") for p in traj.phases)
    assert np.abs(traj.outputs["contact.residual"]).max() < 1e-8
    assert traj.energy_balance().max_relative() < 1e-6


def test_one_constraint_vocabulary_for_gauss_constrained_dynamics_and_impact():
    """A contact-task constraint is accepted by Gauss's principle, constrained_dynamics and
    plastic_impact alike, with the same accelerations and forces (result fields named alike)."""
    from pinext import gauss_forward_dynamics

    model = arm()
    data = model.createData()
    rng = np.random.default_rng(11)
    q = pin.randomConfiguration(model)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    surface = plane("pen_tip", (0.0, 0.0, 0.3), (0.0, 0.3, 1.0))
    gauss = gauss_forward_dynamics(model, data, q, v, tau, constraints=[surface])
    kkt = constrained_dynamics(model, model.createData(), q, v, tau, surface)
    assert np.allclose(gauss.acceleration, kkt.acceleration, rtol=0, atol=1e-9)
    assert np.allclose(gauss.force, kkt.force, rtol=0, atol=1e-9 * (1 + np.abs(kkt.force).max()))
    by_constraint = plastic_impact(model, model.createData(), q, v, surface)
    by_jacobian = plastic_impact(model, model.createData(), q, v, kkt.kinematics.jacobian)
    assert np.allclose(by_constraint.v_plus, by_jacobian.v_plus, rtol=0, atol=1e-14)
