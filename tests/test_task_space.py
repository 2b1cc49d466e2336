"""Task-space dynamics (Lynch & Park ch. 8; Khatib 1987) against the joint-space dynamics of
Pinocchio (aba, rnea, crba) seen through the frame's Jacobian."""

import functools

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound, SingularConfiguration

from .models import random_pose

REFERENCES = {
    "world": pin.LOCAL_WORLD_ALIGNED,
    "local": pin.LOCAL,
    "space": pin.WORLD,
}
#: Acceptance: Λ and η equal the joint-space dynamics through J to this (relative).
TOL = 1e-10


@functools.cache
def six_dof_arm():
    return px.load_robot("six_dof_arm").model, "pen_tip"


@functools.cache
def panda_arm():
    """The Panda's 7 arm joints (fingers locked): a redundant arm."""
    try:
        model = px.load_robot("panda").model
    except px.exceptions.RobotNotFound:
        pytest.skip("example-robot-data not installed (pip install '.[robots]')")
    fingers = [model.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    reduced = pin.buildReducedModel(model, fingers, pin.neutral(model))
    assert reduced.nv == 7
    return reduced, "panda_hand_tcp"


ROBOTS = {"six_dof_arm": six_dof_arm, "panda": panda_arm}


def states(model, seed, n=5, frame=None):
    """Seeded random states (q within the limits, v standard normal) at which
    σ_min(J M^-1/2) > 1e-3 σ_max, away from singularities (typical ratios are 3e-3 on the
    six_dof_arm and 2e-2 on the Panda: the wrists' small inertia makes the angular rows far
    more mobile than the linear ones, whatever the pose)."""
    rng = np.random.default_rng(seed)
    frame = frame or ("pen_tip" if model.existFrame("pen_tip") else "panda_hand_tcp")
    fid = model.getFrameId(frame)
    out = []
    while len(out) < n:
        q = random_pose(model, rng)
        v = rng.standard_normal(model.nv)
        jac = pin.computeFrameJacobian(model, model.createData(), q, fid, pin.LOCAL_WORLD_ALIGNED)
        s = np.linalg.eigvalsh(jac @ np.linalg.solve(mass_matrix(model, q), jac.T))
        if s[0] > 1e-3**2 * s[-1]:
            out.append((q, v))
    return out


def frame_acceleration(model, fid, ref, q, v, a):
    """V̇ by Pinocchio's forward kinematics at (q, v, a): the classical acceleration of the
    origin in LOCAL_WORLD_ALIGNED, the spatial acceleration in LOCAL and WORLD."""
    data = model.createData()
    pin.forwardKinematics(model, data, q, v, a)
    pin.updateFramePlacements(model, data)
    if ref == pin.LOCAL_WORLD_ALIGNED:
        return pin.getFrameClassicalAcceleration(model, data, fid, ref).vector
    return pin.getFrameAcceleration(model, data, fid, ref).vector


def mass_matrix(model, q):
    M = pin.crba(model, model.createData(), q)
    return np.triu(M) + np.triu(M, 1).T


def rel(x, ref):
    return float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))


def scaled_error(value, ref, scale):
    """|value − ref| relative to ``scale`` + |ref|, the size of the terms summed."""
    return float(np.max(np.abs(value - ref)) / (scale + np.abs(ref).max()))


def wrench_error(rec, vdot, force):
    """|Λ V̇ + η − F| relative to the size of the terms summed, |Λ| |V̇| + |η| + |F|: the
    rounding of V̇ (eps |V̇|) reaches F amplified by |Λ|, so this is the error the conditioning
    allows to be compared with 1e-10."""
    scale = np.abs(rec.inertia).max() * np.abs(vdot).max() + np.abs(rec.bias).max()
    return float(np.max(np.abs(rec.wrench(vdot) - force)) / (scale + np.abs(force).max()))


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("reference", list(REFERENCES))
def test_wrench_equals_joint_space_dynamics_through_the_jacobian(robot, reference):
    """τ = Jᵀ F applied to the joints (Pinocchio's aba) gives the task acceleration V̇ of
    Pinocchio's forward kinematics, and F = Λ V̇ + η."""
    model, frame = ROBOTS[robot]()
    fid, ref = model.getFrameId(frame), REFERENCES[reference]
    rng = np.random.default_rng(1)
    worst = 0.0
    for q, v in states(model, 2):
        rec = px.task_space_dynamics(model, q, v, frame, reference)
        force = rng.standard_normal(6) * 20.0
        a = pin.aba(model, model.createData(), q, v, rec.jacobian.T @ force)
        vdot = frame_acceleration(model, fid, ref, q, v, a)
        worst = max(worst, wrench_error(rec, vdot, force))
        np.testing.assert_allclose(
            rec.acceleration(force), vdot, rtol=0, atol=TOL * 10 * (1 + np.abs(vdot).max())
        )
        # F_tip applied by the frame: τ = Jᵀ(Λ V̇ + η + F_tip) and M q̈ + h + Jᵀ F_tip = τ
        tip = rng.standard_normal(6) * 5.0
        tau = rec.torque(rec.wrench(vdot, tip))
        a_tip = pin.aba(model, model.createData(), q, v, tau - rec.jacobian.T @ tip)
        np.testing.assert_allclose(
            frame_acceleration(model, fid, ref, q, v, a_tip),
            vdot,
            atol=1e-9 * (1 + np.abs(vdot).max()),
        )
    assert worst < TOL, worst


