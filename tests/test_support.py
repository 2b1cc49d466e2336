"""The elastic robot support (Vukobratović & Potkonjak §20.5.1, Problem 6) and joint springs,
against closed forms of a rigid body on a spring: static deflection k x = m g (and the
torsional equilibrium k θ = −m g c(θ)), frequencies √(k/m), √(k/I_pivot), the eigenvalues of
a rigid body on a 6×6 spring, and free vibration z(t) in closed form."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from scipy.linalg import eigh
from scipy.optimize import brentq

import pinext as px
from pinext.exceptions import FileFormatError, InvalidParameter, NameNotFound
from pinext.robots import robot_path
from pinext.support import SupportCoupling, joint_springs

SIX_DOF = robot_path("six_dof_arm")
ARM = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
POSE = np.array([0.3, 0.7, -0.4, 0.2, 0.5, 0.1])
G = 9.81


def _arm() -> px.Robot:
    return px.load_urdf(SIX_DOF, extensions=False)


def _urdf_mass() -> float:
    """The arm's mass from the URDF's <mass> elements (every link, base included)."""
    root = ET.parse(SIX_DOF).getroot()
    return sum(float(m.get("value")) for m in root.iter("mass"))


def _composite(q: np.ndarray) -> pin.Inertia:
    """The whole arm (base included) as one rigid body, expressed at the world origin, from
    the rigid model's placements (no support, no CRBA)."""
    model = pin.buildModelFromUrdf(str(SIX_DOF))
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    total = model.inertias[0].copy()
    for j in range(1, model.njoints):
        total += data.oMi[j].act(model.inertias[j])
    return total


def _full_pose(robot: px.Robot, arm_q: np.ndarray) -> np.ndarray:
    q = robot.neutral()
    for k, name in enumerate(ARM):
        q[robot.model.joints[robot.joint_id(name)].idx_q] = arm_q[k]
    return q


# -- model --------------------------------------------------------------------------------------
def test_support_keeps_the_robot_where_it_was_and_adds_passive_joints_first():
    base = _arm()
    placement = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3), np.array([0.1, -0.05, -0.2]))
    robot = px.add_support(
        base, px.ElasticSupport({"z": 1e5, "rx": 2e4}, {"z": 30.0}, placement=placement)
    )
    assert list(robot.model.names)[1:3] == ["support_z", "support_rx"]
    assert robot.nv == base.nv + 2 and robot.rigid_model.nv == base.nv
    np.testing.assert_array_equal(robot.joint_stiffness[:2], [1e5, 2e4])
    np.testing.assert_array_equal(robot.joint_damping[:2], [30.0, 0.0])
    assert pin.computeTotalMass(robot.model) == pytest.approx(_urdf_mass(), rel=1e-14)
    data, data0 = robot.model.createData(), base.model.createData()
    q = _full_pose(robot, POSE)
    pin.framesForwardKinematics(robot.model, data, q)
    pin.framesForwardKinematics(base.model, data0, POSE)
    for frame in base.model.frames:
        fid = robot.frame_id(frame.name)
        np.testing.assert_allclose(
            data.oMf[fid].homogeneous, data0.oMf[base.frame_id(frame.name)].homogeneous, atol=1e-14
        )
    assert robot.support.joint_names == ["support_z", "support_rx"]
    again = px.ElasticSupport.from_dict(robot.support.to_dict())
    assert again.axes == robot.support.axes and again.placement.isApprox(placement, 1e-15)
    np.testing.assert_array_equal(again.stiffness_matrix, robot.support.stiffness_matrix)


# -- statics -------------------------------------------------------------------------------------
@pytest.mark.parametrize("linear", [True, False])
def test_translational_support_sags_by_m_g_over_k(linear):
    k = 2.5e5
    robot = px.add_support(_arm(), px.ElasticSupport({"z": k}))
    q = _full_pose(robot, POSE)
    deflected = px.static_deflection(
        robot, q, frame="tool", wrench=np.zeros(6), gravity=True, linear=linear
    )
    assert deflected[0] == pytest.approx(-_urdf_mass() * G / k, rel=1e-12)
    np.testing.assert_array_equal(deflected[1:], q[1:])  # the arm's joints are held


