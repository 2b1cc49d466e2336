"""Tests of pinext.flexible.sublinks: FlexibleLink and expand_flexible (seed 001 §5)."""

from __future__ import annotations

import site
import sysconfig
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.flexible import (
    FlexibleLink,
    expand_configuration,
    expand_flexible,
    natural_frequencies,
    rigid_configuration,
)
from pinext.robots import robot_path

ROOT = Path(__file__).resolve().parents[1]
ARM = robot_path("flexible_arm")
E_STEEL, SIDE, LENGTH = 1e11, 0.01, 2.0
I_STEEL = SIDE**4 / 12


def robots_dir() -> Path | None:
    """example-robot-data's URDF folder, if installed."""
    paths = {sysconfig.get_paths()["purelib"], *site.getsitepackages()}
    for base in paths:
        folder = Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if folder.is_dir():
            return folder
    return None


def ur5_path() -> Path:
    folder = robots_dir()
    if folder is None:
        pytest.skip("example-robot-data is not installed")
    return folder / "ur_description" / "urdf" / "ur5_robot.urdf"


def load(path: Path):
    model = pin.buildModelFromUrdf(str(path))
    geoms = [
        pin.buildGeomFromUrdf(model, str(path), kind, package_dirs=[str(path.parents[4])])
        if path != ARM
        else pin.buildGeomFromUrdf(model, str(path), kind)
        for kind in (pin.GeometryType.VISUAL, pin.GeometryType.COLLISION)
    ]
    return model, geoms[0], geoms[1]


class Wrap:
    """Duck-typed robot for modal functions."""

    def __init__(self, expansion):
        self.model = expansion.model
        self.joint_stiffness = expansion.joint_stiffness
        self.joint_damping = expansion.joint_damping


def ur5_links(**extra):
    return [
        FlexibleLink("upper_arm_link", 3, 7e10, (4e-8, 6e-8), **extra),
        FlexibleLink(
            "forearm_link", 2, 7e10, (2e-8, 2e-8), shear_modulus=2.6e10, polar_moment=4e-8
        ),
    ]


# -- FlexibleLink ---------------------------------------------------------------------------
def test_from_dict_matches_constructor_and_accepts_sequences():
    d = {"link": "bar", "sublinks": 5, "young_modulus": 1e11, "second_moment_of_area": I_STEEL}
    assert FlexibleLink.from_dict(d) == FlexibleLink("bar", 5, 1e11, I_STEEL)
    two = FlexibleLink.from_dict({**d, "second_moment_of_area": [1e-8, 2e-8]})
    assert two.second_moments == (1e-8, 2e-8) and two.n_bending_axes == 2
    text = FlexibleLink.from_dict(
        {**d, "second_moment_of_area": "1e-8 2e-8", "bending_axes": "0 0 1 0 1 0"}
    )
    assert text.bending_axes == ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0))
    assert FlexibleLink.from_dict({**d, "sublinks": 5.0}).sublinks == 5


def test_from_dict_unknown_key_lists_valid_keys():
    with pytest.raises(InvalidParameter, match="valid keys: link, sublinks, young_modulus"):
        FlexibleLink.from_dict({"link": "bar", "sublinks": 2, "young": 1.0})
    with pytest.raises(InvalidParameter, match="missing key"):
        FlexibleLink.from_dict({"link": "bar", "sublinks": 2})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sublinks": 0}, r"sublinks must be an integer in \[1, 500\]"),
        ({"sublinks": 2.5}, r"sublinks must be an integer in \[1, 500\]"),
        ({"young_modulus": 0.0}, "young_modulus must be > 0"),
        ({"young_modulus": -1e11}, "young_modulus must be > 0"),
        ({"second_moment_of_area": 0.0}, "second_moment_of_area must be > 0"),
        ({"second_moment_of_area": (1e-8, -1e-8)}, "second_moment_of_area must be > 0"),
        ({"second_moment_of_area": (1e-8, 1e-8, 1e-8)}, "one value"),
        ({"length": -1.0}, "length must be > 0"),
        ({"shear_modulus": 8e10}, "torsion needs both"),
        ({"damping_ratio": -0.1}, "damping_ratio must be ≥ 0"),
        ({"bending_axes": ((0, 0, 1), (0, 1, 0))}, "2 bending axes for 1"),
    ],
)
def test_bad_parameters_raise(kwargs, message):
    args = {"link": "bar", "sublinks": 2, "young_modulus": 1e11, "second_moment_of_area": 1e-9}
    args.update(kwargs)
    with pytest.raises(InvalidParameter, match=message):
        FlexibleLink(**args)


def test_unknown_link_lists_links():
    model, visual, collision = load(ARM)
    with pytest.raises(NameNotFound, match="Available link names: .*bar") as err:
        expand_flexible(model, visual, collision, [FlexibleLink("beam", 2, 1e11, 1e-9)])
    assert err.value.name == "beam" and "tip" in err.value.available