@pytest.mark.parametrize("reference", list(REFERENCES))
def test_square_arm_inverse_dynamics_is_rnea(reference):
    """For the 6-DOF arm (J invertible) Jᵀ(Λ V̇ + η) is rnea(q, q̇, q̈) for any q̈:
    Lynch & Park's Λ = J⁻ᵀ M J⁻¹ and η = J⁻ᵀ h − Λ J̇ J⁻¹ V."""
    model, frame = six_dof_arm()
    fid, ref = model.getFrameId(frame), REFERENCES[reference]
    rng = np.random.default_rng(3)
    for q, v in states(model, 4):
        a = rng.standard_normal(model.nv)
        rec = px.task_space_dynamics(model, q, v, frame, reference)
        vdot = frame_acceleration(model, fid, ref, q, v, a)
        tau = pin.rnea(model, model.createData(), q, v, a)
        # Jᵀ Λ V̇ sums terms of size |J| |Λ| |V̇|: the rounding of V̇ reaches τ amplified so
        scale = np.abs(rec.jacobian).max() * np.abs(rec.inertia).max() * np.abs(vdot).max()
        assert scaled_error(rec.torque(rec.wrench(vdot)), tau, scale) < TOL
        # the closed forms with J⁻¹
        jinv = np.linalg.inv(rec.jacobian)
        M = mass_matrix(model, q)
        h = pin.rnea(model, model.createData(), q, v, np.zeros(model.nv))
        lam = jinv.T @ M @ jinv
        assert rel(rec.inertia, lam) < TOL
        eta = jinv.T @ h - lam @ rec.drift
        assert rel(rec.bias, eta) < TOL
        assert rel(rec.consistent_inverse, jinv) < TOL


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("reference", list(REFERENCES))
def test_inertia_spd_and_consistent_inverse_identities(robot, reference):
    model, frame = ROBOTS[robot]()
    for q, v in states(model, 5):
        rec = px.task_space_dynamics(model, q, v, frame, reference)
        lam = rec.inertia
        assert np.max(np.abs(lam - lam.T)) <= 1e-12 * np.max(np.abs(lam))
        np.linalg.cholesky(lam)  # positive definite
        assert np.linalg.eigvalsh(lam)[0] > 0
        M = mass_matrix(model, q)  # crba, independent of computeMinverse
        jbar, jac = rec.consistent_inverse, rec.jacobian
        # J J̄ = I
        assert np.max(np.abs(jac @ jbar - np.eye(6))) < TOL
        # M-consistency: M J̄ = Jᵀ Λ, and null-space torques do not accelerate the task
        assert rel(M @ jbar, jac.T @ lam) < TOL
        null = rec.null_space_projector()
        jminv = np.linalg.solve(M, jac.T).T
        # J M⁻¹ N = J M⁻¹ − J M⁻¹ Jᵀ J̄ᵀ: relative to the size of the terms subtracted
        scale = np.abs(jminv).max() * max(1.0, np.abs(jac.T @ jbar.T).max())
        assert np.max(np.abs(jminv @ null)) < TOL * scale
        # J̄ is a generalized inverse: J̄ J J̄ = J̄, and J̄ J is M-symmetric (M J̄ J symmetric)
        assert rel(jbar @ jac @ jbar, jbar) < TOL
        mj = M @ jbar @ jac
        assert np.max(np.abs(mj - mj.T)) < TOL * np.max(np.abs(mj))
        if model.nv > 6:
            assert np.linalg.matrix_rank(null, tol=1e-8) == model.nv - 6


@pytest.mark.parametrize("robot", list(ROBOTS))
@pytest.mark.parametrize("reference", list(REFERENCES))
def test_bias_against_finite_differences(robot, reference):
    """η = J̄ᵀ h − Λ J̇ q̇ with J̇ q̇ = d/dt [J(q(t)) q̇] along q(t) = q ⊕ t q̇ (central
    differences of Pinocchio's frame Jacobian) and h = rnea(q, q̇, 0)."""
    model, frame = ROBOTS[robot]()
    fid, ref = model.getFrameId(frame), REFERENCES[reference]
    data = model.createData()
    eps = 1e-5
    for q, v in states(model, 6, n=3):
        rec = px.task_space_dynamics(model, q, v, frame, reference)

        def twist(t, q=q, v=v):
            qt = pin.integrate(model, q, t * v)
            return pin.computeFrameJacobian(model, data, qt, fid, ref) @ v

        drift = (twist(eps) - twist(-eps)) / (2 * eps)
        h = pin.rnea(model, data, q, v, np.zeros(model.nv))
        eta = rec.consistent_inverse.T @ h - rec.inertia @ drift
        np.testing.assert_allclose(rec.drift, drift, atol=1e-8 * (1 + np.abs(drift).max()))
        assert rel(rec.bias, eta) < 1e-8
        np.testing.assert_allclose(rec.velocity, rec.jacobian @ v, atol=1e-12)