def test_torsional_support_tilts_to_the_closed_form_equilibrium():
    """Rotation φ about x through the pivot p: k φ + m g (c_y(φ)) = 0 with the centre of mass
    rotated, c_y(φ) = cos φ r_y − sin φ r_z (r = c − p)."""
    k = 1.0e3
    pivot = np.array([0.05, -0.1, -0.15])
    robot = px.add_support(
        _arm(), px.ElasticSupport({"rx": k}, placement=pin.SE3(np.eye(3), pivot))
    )
    q = _full_pose(robot, POSE)
    body = _composite(POSE)
    mass, r = body.mass, body.lever - pivot

    def torque(phi):
        return k * phi + mass * G * (np.cos(phi) * r[1] - np.sin(phi) * r[2])

    exact = brentq(torque, -1.0, 1.0, xtol=1e-15)
    nonlinear = px.static_deflection(robot, q, frame="tool", wrench=np.zeros(6), linear=False)
    assert nonlinear[0] == pytest.approx(exact, rel=1e-9)
    assert abs(exact) > 0.01  # the nonlinear case matters
    linear = px.static_deflection(robot, q, frame="tool", wrench=np.zeros(6), gravity=True)
    assert linear[0] == pytest.approx(-mass * G * r[1] / k, rel=1e-12)
    # a tip wrench: the support's torque balances the wrench's moment about the pivot
    wrench = np.array([0.0, 3.0, -20.0, 0.4, 0.0, 0.0])
    loaded = px.static_deflection(robot, q, frame="tool", wrench=wrench)
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, q)
    arm = data.oMf[robot.frame_id("tool")].translation - pivot
    moment = np.cross(arm, wrench[:3]) + wrench[3:]
    assert loaded[0] == pytest.approx(moment[0] / k, rel=1e-12)


def test_coupled_support_deflects_by_the_inverse_stiffness_matrix():
    """A 6×6 stiffness: the base's displacement and rotation under gravity solve K δ = f with
    f the weight and its moment about the pivot."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 6))
    k = a @ a.T * 2e3 + np.diag([3e5, 3e5, 3e5, 5e4, 5e4, 5e4])
    robot = px.add_support(_arm(), px.ElasticSupport(k))
    q = _full_pose(robot, POSE)
    body = _composite(POSE)
    weight = np.array([0.0, 0.0, -body.mass * G])
    load = np.concatenate([weight, np.cross(body.lever, weight)])
    deflected = px.static_deflection(robot, q, frame="tool", wrench=np.zeros(6), gravity=True)
    np.testing.assert_allclose(deflected[:6], np.linalg.solve(k, load), rtol=1e-10, atol=1e-15)


# -- frequencies ----------------------------------------------------------------------------------
def test_translational_support_frequency_is_sqrt_k_over_m():
    k = 2.5e5
    robot = px.add_support(_arm(), px.ElasticSupport({"z": k}))
    f = px.natural_frequencies(robot, _full_pose(robot, POSE), locked_joints=ARM)
    assert f == pytest.approx([np.sqrt(k / _urdf_mass()) / (2 * np.pi)], rel=1e-12)


def test_torsional_support_frequency_is_sqrt_k_over_the_pivot_inertia():
    k = 4.0e4
    pivot = np.array([0.05, -0.1, -0.15])
    axis_rpy = (0.0, 0.0, 0.4)
    placement = pin.SE3(pin.rpy.rpyToMatrix(*axis_rpy), pivot)
    robot = px.add_support(_arm(), px.ElasticSupport({"ry": k}, placement=placement))
    body = _composite(POSE)
    axis = placement.rotation[:, 1]
    r = body.lever - pivot
    inertia = axis @ (body.inertia + body.mass * (r @ r * np.eye(3) - np.outer(r, r))) @ axis
    f = px.natural_frequencies(robot, _full_pose(robot, POSE), locked_joints=ARM)
    assert f == pytest.approx([np.sqrt(k / inertia) / (2 * np.pi)], rel=1e-12)
    # with gravity, the pendulum's stiffness −m g (ĝ × axis)·(axis × r)... = d²V/dφ²
    fg = px.natural_frequencies(robot, _full_pose(robot, POSE), locked_joints=ARM, gravity=True)
    rotated = np.cross(axis, np.cross(axis, r))  # d²(R(φ) r)/dφ² at φ = 0
    k_gravity = body.mass * G * rotated[2]
    assert fg == pytest.approx([np.sqrt((k + k_gravity) / inertia) / (2 * np.pi)], rel=1e-10)


def test_six_by_six_support_frequencies_are_those_of_a_rigid_body_on_a_spring():
    """K x = ω² Y x with Y the whole arm's spatial inertia at the pivot in the support frame."""
    rng = np.random.default_rng(11)
    a = rng.standard_normal((6, 6))
    k = a @ a.T * 5e3 + np.diag([2e5, 3e5, 4e5, 3e4, 4e4, 5e4])
    placement = pin.SE3(pin.rpy.rpyToMatrix(0.2, 0.1, -0.3), np.array([0.02, 0.03, -0.1]))
    robot = px.add_support(_arm(), px.ElasticSupport(k, placement=placement))
    spatial = placement.actInv(_composite(POSE)).matrix()
    expected = np.sqrt(eigh(k, spatial, eigvals_only=True)) / (2 * np.pi)
    f = px.natural_frequencies(robot, _full_pose(robot, POSE), locked_joints=ARM)
    np.testing.assert_allclose(f, expected, rtol=1e-10)
    shapes = px.mode_shapes(robot, _full_pose(robot, POSE), locked_joints=ARM)
    np.testing.assert_allclose(shapes.frequencies, expected, rtol=1e-10)