def test_terminal_link_needs_length():
    xml = """<robot name="r"><link name="w"/>
      <joint name="j" type="revolute"><parent link="w"/><child link="rod"/><axis xyz="0 0 1"/>
      <limit effort="1" velocity="1" lower="-1" upper="1"/></joint>
      <link name="rod"><inertial><origin xyz="0.5 0 0"/><mass value="1"/>
      <inertia ixx="1e-5" iyy="0.0833333333333" izz="0.0833333333333" ixy="0" ixz="0" iyz="0"/>
      </inertial></link></robot>"""
    model = pin.buildModelFromXML(xml)
    geom = pin.GeometryModel()
    with pytest.raises(InvalidParameter, match="link rod has no child joint; give length="):
        expand_flexible(model, geom, geom, [FlexibleLink("rod", 3, 1e11, 1e-9)])
    # With a length the beam runs through the centre of mass, here along x.
    ex = expand_flexible(model, geom, geom, [FlexibleLink("rod", 3, 1e11, 1e-9, length=1.0)])
    data = ex.model.createData()
    pin.framesForwardKinematics(ex.model, data, pin.neutral(ex.model))
    last = data.oMf[ex.model.getFrameId("rod_sublink_3")].translation
    np.testing.assert_allclose(last, [1.0 - 1.0 / 6.0, 0.0, 0.0], atol=1e-15)


def test_link_attached_by_fixed_joint_is_refused():
    model, visual, collision = load(ARM)
    with pytest.raises(InvalidParameter, match="not the child of a movable joint"):
        expand_flexible(model, visual, collision, [FlexibleLink("tip", 2, 1e11, 1e-9, length=1)])


# -- structure of the expanded model -------------------------------------------------------
@pytest.mark.parametrize("nu", [1, 2, 5])
def test_arm_structure_stiffness_and_geometry(nu):
    model, visual, collision = load(ARM)
    ex = expand_flexible(model, visual, collision, [FlexibleLink("bar", nu, E_STEEL, I_STEEL)])
    names = list(ex.model.names)
    assert names[:2] == ["universe", "hub"] and ex.model.nv == nu + 1
    assert ex.elastic_joints == {"bar": [f"bar_elastic_{k}" for k in range(1, nu + 1)]}
    k_expected = E_STEEL * I_STEEL / (LENGTH / nu)  # (68)
    np.testing.assert_allclose(ex.joint_stiffness, [0.0] + [k_expected] * nu, rtol=1e-14)
    np.testing.assert_array_equal(ex.joint_damping, np.zeros(nu + 1))
    # Nodes at L/2ν + (k-1)L/ν along the bar.
    data = ex.model.createData()
    q0 = pin.neutral(ex.model)
    pin.framesForwardKinematics(ex.model, data, q0)
    for k in range(1, nu + 1):
        x = data.oMi[ex.model.getJointId(f"bar_elastic_{k}")].translation
        np.testing.assert_allclose(x, [LENGTH / (2 * nu) + (k - 1) * LENGTH / nu, 0, 0])
    np.testing.assert_allclose(data.oMf[ex.model.getFrameId("tip")].translation, [2, 0, 0])
    # The tip hangs from the last sublink; the link frame stays at the hub.
    assert ex.model.frames[ex.model.getFrameId("tip")].parentJoint == nu + 1
    assert ex.model.frames[ex.model.getFrameId("bar")].parentJoint == 1
    # The box is cut into one piece per sublink that tiles the bar.
    for geom_model in (ex.visual_model, ex.collision_model):
        geoms = geom_model.geometryObjects
        assert len(geoms) == nu + 1
        gdata = geom_model.createData()
        pin.updateGeometryPlacements(ex.model, data, geom_model, gdata, q0)
        spans = sorted(
            (gdata.oMg[i].translation[0] - g.geometry.halfSide[0], 2 * g.geometry.halfSide[0])
            for i, g in enumerate(geoms)
        )
        pieces = [LENGTH / (2 * nu)] + [LENGTH / nu] * (nu - 1) + [LENGTH / (2 * nu)]
        np.testing.assert_allclose([s[1] for s in spans], pieces, rtol=1e-12)
        np.testing.assert_allclose(
            [s[0] for s in spans], np.concatenate([[0], np.cumsum(pieces)[:-1]]), atol=1e-14
        )


def _total_inertia(model: pin.Model, q: np.ndarray) -> np.ndarray:
    """Dynamic parameters of all bodies expressed in the world (Pinocchio's placements)."""
    data = model.createData()
    pin.forwardKinematics(model, data, q)
    total = np.zeros(10)
    for j in range(1, model.njoints):
        total += data.oMi[j].act(model.inertias[j]).toDynamicParameters()
    return total