def test_singular_configuration_damped_and_pseudo_inverse():
    """At a wrist singularity (wrist_2 = 0: wrist_1 and wrist_3 aligned) Λ does not exist:
    SingularConfiguration names the frame and the remedies; damping= and pseudo_inverse=True
    give the damped and the Moore–Penrose inverses of J M⁻¹ Jᵀ."""
    model, frame = six_dof_arm()
    q, v = np.array([0.0, 0.5, 1.0, 0.0, 0.0, 0.0]), np.zeros(6)
    with pytest.raises(SingularConfiguration) as info:
        px.task_space_dynamics(model, q, v, frame)
    assert info.value.frame == frame and info.value.time is None
    assert "damping=" in str(info.value) and "pseudo_inverse" in str(info.value)
    jac = pin.computeFrameJacobian(
        model, model.createData(), q, model.getFrameId(frame), pin.LOCAL_WORLD_ALIGNED
    )
    inv = jac @ np.linalg.solve(mass_matrix(model, q), jac.T)
    damped = px.task_space_dynamics(model, q, v, frame, damping=0.1)
    assert rel(damped.inertia, np.linalg.inv(inv + 0.01 * np.eye(6))) < 1e-10
    pseudo = px.task_space_dynamics(model, q, v, frame, pseudo_inverse=True)
    lam = pseudo.inertia
    # Penrose conditions of Λ = (J M⁻¹ Jᵀ)⁺
    assert rel(lam @ inv @ lam, lam) < 1e-8
    assert rel(inv @ lam @ inv, inv) < 1e-8
    assert np.linalg.matrix_rank(lam, tol=1e-8 * np.abs(lam).max()) == 5
    # near, not at, the singularity the default threshold still raises; a lower one does not
    q[4] = 1e-7
    with pytest.raises(SingularConfiguration):
        px.task_space_dynamics(model, q, v, frame)
    px.task_space_dynamics(model, q, v, frame, threshold=1e-9)


def test_system_model_carries_the_drives_armature():
    """Given a System, Λ includes the rigid drives' reflected inertia (its model's armature)."""
    robot = px.load_robot("six_dof_arm")
    motor = px.DCMotor(
        resistance=1.0, torque_constant=0.05, back_emf_constant=0.05, rotor_inertia=1e-5
    )
    drives = {"elbow": px.Drive(motor, px.Gear(50.0))}
    system = px.System(robot, drives=drives)
    assert system.model.armature[2] > 0
    q, v = states(robot.model, 7, n=1)[0]
    rec = px.task_space_dynamics(system, q, v, "pen_tip")
    M = mass_matrix(system.model, q)
    jinv = np.linalg.inv(rec.jacobian)
    assert rel(rec.inertia, jinv.T @ M @ jinv) < TOL
    bare = px.task_space_dynamics(robot, q, v, "pen_tip")
    assert rel(rec.inertia, bare.inertia) > 1e-6


def test_bad_input_names_the_argument():
    model, frame = six_dof_arm()
    q, v = np.zeros(6) + 0.3, np.zeros(6)
    with pytest.raises(InvalidParameter, match="reference.*'world', 'local', 'space'"):
        px.task_space_dynamics(model, q, v, frame, "body")
    with pytest.raises(NameNotFound, match="pen_tip"):
        px.task_space_dynamics(model, q, v, "pen_tp")
    with pytest.raises(InvalidParameter, match="shape"):
        px.task_space_dynamics(model, q[:5], v, frame)
    with pytest.raises(InvalidParameter, match="pinext.Robot"):
        px.task_space_dynamics("six_dof_arm", q, v, frame)
    rec = px.task_space_dynamics(model, np.array([0, 0.5, 1, 0, 1, 0.0]), v, frame)
    with pytest.raises(InvalidParameter, match="acceleration"):
        rec.wrench(np.zeros(3))


def test_example_runs(capsys):
    """examples/task_space_dynamics.py: the wrench it builds gives the tip acceleration asked."""
    import runpy
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "task_space_dynamics.py"
    runpy.run_path(str(path), run_name="__main__")
    out = capsys.readouterr().out
    import re

    shown = re.search(r"gives V̇ = \[([^\]]*)\]", out).group(1).split()
    np.testing.assert_allclose(np.array(shown, dtype=float), [1, 0, 0, 0, 0, 0], atol=1e-3)
    assert "singular configuration" in out
