"""Lynch & Park's constrained dynamics (P, λ, F_tip) against pin.constraintDynamics,
px.constrained_dynamics and px.constrained_inverse_dynamics, for Pfaffian tip constraints."""

import functools

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, point_contact
from pinext.exceptions import ConstraintError, InvalidParameter

from .models import random_pose

#: Acceptance: P, λ and F_tip equal pin.constraintDynamics to this (relative).
TOL = 1e-9


@functools.cache
def panda_model():
    try:
        model = px.load_robot("panda").model
    except px.exceptions.RobotNotFound:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")
    fingers = [model.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    return pin.buildReducedModel(model, fingers, pin.neutral(model))


def pin_constraint_dynamics(model, q, v, tau, frame, contact_type, reference):
    """Pinocchio's constraintDynamics (μ = 0: the exact KKT solution) for a frame held at its
    current placement: (q̈, force on the robot)."""
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    fid = model.getFrameId(frame)
    f = model.frames[fid]
    cm = pin.RigidConstraintModel(
        contact_type, model, f.parentJoint, f.placement, 0, data.oMf[fid], reference
    )
    models = pin.StdVec_RigidConstraintModel()
    models.append(cm)
    datas = pin.StdVec_RigidConstraintData()
    datas.append(cm.createData())
    pin.initConstraintDynamics(model, data, models, datas)
    settings = pin.ProximalSettings(1e-14, 0.0, 1)
    a = pin.constraintDynamics(model, data, q, v, tau, models, datas, settings)
    return np.array(a), datas[0].contact_force.vector.copy()


def held(model, frame, q, dim):
    """A System whose tip frame is held at its placement at q (3D point or 6D weld), no
    joint limits (their rows would join A at a random pose)."""
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    anchor = data.oMf[model.getFrameId(frame)].copy()
    placement = pin.SE3(np.eye(3), anchor.translation) if dim == 3 else anchor
    contact = Contact(point_contact(frame, placement, dim=dim), name="tip")
    return px.System(model, contacts=[contact], joint_limits=False, environment=False)


def consistent_velocity(model, frame, q, dim, rng):
    """A velocity in the null space of the constraint rows (A v = 0)."""
    ref = pin.LOCAL_WORLD_ALIGNED if dim == 3 else pin.LOCAL
    jac = pin.computeFrameJacobian(model, model.createData(), q, model.getFrameId(frame), ref)
    rows = jac[:3] if dim == 3 else jac
    _, s, vt = np.linalg.svd(rows)
    null = vt[int(np.sum(s > 1e-12)) :].T
    return null @ rng.standard_normal(null.shape[1]) if null.shape[1] else np.zeros(model.nv)


def mass_matrix(model, q):
    M = pin.crba(model, model.createData(), q)
    return np.triu(M) + np.triu(M, 1).T


def rel(x, ref):
    return float(np.max(np.abs(x - ref)) / max(np.max(np.abs(ref)), 1e-300))


CASES = {
    # (model, frame, dim, Pinocchio's contact type and the reference of its force)
    "six_dof_arm-3d": (
        lambda: px.load_robot("six_dof_arm").model,
        "pen_tip",
        3,
        pin.ContactType.CONTACT_3D,
        pin.LOCAL_WORLD_ALIGNED,
    ),
    "panda-3d": (
        panda_model,
        "panda_hand_tcp",
        3,
        pin.ContactType.CONTACT_3D,
        pin.LOCAL_WORLD_ALIGNED,
    ),
    "panda-6d": (panda_model, "panda_hand_tcp", 6, pin.ContactType.CONTACT_6D, pin.LOCAL),
}


@pytest.mark.parametrize("case", list(CASES))
def test_multipliers_acceleration_and_tip_wrench_equal_pin_constraint_dynamics(case):
    make, frame, dim, kind, pin_ref = CASES[case]
    model = make()
    rng = np.random.default_rng(20)
    for _ in range(4):
        q = random_pose(model, rng)
        v = consistent_velocity(model, frame, q, dim, rng)
        tau = rng.standard_normal(model.nv) * 10.0
        system = held(model, frame, q, dim)
        reference = "world" if pin_ref == pin.LOCAL_WORLD_ALIGNED else "local"
        rec = px.constraint_projection(system, q, v, tau, frame=frame, reference=reference)
        # the System adds the URDF's joint damping (the Panda's 0.003 N.m.s/rad) to τ
        total = tau - np.asarray(model.damping) * v
        np.testing.assert_allclose(rec.force, total, rtol=0, atol=1e-15)
        a_ref, f_ref = pin_constraint_dynamics(model, q, v, total, frame, kind, pin_ref)
        # λ of Lynch & Park is the force the robot applies: minus Pinocchio's, on the robot
        assert rel(rec.multipliers, -f_ref[:dim]) < TOL
        assert rel(rec.acceleration, a_ref) < TOL
        tip = np.zeros(6)
        tip[:dim] = -f_ref[:dim]
        assert rel(rec.tip_wrench, tip) < TOL
        # P against its formula from independent pieces (crba, the frame Jacobian)
        M = mass_matrix(model, q)
        ref = pin.LOCAL_WORLD_ALIGNED if dim == 3 else pin.LOCAL
        A = pin.computeFrameJacobian(model, model.createData(), q, model.getFrameId(frame), ref)[
            :dim
        ]
        minv_at = np.linalg.solve(M, A.T)
        P = np.eye(model.nv) - A.T @ np.linalg.solve(A @ minv_at, minv_at.T)
        assert rel(rec.projection, P) < TOL
        # P τ = P (M θ̈ + h) with Pinocchio's θ̈, and P Aᵀ = 0, P² = P, rank n − k
        h = pin.rnea(model, model.createData(), q, v, np.zeros(model.nv))
        assert rel(rec.projection @ total, rec.projection @ (M @ a_ref + h)) < TOL
        assert rel(rec.projected_torque(a_ref), rec.projection @ total) < TOL
        assert np.abs(rec.projection @ A.T).max() < TOL * np.abs(A).max() * np.abs(P).max()
        assert rel(rec.projection @ rec.projection, rec.projection) < TOL
        assert np.linalg.matrix_rank(rec.projection, tol=1e-8) == model.nv - dim


def test_against_constrained_dynamics_and_constrained_inverse_dynamics():
    """The same tip constraint through pinext's two other routes: constrained_dynamics
    (Vukobratović & Potkonjak (20.88)–(20.89)) and constrained_inverse_dynamics (McClamroch
    (1986) §5), whose multipliers act on the robot (−λ)."""
    model = px.load_robot("six_dof_arm").model
    rng = np.random.default_rng(21)
    for _ in range(4):
        q = random_pose(model, rng)
        v = consistent_velocity(model, "pen_tip", q, 3, rng)
        tau = rng.standard_normal(6) * 10.0
        system = held(model, "pen_tip", q, 3)
        rec = px.constraint_projection(system, q, v, tau)
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)
        anchor = data.oMf[model.getFrameId("pen_tip")].translation
        c = point_contact("pen_tip", pin.SE3(np.eye(3), anchor), dim=3)
        ref = px.constrained_dynamics(model, model.createData(), q, v, tau, c)
        assert rel(rec.acceleration, ref.acceleration) < TOL
        assert rel(rec.multipliers, -ref.force) < TOL
        # constrained inverse dynamics: with its own multipliers it returns τ; with any other
        # multipliers its torque differs by Aᵀ(...) and P makes them equal
        back = px.constrained_inverse_dynamics(
            system, q, v, rec.acceleration, forces=-rec.multipliers
        )
        assert rel(back.tau, tau) < TOL
        other = px.constrained_inverse_dynamics(
            system, q, v, rec.acceleration, forces=rng.standard_normal(3) * 50.0
        )
        assert rel(rec.projection @ other.tau, rec.projection @ tau) < TOL
        assert rel(rec.projected_torque(rec.acceleration), rec.projection @ tau) < TOL