@pytest.mark.parametrize("nu", [1, 4])
def test_mass_and_inertia_preserved(nu):
    model, visual, collision = load(ARM)
    # A bar whose URDF inertia is the full box (section rotary inertia included).
    model.inertias[1] = pin.Inertia(
        1.5752,
        np.array([1.0, 0, 0]),
        np.diag([1.5752 * SIDE**2 / 6, 1.5752 * (4 + SIDE**2) / 12, 1.5752 * (4 + SIDE**2) / 12]),
    )
    ex = expand_flexible(model, visual, collision, [FlexibleLink("bar", nu, E_STEEL, I_STEEL)])
    np.testing.assert_allclose(
        _total_inertia(ex.model, pin.neutral(ex.model)),
        _total_inertia(model, pin.neutral(model)),
        rtol=1e-12,
        atol=1e-15,
    )


def test_ur5_spatial_bending_builds_and_keeps_frames():
    path = ur5_path()
    model, visual, collision = load(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ex = expand_flexible(model, visual, collision, ur5_links())
    # The UR5 upper arm's principal axes are not along its (slanted) beam: the clipped part of
    # the "section" inertia is reported.
    assert any("upper_arm_link" in str(w.message) for w in caught)
    assert ex.model.nv == 6 + 3 * 2 + 2 * 3
    assert ex.elastic_joints["forearm_link"][:3] == [
        "forearm_link_elastic_1_bend1",
        "forearm_link_elastic_1_bend2",
        "forearm_link_elastic_1_torsion",
    ]
    rng = np.random.default_rng(3)
    q_rigid = rng.uniform(-2, 2, model.nq)
    q = expand_configuration(model, ex.model, q_rigid)
    np.testing.assert_array_equal(rigid_configuration(ex.model, model, q), q_rigid)
    d_rigid, d_flex = model.createData(), ex.model.createData()
    pin.framesForwardKinematics(model, d_rigid, q_rigid)
    pin.framesForwardKinematics(ex.model, d_flex, q)
    for frame in model.frames:
        new = ex.model.getFrameId(frame.name, frame.type)
        assert d_flex.oMf[new].isApprox(d_rigid.oMf[model.getFrameId(frame.name, frame.type)])
    # Mass and centre of mass of the whole arm are preserved (the inertia grows by the clip).
    total_new = _total_inertia(ex.model, q)
    total_old = _total_inertia(model, q_rigid)
    np.testing.assert_allclose(total_new[:4], total_old[:4], rtol=1e-12, atol=1e-12)
    # Stiffness of each axis: E I / (L/ν) and G J / (L/ν), L from the joint origins.
    length = np.linalg.norm(model.jointPlacements[model.getJointId("wrist_1_joint")].translation)
    k = ex.joint_stiffness[
        [
            ex.model.joints[ex.model.getJointId(n)].idx_v
            for n in ex.elastic_joints["forearm_link"][:3]
        ]
    ]
    np.testing.assert_allclose(k, [7e10 * 2e-8 * 2 / length] * 2 + [2.6e10 * 4e-8 * 2 / length])
    # Bending axes normal to the beam and to each other.
    beam = model.jointPlacements[model.getJointId("wrist_1_joint")].translation / length
    axes = []
    for n in ex.elastic_joints["forearm_link"][:3]:
        jm = ex.model.joints[ex.model.getJointId(n)]
        jd = jm.createData()
        jm.calc(jd, np.zeros(1))
        axes.append(np.asarray(jd.S).reshape(6)[3:])
    np.testing.assert_allclose([axes[0] @ beam, axes[1] @ beam, axes[0] @ axes[1]], 0, atol=1e-12)
    np.testing.assert_allclose(abs(axes[2] @ beam), 1.0, atol=1e-12)
    # Original joints keep rotor data and limits.
    for name in ("shoulder_pan_joint", "elbow_joint", "wrist_3_joint"):
        jo, jn = model.joints[model.getJointId(name)], ex.model.joints[ex.model.getJointId(name)]
        assert ex.model.upperPositionLimit[jn.idx_q] == model.upperPositionLimit[jo.idx_q]
        assert ex.model.upperEffortLimit[jn.idx_v] == model.upperEffortLimit[jo.idx_v]


def test_damping_ratio_is_stiffness_proportional():
    path = ur5_path()
    model, visual, collision = load(path)
    links = ur5_links()
    links[0] = FlexibleLink("upper_arm_link", 3, 7e10, (4e-8, 6e-8), damping_ratio=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ex = expand_flexible(model, visual, collision, links)
    dofs = [
        ex.model.joints[ex.model.getJointId(n)].idx_v for n in ex.elastic_joints["upper_arm_link"]
    ]
    others = np.setdiff1d(np.arange(ex.model.nv), dofs)
    np.testing.assert_array_equal(ex.joint_damping[others], 0.0)
    beta = ex.joint_damping[dofs] / ex.joint_stiffness[dofs]
    np.testing.assert_allclose(beta, beta[0], rtol=1e-14)
    # First mode of the clamped link: ζ = β ω₁ / 2 from an independent eigen-solve.
    data = ex.model.createData()
    mass = pin.crba(ex.model, data, pin.neutral(ex.model))
    mass = np.triu(mass) + np.triu(mass, 1).T
    sub = mass[np.ix_(dofs, dofs)]
    omega2 = np.linalg.eigvals(np.linalg.solve(sub, np.diag(ex.joint_stiffness[dofs]))).real
    np.testing.assert_allclose(beta[0] * np.sqrt(omega2.min()) / 2, 0.05, rtol=1e-9)


def test_load_urdf_reads_the_pinext_block():
    import pinext.robot as robot_module

    robot = robot_module.load_urdf(ARM)
    assert robot.model.nv == 6
    assert [f.link for f in robot.flexible] == ["bar"]
    np.testing.assert_allclose(robot.joint_stiffness[1:], E_STEEL * I_STEEL * 5 / LENGTH)


# -- limiting cases -------------------------------------------------------------------------
def test_one_sublink_frequency_closed_form():
    """ν = 1: two half-length sublinks, one joint at L/2; clamped: ω² = K / (I about the joint)."""
    model, visual, collision = load(ARM)
    ex = expand_flexible(model, visual, collision, [FlexibleLink("bar", 1, E_STEEL, I_STEEL)])
    mass = 0.7876 * LENGTH / 2
    inertia = mass * (LENGTH / 2) ** 2 / 3  # rod of length L/2 about its end
    f = natural_frequencies(Wrap(ex), locked_joints=["hub"])
    np.testing.assert_allclose(f, [np.sqrt(E_STEEL * I_STEEL / LENGTH / inertia) / (2 * np.pi)])


def test_stiff_link_converges_to_the_rigid_one():
    """E = 1e12, 1e13, 1e14 Pa: the hub follows the rigid arm, with an error ∝ 1/E."""
    from pinext.robot import load_urdf
    from pinext.simulation.simulate import simulate

    rigid = load_urdf(ARM, extensions=False)
    ref = simulate(rigid, 0.3, control=np.array([1.0]), output_dt=0.01)
    # Rigid closed form: θ = τ t² / (2 I_hub).
    theta = ref.t**2 / (2 * 1.5752 * LENGTH**2 / 3)
    np.testing.assert_allclose(ref.q[:, 0], theta, rtol=1e-8, atol=1e-14)
    errors = []
    for young in (1e12, 1e13, 1e14):
        robot = load_urdf(ARM, flexible=[FlexibleLink("bar", 2, young, I_STEEL)])
        run = simulate(robot, 0.3, control=np.r_[1.0, 0, 0], output_dt=0.01, rtol=1e-10)
        errors.append(np.abs(run.q[:, 0] - theta).max() / theta[-1])
    assert errors[0] < 0.05 and errors[2] < 5e-4
    assert 5.0 < errors[0] / errors[1] < 40.0 and 5.0 < errors[1] / errors[2] < 40.0


def test_joint_stiffness_1e12_moves_like_the_rigid_link():
    """The issue's limit taken literally: K = 1e12 N.m/rad at every elastic joint. The run is
    short (the elastic modes are near 1e6 rad/s and the integrator is explicit); the hub and
    the tip follow the rigid model up to the elastic scale tau / K = 1e-12 rad."""
    from pinext.robot import load_urdf
    from pinext.simulation.simulate import simulate

    nu = 2
    young = 1e12 * LENGTH / (I_STEEL * nu)  # K = E I / (L / nu) = 1e12
    robot = load_urdf(ARM, flexible=[FlexibleLink("bar", nu, young, I_STEEL)])
    assert np.allclose(robot.joint_stiffness[1:], 1e12)
    rigid = load_urdf(ARM, extensions=False)
    flex = simulate(robot, 1.5e-3, control=np.r_[1.0, 0, 0], output_dt=5e-4, rtol=1e-8)
    ref = simulate(rigid, 1.5e-3, control=np.array([1.0]), output_dt=5e-4)
    assert ref.q[-1, 0] > 5e-7  # the arm moved ...
    assert np.abs(flex.q[:, 0] - ref.q[:, 0]).max() < 1e-11  # ... like the rigid one
    tips = []
    for r, q in ((robot, flex.q[-1]), (rigid, ref.q[-1])):
        data = r.model.createData()
        pin.framesForwardKinematics(r.model, data, q)
        tips.append(data.oMf[r.model.getFrameId("tip")].translation.copy())
    assert np.abs(tips[0] - tips[1]).max() < 1e-11 * LENGTH