def test_natural_frequencies_include_the_support_mode():
    """An arm with springs in its joints, on an elastic support: the spectrum is that of the
    whole stiffness (support K and joint springs) on Pinocchio's mass matrix, one frequency
    more than the arm alone, and the support's mode tends to √(k/m) on a stiff arm."""
    springs = {j: {"stiffness": 2e4, "damping": 1.0} for j in ARM}
    arm = px.load_urdf(SIX_DOF, extensions=False, joints=springs)
    k = 1.0e5
    robot = px.load_urdf(
        SIX_DOF, extensions=False, joints=springs, support=px.ElasticSupport({"z": k})
    )
    q = _full_pose(robot, POSE)
    mass = pin.crba(robot.model, robot.model.createData(), q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    stiffness = np.diag([k] + [2e4] * 6)
    expected = np.sqrt(eigh(stiffness, mass, eigvals_only=True)) / (2 * np.pi)
    f = px.natural_frequencies(robot, q)
    np.testing.assert_allclose(f, expected, rtol=1e-10)
    assert f.size == px.natural_frequencies(arm, POSE).size + 1
    errors = []
    for k_arm in (1e7, 1e8, 1e9):  # a stiffer arm: the support's mode tends to √(k/m)
        stiff = {j: {"stiffness": k_arm} for j in ARM}
        robot = px.load_urdf(
            SIX_DOF, extensions=False, joints=stiff, support={"stiffness": {"z": k}}
        )
        lowest = px.natural_frequencies(robot, _full_pose(robot, POSE))[0]
        errors.append(lowest / (np.sqrt(k / _urdf_mass()) / (2 * np.pi)) - 1)
    assert errors[-1] < 0 and abs(errors[-1]) < 2e-6  # the arm's compliance lowers it
    assert errors[0] / errors[1] == pytest.approx(10.0, rel=0.01)  # as 1 / k_arm
    assert errors[1] / errors[2] == pytest.approx(10.0, rel=0.01)


# -- dynamics -------------------------------------------------------------------------------------
def _block(k: float, c: float = 0.0) -> px.Robot:
    """The arm locked at POSE (Pinocchio's buildReducedModel: one rigid body) on a z spring."""
    model = pin.buildModelFromUrdf(str(SIX_DOF))
    locked = pin.buildReducedModel(model, list(range(1, model.njoints)), POSE)
    return px.add_support(locked, px.ElasticSupport({"z": k}, {"z": c}))


@pytest.mark.parametrize("damping_ratio", [0.0, 0.05])
def test_released_block_vibrates_as_a_mass_on_a_spring(damping_ratio):
    """z(t) of a mass released at z = 0 under gravity: the damped oscillator's closed form."""
    k, m = 1e5, _urdf_mass()
    wn = np.sqrt(k / m)
    c = 2 * damping_ratio * np.sqrt(k * m)
    system = px.System(_block(k, c))
    traj = px.simulate(system, 0.2, output_dt=1e-3, rtol=1e-12, atol=1e-14)
    z_static = -m * G / k
    wd = wn * np.sqrt(1 - damping_ratio**2)
    t = traj.t
    decay = np.exp(-damping_ratio * wn * t)
    expected = z_static * (1 - decay * (np.cos(wd * t) + damping_ratio * wn / wd * np.sin(wd * t)))
    np.testing.assert_allclose(traj.q[:, 0], expected, rtol=0, atol=1e-10 * abs(z_static))
    assert traj.energy_balance().max_relative() < 1e-10


@pytest.mark.filterwarnings("ignore::pinext.contact.VelocityLimitWarning")  # the arm falls
def test_coupled_support_keeps_the_energy_balance(simulation_path):
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((6, 6)), rng.standard_normal((6, 6))
    k = a @ a.T * 1e4 + np.diag([1e5] * 3 + [3e4] * 3)
    d = b @ b.T * 5.0
    robot = px.add_support(_arm(), px.ElasticSupport(k, d))
    system = px.System(robot)
    assert isinstance(system.components[0], SupportCoupling)
    x0 = system.initial_state(_full_pose(robot, POSE))
    # the System's right-hand side: the support's wrench is −K δ − D δ̇ on the support DOFs
    x = x0.copy()
    x[:6] = 1e-3 * rng.standard_normal(6)
    x[robot.nq : robot.nq + 6] = 1e-2 * rng.standard_normal(6)
    step = system.step(0.0, x)
    expected = -k @ x[:6] - d @ x[robot.nq : robot.nq + 6]
    np.testing.assert_allclose(step.tau[:6], expected, rtol=1e-12)
    traj = px.simulate(system, 0.2, q0=_full_pose(robot, POSE), output_dt=0.01)
    assert traj.energy_balance().max_relative() < 1e-8
    assert (traj.meta["stats"]["compiled_segments"] >= 1) == (simulation_path == "compiled")
    # the stored energy includes the coupling's: ½ δᵀ K δ
    terms = system.energy_terms(x)
    assert terms["elastic"] + terms["support"] == pytest.approx(0.5 * x[:6] @ k @ x[:6], rel=1e-12)


@pytest.mark.filterwarnings("ignore::pinext.contact.VelocityLimitWarning")  # the arm falls
def test_viewer_draws_the_robot_moved_by_the_support():
    from pinext.visualization import Viewer
    from pinext.visualization.sampling import resample

    robot = px.add_support(_arm(), px.ElasticSupport({"x": 1e5, "rz": 1e4}))
    viewer = Viewer(robot)
    q = _full_pose(robot, POSE)
    q[:2] = [0.05, 0.2]
    traj = px.simulate(px.System(robot), 1e-3, q0=q, output_dt=1e-3)
    poses = viewer._poses(resample(robot.model, traj, 1000.0), 0, (0.0, 0.0))
    data = robot.model.createData()
    gdata = viewer.visual_model.createData()
    pin.forwardKinematics(robot.model, data, q)
    pin.updateGeometryPlacements(robot.model, data, viewer.visual_model, gdata)
    moved = 0
    for gid, geom in enumerate(viewer.visual_model.geometryObjects):
        np.testing.assert_allclose(
            poses[f"pinocchio/visuals/{geom.name}"][0], gdata.oMg[gid].homogeneous, atol=1e-12
        )
        moved += geom.name.startswith("base_link")
    assert moved  # the base itself is drawn, and it moves with the support
    assert traj.meta["support"]["axes"] == ["x", "rz"]


# -- extension format -----------------------------------------------------------------------------
def _copy_arm(tmp_path, block: str = "", folder: str = "xml"):
    """The six_dof_arm's URDF in its own folder of tmp_path, with a <pinext> block."""
    text = SIX_DOF.read_text()
    if block:
        text = text.replace("</robot>", f"<pinext>{block}</pinext></robot>")
    (tmp_path / folder).mkdir(exist_ok=True)
    path = tmp_path / folder / "arm.urdf"
    path.write_text(text)
    return path


def test_support_and_joint_tables_in_toml_and_xml_agree(tmp_path):
    path = _copy_arm(tmp_path, folder="toml")
    path.with_name("arm.pinext.toml").write_text(
        "[support]\n"
        "stiffness = { z = 2.0e5, rx = 4.0e4 }\n"
        "damping = { z = 400.0 }\n"
        "xyz = [0.0, 0.1, 0.0]\n"
        "[joints.elbow]\nstiffness = 500.0\ndamping = 2.0\n"
    )
    toml = px.load_urdf(path)
    xml = px.load_urdf(
        _copy_arm(
            tmp_path,
            '<support xyz="0 0.1 0"><stiffness z="2e5" rx="4e4"/><damping z="400"/></support>'
            '<joint_spring joint="elbow" stiffness="500" damping="2"/>',
        )
    )
    for robot in (toml, xml):
        assert robot.support.axes == ("z", "rx")
        np.testing.assert_array_equal(robot.joint_stiffness[:2], [2e5, 4e4])
        elbow = robot.velocity_index("elbow")
        assert (robot.joint_stiffness[elbow], robot.joint_damping[elbow]) == (500.0, 2.0)
        np.testing.assert_array_equal(robot.model.jointPlacements[1].translation, [0.0, 0.1, 0.0])
    # a 6×6 matrix as 36 numbers in XML, as a list of lists in TOML
    k = np.diag([1e5, 1e5, 2e5, 3e4, 3e4, 1e4])
    k[0, 4] = k[4, 0] = 2e3
    words = " ".join(f"{v:g}" for v in k.ravel())
    robot = px.load_urdf(_copy_arm(tmp_path, f'<support stiffness="{words}"/>', "matrix"))
    np.testing.assert_array_equal(robot.support.stiffness_matrix, k)
    np.testing.assert_array_equal(robot.stiffness_matrix()[:6, :6], k)
    # Python overrides the files; False removes the support
    assert px.load_urdf(path, support=False).support is None
    assert (
        px.load_urdf(path, joints={"elbow": {"stiffness": 7.0}}).joint_stiffness[
            toml.velocity_index("elbow")
        ]
        == 7.0
    )


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"stiffness": 1e5}, "name its axes"),
        ({"stiffness": {"q": 1.0}}, "unknown support axis"),
        ({"stiffness": [1.0, 2.0]}, "needs its axes"),
        ({"stiffness": {"z": 1.0}, "damping": {"x": 1.0}}, "not among"),
        ({"stiffness": -np.eye(6)}, "positive semi-definite"),
        ({"stiffness": {"z": "soft"}}, "must be a finite number"),
        ({"stiffness": {"z": 1.0}, "spring": 1}, "unknown support keys"),
        ({"damping": {"z": 1.0}}, "needs a 'stiffness'"),
    ],
)
def test_bad_supports_name_what_is_wrong(spec, message):
    with pytest.raises(InvalidParameter, match=message):
        px.ElasticSupport.from_dict(spec)


