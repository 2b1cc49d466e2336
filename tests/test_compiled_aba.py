"""The compiled articulated-body algorithm against Pinocchio's ``aba`` (the reference)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pinext.compiled import (
    JOINT_CODES,
    aba,
    joint_transforms,
    minv_from_transforms,
    minv_solve,
    pack,
)
from pinext.compiled.aba import aba_held
from pinext.exceptions import InvalidParameter, PinextError, UnsupportedModel
from pinext.robots import load_robot, robot_names
from tests.models import humanoid, rel, state

TOL = 1e-12  # relative to 1 + max |q̈|; both sides are O(n) sums of O(1) products in float64
EXAMPLE_ROBOTS = ("ur5", "panda", "talos_arm", "solo12")


def _worst_error(model: pin.Model, seed: int, states: int = 8) -> float:
    """Largest relative difference to pin.aba over seeded random states (q, v, τ)."""
    rng = np.random.default_rng(seed)
    data = model.createData()
    pm = pack(model)
    out = np.zeros(model.nv)
    worst = 0.0
    for _ in range(states):
        q, v, tau = state(model, rng)
        v *= 3.0
        tau *= 10.0
        aba(pm, q, v, tau, out)
        worst = max(worst, rel(out, pin.aba(model, data, q, v, tau)))
    return worst


def _random_inertia(rng: np.random.Generator) -> pin.Inertia:
    """A random physically consistent body: mass in [0.5, 2] kg, offset centre of mass,
    principal moments obeying the triangle inequality, random principal axes."""
    moments = rng.uniform(0.02, 0.2, 3)
    moments[2] = rng.uniform(abs(moments[0] - moments[1]) + 1e-3, moments[0] + moments[1])
    axes = pin.exp3(rng.standard_normal(3))
    return pin.Inertia(
        rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2, 3), axes @ np.diag(moments) @ axes.T
    )


def _random_placement(rng: np.random.Generator) -> pin.SE3:
    return pin.SE3(pin.exp3(rng.standard_normal(3)), rng.uniform(-0.3, 0.3, 3))


def _unit(rng: np.random.Generator) -> np.ndarray:
    axis = rng.standard_normal(3)
    return axis / np.linalg.norm(axis)


def every_joint_tree(rng: np.random.Generator) -> pin.Model:
    """A branching tree holding every supported joint type once, with random placements,
    inertias and limits ±2 (so pin.randomConfiguration draws finite positions)."""
    joints = [
        pin.JointModelFreeFlyer(),
        pin.JointModelRX(),
        pin.JointModelRY(),
        pin.JointModelRZ(),
        pin.JointModelRevoluteUnaligned(_unit(rng)),
        pin.JointModelRUBX(),
        pin.JointModelRUBY(),
        pin.JointModelRUBZ(),
        pin.JointModelRevoluteUnboundedUnaligned(),  # Python cannot set its axis: see below
        pin.JointModelPX(),
        pin.JointModelPY(),
        pin.JointModelPZ(),
        pin.JointModelPrismaticUnaligned(_unit(rng)),
        pin.JointModelSpherical(),
        pin.JointModelTranslation(),
        pin.JointModelPlanar(),
    ]
    model = pin.Model()
    parent = 0
    for i, joint in enumerate(joints):
        # a tree in depth-first order (Pinocchio's crba needs each subtree's dofs contiguous):
        # the parent is the last joint or one of its ancestors
        for _ in range(int(rng.integers(0, 3)) if i > 1 else 0):
            parent = max(model.parents[parent], 1)
        jid = model.addJoint(parent, joint, _random_placement(rng), f"j{i}_{joint.shortname()}")
        parent = jid
        model.appendBodyToJoint(jid, _random_inertia(rng), pin.SE3.Identity())
    model.lowerPositionLimit[:] = -2.0
    model.upperPositionLimit[:] = 2.0
    return model


def test_packed_model_holds_only_plain_arrays():
    pm = pack(humanoid())
    for name, value in pm._asdict().items():
        assert isinstance(value, np.ndarray), name
        assert value.dtype in (np.float64, np.int64), name


@pytest.mark.parametrize("name", robot_names())
def test_project_robots(name):
    assert _worst_error(load_robot(name).model, seed=1) < TOL


@pytest.mark.parametrize("name", EXAMPLE_ROBOTS)
def test_example_robot_data_robots(name, robots_dir):
    model = load_robot(name).model
    assert _worst_error(model, seed=2) < TOL


def test_every_supported_joint_type_in_a_tree():
    rng = np.random.default_rng(3)
    model = every_joint_tree(rng)
    kinds = {model.joints[i].shortname() for i in range(1, model.njoints)}
    assert kinds == set(JOINT_CODES)
    assert _worst_error(model, seed=4, states=20) < TOL


UNALIGNED_URDF = """<robot name="unaligned">
  <link name="base"/>
  {links}
