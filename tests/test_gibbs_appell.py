"""Gibbs function, Appell inverse dynamics, Christoffel symbols and Gauss's principle."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from pinext.dynamics import (
    AccelerationConstraint,
    PointContact,
    acceleration_energy,
    acceleration_energy_terms,
    appell_inverse_dynamics,
    christoffel_symbols,
    gauss_forward_dynamics,
    generalized_gravity,
    hamel_term,
    mass_matrix_derivative,
)
from pinext.dynamics.gibbs_appell import clear_cache
from pinext.exceptions import ConstraintError, InvalidParameter, NameNotFound
from pinext.robots import robot_path
from tests.models import humanoid, named, panda, rel, state

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- 2TR, eq. (40)
M1, M2, M3, A2, IZ, G = 10.0, 6.0, 4.0, 0.5, 0.2, 9.81


def test_twotr_matches_seed_004_eq_40():
    model = pin.buildModelFromUrdf(str(robot_path("twotr")))
    data = model.createData()
    rng = np.random.default_rng(40)
    for _ in range(20):
        q = rng.uniform(-1, 1, 3)
        q[2] = rng.uniform(-np.pi, np.pi)
        qd, qdd = 2 * rng.standard_normal(3), 2 * rng.standard_normal(3)
        s3, c3 = np.sin(q[2]), np.cos(q[2])
        ref = np.array(
            [
                (M1 + M2 + M3) * qdd[0] - M3 * A2 * s3 * qdd[2] - M3 * A2 * qd[2] ** 2 * c3,
                (M2 + M3) * (qdd[1] + G),
                M3 * A2**2 * qdd[2] - M3 * A2 * s3 * qdd[0] + IZ * qdd[2],
            ]
        )
        np.testing.assert_allclose(
            appell_inverse_dynamics(model, data, q, qd, qdd), ref, atol=1e-10
        )


# --------------------------------------------------------------------------- volume quadrature
def box_chain():
    """A chain of uniform boxes on every kind of joint: free flyer, spherical, revolute about a
    skew axis, prismatic, planar. Returns (model, boxes) with boxes[j] = (mass, size, centre)."""
    model = pin.Model()
    boxes = {}
    rng = np.random.default_rng(7)
    joints = [
        pin.JointModelFreeFlyer(),
        pin.JointModelSpherical(),
        pin.JointModelRevoluteUnaligned(
            np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
        ),
        pin.JointModelPY(),
        pin.JointModelRZ(),
        pin.JointModelPlanar(),
    ]
    parent = 0
    for k, jm in enumerate(joints):
        rot = pin.utils.rpyToMatrix(*rng.uniform(-1, 1, 3))
        placement = pin.SE3(rot, rng.uniform(-0.5, 0.5, 3)) if k else pin.SE3.Identity()
        j = model.addJoint(parent, jm, placement, f"j{k}")
        mass = rng.uniform(0.5, 3.0)
        size = rng.uniform(0.05, 0.6, 3)
        centre = rng.uniform(-0.3, 0.3, 3)
        model.appendBodyToJoint(
            j,
            pin.Inertia.FromBox(mass, *size).se3Action(pin.SE3(np.eye(3), centre)),
            pin.SE3.Identity(),
        )
        boxes[j] = (mass, size, centre)
        parent = j
    return model, boxes


def quadrature_gibbs(model, q, v, a, boxes) -> float:
    """½ ∫ |a_p|² dm by 3-point Gauss–Legendre per axis (exact: |a_p|² is quadratic in p)."""
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, a)
    x, w = np.polynomial.legendre.leggauss(3)
    s = 0.0
    for j, (mass, size, centre) in boxes.items():
        rho = mass / np.prod(size)
        vel, acc = data.v[j], data.a[j]  # local frame, at the joint origin
        for i0, w0 in zip(x, w, strict=True):
            for i1, w1 in zip(x, w, strict=True):
                for i2, w2 in zip(x, w, strict=True):
                    p = centre + 0.5 * size * np.array([i0, i1, i2])
                    vp = vel.linear + np.cross(vel.angular, p)
                    ap = acc.linear + np.cross(acc.angular, p) + np.cross(vel.angular, vp)
                    dv = np.prod(size) / 8.0 * w0 * w1 * w2
                    s += 0.5 * rho * dv * ap @ ap
    return s


def test_acceleration_energy_equals_volume_quadrature():
    model, boxes = box_chain()
    data = model.createData()
    rng = np.random.default_rng(1)
    for _ in range(3):
        pin.seed(int(rng.integers(2**31)))
        q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
        v, a = 2 * rng.standard_normal(model.nv), 2 * rng.standard_normal(model.nv)
        ref = quadrature_gibbs(model, q, v, a, boxes)
        assert acceleration_energy(model, data, q, v, a) == pytest.approx(ref, rel=1e-10)
        # with a = 0 the complete Gibbs function keeps its acceleration-free part
        ref0 = quadrature_gibbs(model, q, v, np.zeros(model.nv), boxes)
        assert acceleration_energy_terms(model, data, q, v).s0 == pytest.approx(ref0, rel=1e-10)


def test_terms_are_consistent_with_energy():
    model, _ = box_chain()
    data = model.createData()
    rng = np.random.default_rng(2)
    pin.seed(2)
    q = pin.randomConfiguration(model, -np.ones(model.nq), np.ones(model.nq))
    v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    terms = acceleration_energy_terms(model, data, q, v)
    s = acceleration_energy(model, data, q, v, a)
    assert terms.value(a) == pytest.approx(s, rel=1e-12)
    h = 1e-5  # S is quadratic in a: central differences are exact up to rounding
    grad = [
        (
            acceleration_energy(model, data, q, v, a + h * e)
            - acceleration_energy(model, data, q, v, a - h * e)
        )
        / (2 * h)
        for e in np.eye(model.nv)
    ]
    np.testing.assert_allclose(grad, terms.gradient(a), atol=1e-6 * (1 + np.max(np.abs(grad))))


# --------------------------------------------------------------------------- vs Pinocchio
def _check_against_pinocchio(model, n=3, seed=3):
    data, ref = model.createData(), model.createData()
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q, v, a = state(model, rng)
        tau = pin.rnea(model, ref, q, v, a)
        g = pin.computeGeneralizedGravity(model, ref, q)
        terms = acceleration_energy_terms(model, data, q, v)
        assert rel(terms.gradient(a), tau - g) < 1e-10  # ∂S/∂a = rnea − g
        assert rel(appell_inverse_dynamics(model, data, q, v, a), tau) < 1e-10
        assert rel(terms.mass_matrix, pin.crba(model, ref, q)) < 1e-10  # ∂²S/∂a² = crba
        assert rel(generalized_gravity(model, data, q), g) < 1e-10
        fext = [pin.Force(rng.standard_normal(6)) for _ in range(model.njoints)]
        assert (
            rel(
                appell_inverse_dynamics(model, data, q, v, a, fext),
                pin.rnea(model, ref, q, v, a, fext),
            )
            < 1e-10
        )
        t = rng.standard_normal(model.nv)
        res = gauss_forward_dynamics(model, data, q, v, t)
        assert rel(res.a, pin.aba(model, ref, q, v, t)) < 1e-8


def test_humanoid_free_flyer_against_pinocchio():
    _check_against_pinocchio(humanoid())


def test_panda_against_pinocchio(robots_dir):
    _check_against_pinocchio(panda(robots_dir))


def test_armature_enters_like_pinocchio():
    model = pin.buildSampleModelManipulator()
    rng = np.random.default_rng(4)
    data, ref = model.createData(), model.createData()
    q, v, a = state(model, rng)
    appell_inverse_dynamics(model, data, q, v, a)  # cache the model's constants first
    model.armature = rng.uniform(0.1, 1.0, model.nv)  # read on every call: no clear_cache
    assert rel(appell_inverse_dynamics(model, data, q, v, a), pin.rnea(model, ref, q, v, a)) < 1e-10
    base = acceleration_energy_terms(model, data, q, v).mass_matrix
    assert rel(base, pin.crba(model, ref, q)) < 1e-10
    model.inertias[2] = pin.Inertia.Random()  # inertias are cached: clear_cache after a change
    clear_cache()
    assert rel(appell_inverse_dynamics(model, data, q, v, a), pin.rnea(model, ref, q, v, a)) < 1e-10


def _single_joint_model() -> pin.Model:
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Random(), "hinge")
    model.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    return model


def test_single_dof_and_massless_models_against_pinocchio():
    """nv = 1 (Pinocchio hands out 6-vectors) and zero total mass (no static regressor)."""
    pin.seed(11)
    massless = pin.buildSampleModelManipulator()
    for j in range(1, massless.njoints):
        massless.inertias[j] = pin.Inertia.Zero()
    massless.armature = np.linspace(0.1, 0.6, massless.nv)
    for model in (_single_joint_model(), massless):
        data, ref = model.createData(), model.createData()
        rng = np.random.default_rng(5)
        q, v, a = state(model, rng)
        tau = pin.rnea(model, ref, q, v, a)
        assert rel(appell_inverse_dynamics(model, data, q, v, a), tau) < 1e-12
        terms = acceleration_energy_terms(model, data, q, v)
        assert rel(terms.mass_matrix, pin.crba(model, ref, q)) < 1e-12
        assert rel(terms.gravity, pin.computeGeneralizedGravity(model, ref, q)) < 1e-12
    # massless: S is the rotor term alone, ½ Σ I_a a²
    data = massless.createData()
    q, v, a = state(massless, np.random.default_rng(6))
    assert acceleration_energy(massless, data, q, v, a) == pytest.approx(
        0.5 * massless.armature @ (a * a), rel=1e-14
    )


def _constraint_dynamics(model, q, v, tau, contacts):
    rcm = pin.StdVec_RigidConstraintModel()
    for c in contacts:
        rcm.append(c.rigid_constraint_model(model))
    rcd = pin.StdVec_RigidConstraintData()
    for c in rcm:
        rcd.append(c.createData())
    data = model.createData()
    pin.initConstraintDynamics(model, data, rcm, rcd)
    ddq = pin.constraintDynamics(
        model, data, q, v, tau, rcm, rcd, pin.ProximalSettings(1e-14, 1e-12, 1)
    )
    return ddq, data.lambda_c.copy()


@pytest.mark.parametrize("kind", ["3D", "6D"])
def test_gauss_equals_constraint_dynamics_humanoid(kind):
    model = humanoid()
    data = model.createData()
    rng = np.random.default_rng(5)
    q, v, _ = state(model, rng)
    tau = rng.standard_normal(model.nv)
    contacts = [
        PointContact(model, "rleg_effector_body", kind),
        PointContact(
            model, "lleg_effector_body", kind, pin.SE3(np.eye(3), np.array([0.05, 0.02, -0.1]))
        ),
    ]
    res = gauss_forward_dynamics(model, data, q, v, tau, constraints=contacts)
    ddq, lam = _constraint_dynamics(model, q, v, tau, contacts)
    assert np.max(np.abs(res.a - ddq)) < 1e-8
    assert np.max(np.abs(res.multipliers - lam)) < 1e-8 * (1 + np.max(np.abs(lam)))
    assert res.constraint_residual() < 1e-10


@pytest.mark.parametrize("kind", ["3D", "6D"])
def test_gauss_equals_constraint_dynamics_panda(robots_dir, kind):
    model = panda(robots_dir)
    data = model.createData()
    rng = np.random.default_rng(6)
    q, v, _ = state(model, rng)
    tau = rng.standard_normal(model.nv)
    contacts = [PointContact(model, "panda_hand", kind)]
    res = gauss_forward_dynamics(model, data, q, v, tau, constraints=contacts)
    ddq, _ = _constraint_dynamics(model, q, v, tau, contacts)
    assert np.max(np.abs(res.a - ddq)) < 1e-8


def test_gauss_minimises_appell_function():
    """Any feasible perturbation of the Gauss solution increases Z = S − (τ − g)ᵀa."""
    model = pin.buildSampleModelManipulator()
    data = model.createData()
    rng = np.random.default_rng(8)
    q, v, _ = state(model, rng)
    tau = rng.standard_normal(model.nv)
    con = AccelerationConstraint(rng.standard_normal((2, model.nv)), rng.standard_normal(2))
    res = gauss_forward_dynamics(model, data, q, v, tau, constraints=[con])
    g = pin.computeGeneralizedGravity(model, model.createData(), q)
    null = np.linalg.svd(con.matrix)[2][2:].T
    for _ in range(5):
        a = res.a + null @ rng.standard_normal(null.shape[1]) * 1e-2
        z = acceleration_energy(model, data, q, v, a) - (tau - g) @ a
        assert z > res.appell
    assert acceleration_energy(model, data, q, v, res.a) - (tau - g) @ res.a == pytest.approx(
        res.appell, rel=1e-12
    )


def test_inconsistent_constraints_raise():
    model = pin.buildSampleModelManipulator()
    data = model.createData()
    row = np.ones((1, model.nv))
    cons = [AccelerationConstraint(row, [1.0]), AccelerationConstraint(row, [2.0])]
    q = pin.neutral(model)
    with pytest.raises(ConstraintError):
        gauss_forward_dynamics(
            model, data, q, np.zeros(model.nv), np.zeros(model.nv), constraints=cons
        )
    # redundant but consistent constraints are fine
    cons = [AccelerationConstraint(row, [1.0]), AccelerationConstraint(2 * row, [2.0])]
    res = gauss_forward_dynamics(
        model, data, q, np.zeros(model.nv), np.zeros(model.nv), constraints=cons
    )
    assert res.constraint_residual() < 1e-10


def test_errors_name_what_exists():
    model = pin.buildSampleModelManipulator()
    with pytest.raises(NameNotFound, match="effector_body"):
        PointContact(model, "no_such_frame")
    with pytest.raises(InvalidParameter):
        PointContact(model, "effector_body", "2D")
    with pytest.raises(InvalidParameter):
        acceleration_energy(
            model, model.createData(), pin.neutral(model), np.zeros(model.nv), np.zeros(2)
        )


# --------------------------------------------------------------------------- Christoffel
@pytest.mark.parametrize("which", ["twotr", "manipulator", "ur5"])
def test_christoffel_gives_coriolis_and_skew_symmetry(which, request):
    model = named(which, request)
    data = model.createData()
    rng = np.random.default_rng(9)
    q, v, _ = state(model, rng)
    gam = christoffel_symbols(model, data, q)
    c = pin.computeCoriolisMatrix(model, model.createData(), q, v)
    assert rel(np.einsum("ijk,j,k->i", gam, v, v), c @ v) < 1e-10
    # C_ij = Σ_k Γ_ijk v_k is a valid Coriolis matrix and Ṁ − 2C is skew-symmetric
    c_gamma = gam @ v
    mdot = mass_matrix_derivative(model, data, q) @ v
    for cm in (c, c_gamma):
        skew = mdot - 2 * cm
        assert np.max(np.abs(skew + skew.T)) < 1e-10 * (1 + np.max(np.abs(mdot)))
    # Ṁ from the exact derivative against a central difference of crba along v
    h = 1e-6
    d = model.createData()
    fd = (
        pin.crba(model, d, pin.integrate(model, q, h * v))
        - pin.crba(model, d, pin.integrate(model, q, -h * v))
    ) / (2 * h)
    assert np.max(np.abs(fd - mdot)) < 1e-6 * (1 + np.max(np.abs(mdot)))


def test_christoffel_free_flyer_with_hamel_term():
    model = humanoid()
    data = model.createData()
    rng = np.random.default_rng(10)
    q, v, _ = state(model, rng)
    gam = christoffel_symbols(model, data, q)
    c = pin.computeCoriolisMatrix(model, model.createData(), q, v)
    p = pin.crba(model, model.createData(), q) @ v
    assert rel(np.einsum("ijk,j,k->i", gam, v, v) - hamel_term(model, q, v, p), c @ v) < 1e-10


# --------------------------------------------------------------------------- nonholonomic
def _load_example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_chaplygin_sleigh_keeps_constraint_and_energy():
    sleigh = _load_example("chaplygin_sleigh")
    t, q, v, energy, residual = sleigh.simulate_sleigh(2.0, n_out=101)
    assert np.max(np.abs(residual)) < 1e-10
    assert np.max(np.abs(energy - energy[0])) < 1e-9 * energy[0]
    # the nonholonomic constraint is not integrable: the sleigh turned and translated
    assert abs(q[-1, 2]) > 0.1 and np.hypot(q[-1, 0], q[-1, 1]) > 0.1
    # and Gauss's multiplier is the lateral force the blade must supply: m * (lateral accel)
    model = sleigh.build_sleigh_model()
    res = gauss_forward_dynamics(
        model, model.createData(), q[50], v[50], np.zeros(3), constraints=[sleigh.knife_edge()]
    )
    assert res.constraint_residual() < 1e-12


def test_first_kernel_call_announces_compilation_once(capsys):
    """A slow first call prints one line; the kernel is then called directly (no wrapper)."""
    import threading
    import types

    from pinext.dynamics import gibbs_appell as ga
    from pinext.dynamics.first_call import FirstCallNotice

    announced = threading.Event()

    def slow_kernel(x):  # stands for a kernel that numba is compiling
        assert announced.wait(timeout=60)  # returns once the notice has fired
        return 2 * x

    kernels = FirstCallNotice(types.SimpleNamespace(slow_kernel=slow_kernel), ga._k._message, 0.0)
    real_notice = kernels._notice

    def notice():
        real_notice()
        announced.set()

    kernels._notice = notice  # type: ignore[method-assign]
    assert kernels.slow_kernel(3) == 6
    assert kernels.slow_kernel is slow_kernel  # later calls go straight to the kernel
    assert kernels.slow_kernel(4) == 8
    err = capsys.readouterr().err
    assert err.count("compiling Gibbs-Appell kernels (first call, cached afterwards)") == 1
