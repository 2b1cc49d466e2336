"""Functional coordinates s(q) (20.83)–(20.86): Jacobians and drifts against finite differences."""

import numpy as np
import pinocchio as pin
import pytest

from pinext.contact import (
    FunctionalCoordinates,
    ImplicitSurface,
    peg_in_hole,
    plane,
    point_contact,
)
from pinext.exceptions import InvalidParameter, NameNotFound

from ._contact_models import arm


def _fd_rates(constraint, model, q, v, t=0.0, eps=1e-5):
    """(ṡ^c, s̈^c) along the motion q(τ) with constant velocity v, by central differences."""
    data = model.createData()

    def s(tau):
        qq = pin.integrate(model, q, v * tau)
        pin.computeAllTerms(model, data, qq, v)
        return constraint.evaluate(model, data, t + tau).residual

    return (s(eps) - s(-eps)) / (2 * eps), (s(eps) - 2 * s(0.0) + s(-eps)) / eps**2


def _on_manifold_config(constraint, model, rng):
    """A configuration with s^c = 0 (the residual's derivative is exact there)."""
    from pinext.contact import project_consistent

    data = model.createData()
    q = rng.uniform(-1.0, 1.0, model.nq)
    q, _ = project_consistent(model, data, q, np.zeros(model.nv), constraint)
    return q


def test_plane_jacobian_and_drift_match_finite_differences():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(1)
    c = plane("pen_tip", (0.1, 0.2, 0.3), (0.2, -0.1, 1.0))
    q = rng.uniform(-1, 1, 6)
    v = rng.normal(size=6)
    kin = c.kinematics(model, data, q, v)
    # along q(t) = integrate(q, v t) the acceleration is 0, so s̈ = A
    rate, acc = _fd_rates(c, model, q, v)
    np.testing.assert_allclose(kin.rate(v), rate, atol=1e-8)
    np.testing.assert_allclose(kin.drift, acc, atol=1e-4)


def test_peg_in_hole_m4_rates_on_the_manifold():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(2)
    hole = pin.SE3(pin.rpy.rpyToMatrix(np.pi, 0.0, 0.3), np.array([0.5, 0.0, 0.3]))
    c = peg_in_hole("pen_tip", hole)
    assert c.m == 4 and c.names == ("x", "y", "roll", "pitch")
    q = _on_manifold_config(c, model, rng)
    # on the velocity manifold (J_c v = 0): the rotational rows are the angular velocity in O,
    # whose derivative equals the residual's second derivative only there
    J = c.kinematics(model, data, q).jacobian
    v = np.linalg.svd(J)[2][4:].T @ rng.normal(size=2)
    kin = c.kinematics(model, data, q, v)
    assert np.abs(kin.residual).max() < 1e-12
    assert np.abs(kin.rate(v)).max() < 1e-12
    rate, acc = _fd_rates(c, model, q, v)
    np.testing.assert_allclose(kin.rate(v), rate, atol=1e-8)
    np.testing.assert_allclose(kin.drift, acc, atol=1e-4)


def test_coordinates_of_a_known_pose_and_split():
    model = arm()
    data = model.createData()
    q = np.zeros(6)  # upright arm: pen tip at (0, 0, 1.39), pen along +z
    anchor = pin.SE3(np.eye(3), np.array([0.0, 0.0, 1.0]))
    c = FunctionalCoordinates("pen_tip", anchor, ("z", "yaw"))
    s = c.coordinates(model, data, q)
    np.testing.assert_allclose(s, [0, 0, 0.39, 0, 0, 0], atol=1e-12)
    free, constrained = c.split(s)
    np.testing.assert_allclose(constrained, [0.39, 0.0], atol=1e-12)
    assert free.shape == (4,)


def test_moving_object_frame_adds_the_time_derivative():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(3)
    w = np.array([0.0, 0.0, 0.7])
    vel = np.array([0.1, -0.2, 0.05])

    def law(t):
        R = pin.exp3(w * t)
        return pin.SE3(R, vel * t), np.concatenate([vel, w]), np.zeros(6)

    c = FunctionalCoordinates("pen_tip", law, ("x", "y", "z"))
    q = rng.uniform(-1, 1, 6)
    v = rng.normal(size=6)
    t = 0.4
    kin = c.kinematics(model, data, q, v, t)
    rate, acc = _fd_rates(c, model, q, v, t=t)
    np.testing.assert_allclose(kin.rate(v), rate, atol=1e-8)
    np.testing.assert_allclose(kin.drift, acc, atol=1e-4)


def test_implicit_sphere_matches_finite_differences():
    model = arm()
    data = model.createData()
    rng = np.random.default_rng(4)
    centre = np.array([0.3, 0.1, 0.5])
    surface = ImplicitSurface(
        "pen_tip",
        lambda p: float(np.linalg.norm(p - centre) - 0.4),
        lambda p: (p - centre) / np.linalg.norm(p - centre),
    )
    q = rng.uniform(-1, 1, 6)
    v = rng.normal(size=6)
    kin = surface.kinematics(model, data, q, v)
    rate, acc = _fd_rates(surface, model, q, v)
    np.testing.assert_allclose(kin.rate(v), rate, atol=1e-8)
    np.testing.assert_allclose(kin.drift, acc, atol=1e-4)


def test_unknown_frame_lists_the_frames():
    model = arm()
    c = plane("no_such_frame")
    with pytest.raises(NameNotFound) as err:
        c.kinematics(model, model.createData(), np.zeros(6))
    assert "pen_tip" in str(err.value) and "no_such_frame" in str(err.value)


def test_bad_coordinate_names_are_rejected():
    with pytest.raises(InvalidParameter, match="roll"):
        FunctionalCoordinates("tool", None, ("z", "spin"))
    with pytest.raises(InvalidParameter):
        point_contact("tool", dim=4)