</robot>"""
LINK = """<link name="l{i}"><inertial><origin xyz="0.1 0.05 -0.02" rpy="0.3 0.2 0.1"/>
  <mass value="{m}"/><inertia ixx="0.05" ixy="0.004" ixz="-0.003" iyy="0.06" iyz="0.002"
  izz="0.07"/></inertial></link>
<joint name="j{i}" type="{kind}"><parent link="{parent}"/><child link="l{i}"/>
  <origin xyz="0.2 0.1 0.05" rpy="0.1 -0.4 0.7"/><axis xyz="{axis}"/>
  <limit lower="-2" upper="2" effort="10" velocity="3"/></joint>"""


def test_unaligned_axes_from_urdf():
    """URDF revolute, continuous and prismatic joints about skew axes (Pinocchio makes them
    RevoluteUnaligned, RevoluteUnboundedUnaligned and PrismaticUnaligned)."""
    kinds = ["revolute", "continuous", "prismatic", "continuous", "revolute"]
    axes = ["0 0.6 0.8", "0.48 0.6 0.64", "0.6 0 0.8", "1 2 2", "-0.36 0.48 0.8"]
    links = "\n".join(
        LINK.format(i=i, m=1.0 + 0.2 * i, kind=k, axis=a, parent="base" if i == 0 else f"l{i - 1}")
        for i, (k, a) in enumerate(zip(kinds, axes, strict=True))
    )
    model = pin.buildModelFromXML(UNALIGNED_URDF.format(links=links))
    types = [model.joints[i].shortname() for i in range(1, model.njoints)]
    assert types == [
        "JointModelRevoluteUnaligned",
        "JointModelRevoluteUnboundedUnaligned",
        "JointModelPrismaticUnaligned",
        "JointModelRevoluteUnboundedUnaligned",
        "JointModelRevoluteUnaligned",
    ]
    assert _worst_error(model, seed=13) < TOL
    model.armature[:] = 0.1
    assert _worst_error(model, seed=14) < TOL


def test_armature_enters_the_joint_space_diagonal():
    """pin.aba adds model.armature to D = Sᵀ U; so must the kernel (and it matters)."""
    rng = np.random.default_rng(5)
    model = every_joint_tree(rng)
    assert _worst_error(model, seed=6) < TOL
    bare = pin.aba(model, model.createData(), *state(model, np.random.default_rng(7)))
    model.armature[:] = rng.uniform(0.05, 0.5, model.nv)
    assert _worst_error(model, seed=6) < TOL
    armed = pin.aba(model, model.createData(), *state(model, np.random.default_rng(7)))
    assert rel(armed, bare) > 1e-3  # the comparison above was not vacuous


def test_armature_on_a_real_arm(robots_dir):
    model = load_robot("ur5").model
    model.armature[:] = np.linspace(0.1, 0.6, model.nv)
    assert _worst_error(model, seed=8) < TOL


def test_gravity_is_read_from_the_model():
    model = humanoid()
    model.gravity = pin.Motion(np.array([1.0, -2.0, -9.0]), np.array([0.0, 0.0, 0.0]))
    assert _worst_error(model, seed=9) < TOL
    model.gravity = pin.Motion.Zero()
    assert _worst_error(model, seed=9) < TOL


def test_sample_humanoid_and_manipulator():
    assert _worst_error(humanoid(), seed=10) < TOL
    assert _worst_error(pin.buildSampleModelManipulator(), seed=11) < TOL


@pytest.mark.parametrize(
    "joint",
    [
        pin.JointModelHX(0.1),
        pin.JointModelSphericalZYX(),
        pin.JointModelUniversal(1.0, 0.0, 0.0, 0.0, 1.0, 0.0),
    ],
    ids=lambda j: j.shortname(),
)
def test_unsupported_joint_raises(joint):
    model = pin.Model()
    j1 = model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "shoulder")
    model.addJoint(j1, joint, pin.SE3.Identity(), "odd")
    with pytest.raises(UnsupportedModel) as info:
        pack(model)
    err = info.value
    assert isinstance(err, PinextError) and isinstance(err, InvalidParameter)
    assert err.joint == "odd" and err.joint_type == joint.shortname()
    assert "odd" in str(err) and joint.shortname() in str(err)
    assert "JointModelRZ" in str(err)  # lists what is supported


def test_composite_joint_raises():
    model = pin.Model()
    composite = pin.JointModelComposite(pin.JointModelRX())
    composite.addJoint(pin.JointModelRY())
    model.addJoint(0, composite, pin.SE3.Identity(), "wrist")
    with pytest.raises(UnsupportedModel, match="wrist"):
        pack(model)


MIMIC_URDF = """<robot name="mimic"><link name="base"/>
  <link name="a"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="b"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="driver" type="revolute"><parent link="base"/><child link="a"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
  <joint name="follower" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="0.1 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="driver" multiplier="2" offset="0"/></joint>