@pytest.mark.filterwarnings("ignore::pinext.contact.RedundantConstraintWarning")
def test_loop_rows_and_errors():
    """The rows come from the System whatever owns them (here the hinge loop of the planar
    four-bar: 5 rows of rank 2, minimum-norm multipliers as pinext.reduce); no
    rows, a dynamic environment's rows and a bad reference are errors."""
    from pathlib import Path

    four_bar = Path(__file__).resolve().parents[1] / "examples" / "four_bar.urdf"
    system = px.System(px.load_urdf(four_bar), joint_limits=False)
    rng = np.random.default_rng(22)
    x = px.close_loops(system, np.array([0.0, 1.5, 1.5]), rng.normal(size=system.model.nv))
    q, v = system.split(x)
    form = px.singular_form(system, q, v)
    rec = px.constraint_projection(system, q, v)
    np.testing.assert_array_equal(rec.constraint_jacobian, form.jacobian)
    red = px.reduce(system, q, v)
    assert rel(rec.acceleration, red.acceleration) < TOL
    assert rel(rec.multipliers, -red.multipliers) < TOL
    # redundant rows: P is still the projector of rank nv − rank(A) with P Aᵀ = 0
    assert np.linalg.matrix_rank(rec.projection, tol=1e-8) == 3 - 2
    assert np.abs(rec.projection @ form.jacobian.T).max() < 1e-12
    assert rel(rec.projection @ rec.projection, rec.projection) < TOL
    free = px.System(px.load_robot("six_dof_arm"), joint_limits=False, contacts=())
    with pytest.raises(ConstraintError, match="no constraint rows"):
        px.constraint_projection(free, np.zeros(6), np.zeros(6))
    with pytest.raises(InvalidParameter, match="reference"):
        px.constraint_projection(system, q, v, reference="body")


def test_example_runs(capsys):
    """examples/constraint_projection.py agrees with Pinocchio to rounding."""
    import re
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "constraint_projection.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    assert "rank 3" in out and "P τ = P (M θ̈ + h): True" in out
    accel = float(re.search(r"differs by ([0-9.e+-]+)", out).group(1))
    force = float(re.search(r"is −λ to ([0-9.e+-]+) N", out).group(1))
    assert accel < 1e-9 and force < 1e-9