def test_bad_support_files_and_robots_raise(tmp_path):
    path = _copy_arm(tmp_path, '<support><stiffness w="1"/></support>')
    with pytest.raises(FileFormatError, match="support"):
        px.load_urdf(path)
    with pytest.raises(InvalidParameter, match="float"):
        px.add_support(px.load_urdf(SIX_DOF, root_joint="freeflyer"), {"stiffness": {"z": 1.0}})
    robot = px.add_support(_arm(), {"stiffness": {"z": 1.0}})
    with pytest.raises(InvalidParameter, match="already"):
        px.add_support(robot, {"stiffness": {"z": 1.0}})
    with pytest.raises(NameNotFound, match="elbw"):
        joint_springs(_arm(), {"elbw": {"stiffness": 1.0}})
    with pytest.raises(InvalidParameter, match="finite number >= 0"):
        joint_springs(_arm(), {"elbow": {"stiffness": -1.0}})
    with pytest.raises(InvalidParameter, match="unknown keys"):
        joint_springs(_arm(), {"elbow": {"rest": 1.0}})


def test_compliant_support_example_runs_and_balances_its_energy():
    """examples/compliant_support.py, shortened: the mount moves the tip and the run's energy
    audit balances."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "compliant_support.py"
    spec = importlib.util.spec_from_file_location("compliant_support", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    summary = module.main(["--duration", "0.3"])
    assert summary["energy_balance"] < 1e-8
    assert summary["peak_tip_deviation_mm"] > 1.0  # the mount's sag and sway reach the tip
    assert summary["peak_base_tilt_mrad"] > 1.0


def test_a_massless_base_on_a_twisting_support_is_rejected():
    """Without the base link's mass, the support's rz and shoulder_pan turn the same bodies
    about the same axis: the mass matrix is singular, and the error says so."""
    model = pin.buildModelFromUrdf(str(SIX_DOF))
    model.inertias[0] = pin.Inertia.Zero()
    with pytest.raises(InvalidParameter, match="singular"):
        px.add_support(model, {"stiffness": {"rz": 1e4}})
    px.add_support(model, {"stiffness": {"z": 1e4}})  # a translation moves the whole arm