</robot>"""


def test_mimic_joint_raises():
    model = pin.buildModelFromXML(MIMIC_URDF, mimic=True)
    with pytest.raises(UnsupportedModel, match="follower") as info:
        pack(model)
    assert info.value.joint_type == "JointModelMimic"


def test_workspace_does_not_leak_between_calls():
    """Two different states in a row give the same results as each alone (the kernel
    overwrites its workspace rather than accumulating into it)."""
    model = humanoid()
    rng = np.random.default_rng(12)
    pm = pack(model)
    first, second = state(model, rng), state(model, rng)
    out1, out2 = np.zeros(model.nv), np.zeros(model.nv)
    aba(pm, *first, out1)
    aba(pm, *second, out2)
    aba(pm, *first, out2)
    np.testing.assert_array_equal(out1, out2)


def _mass_matrix(model: pin.Model, q: np.ndarray) -> np.ndarray:
    m = pin.crba(model, model.createData(), q)
    return np.triu(m) + np.triu(m, 1).T


@pytest.mark.parametrize("which", ["tree", "humanoid"])
def test_minv_solve_reuses_the_factors_of_the_last_aba(which):
    """After aba(q, v, τ), minv_solve(b) = M(q)⁻¹ b for several b (the columns of M⁻¹ Jᵀ in a
    constrained solve); minv_from_transforms gives the same from scratch."""
    model = every_joint_tree(np.random.default_rng(15)) if which == "tree" else humanoid()
    model.armature[:] = 0.05
    rng = np.random.default_rng(16)
    pm = pack(model)
    q, v, tau = state(model, rng)
    mass = _mass_matrix(model, q)
    tol = max(1e-12, 50.0 * np.linalg.cond(mass) * np.finfo(float).eps)
    a = np.zeros(model.nv)
    aba(pm, q, v, tau, a)
    x, y = np.zeros(model.nv), np.zeros(model.nv)
    for _ in range(3):
        b = rng.standard_normal(model.nv)
        minv_solve(pm, b, x)
        assert rel(x, np.linalg.solve(mass, b)) < tol
    joint_transforms(pm, q)
    minv_from_transforms(pm, b, y)
    assert rel(y, np.linalg.solve(mass, b)) < tol
    minv_solve(pm, b, x)
    np.testing.assert_allclose(x, y, rtol=0, atol=1e-13 * (1 + np.abs(y).max()))


@pytest.mark.parametrize("which", ["tree", "humanoid", "ur5"])
def test_hybrid_aba_holds_joints_at_their_prescribed_accelerations(which, request):
    """aba_held (Featherstone's hybrid dynamics, the joints on their stops or stuck by
    friction) against the partitioned equations of motion from Pinocchio's CRBA and
    non-linear effects: with the held dofs h at q̈_h, ``M_ff q̈_f = τ_f − h_f − M_fh q̈_h``
    and the force that holds them ``f_h = M_hf q̈_f + M_hh q̈_h + h_h − τ_h``; seeded
    states, every one-axis joint held or free at random, armature on. The tolerance follows
    the free block's conditioning, as for minv_solve."""
    if which == "ur5":
        model = pin.buildModelFromUrdf(
            str(request.getfixturevalue("robots_dir") / "ur_description/urdf/ur5_robot.urdf")
        )
    else:
        model = every_joint_tree(np.random.default_rng(17)) if which == "tree" else humanoid()
    model.armature[:] = 0.05
    pm = pack(model)
    data = model.createData()
    one_axis = [
        model.joints[j].idx_v
        for j in range(1, model.njoints)
        if model.joints[j].nv == 1 and pm.dof_axis[model.joints[j].idx_v] >= 0
    ]
    rng = np.random.default_rng(18)
    held_any = False
    for _ in range(6):
        q, v, tau = state(model, rng)
        dofs = [k for k in one_axis if rng.random() < 0.5] or one_axis[:1]
        held_any |= bool(dofs)
        locked, held = np.zeros(model.nv), np.zeros(model.nv)
        locked[dofs] = 1.0
        qdd_h = rng.standard_normal(len(dofs))
        held[dofs] = qdd_h
        a = np.zeros(model.nv)
        joint_transforms(pm, q)
        aba_held(pm, v, tau, pm.gravity, a, locked, held)
        mass = _mass_matrix(model, q)
        bias = pin.nonLinearEffects(model, data, q, v)
        free = np.setdiff1d(np.arange(model.nv), dofs)
        a_ref = np.zeros(model.nv)
        a_ref[dofs] = qdd_h
        a_ref[free] = np.linalg.solve(
            mass[np.ix_(free, free)], (tau - bias)[free] - mass[np.ix_(free, dofs)] @ qdd_h
        )
        force = (mass @ a_ref + bias - tau)[dofs]
        cond = np.linalg.cond(mass[np.ix_(free, free)]) if free.size else 1.0
        tol = max(1e-12, 50.0 * cond * np.finfo(float).eps)
        assert rel(a, a_ref) < tol
        assert rel(held[dofs], force) < tol
    assert held_any
