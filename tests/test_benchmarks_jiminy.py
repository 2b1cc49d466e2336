"""The URDF that the benchmarks hand to Jiminy is the Pinocchio model they simulate.

``benchmarks/_jiminy_peer.py`` writes a URDF of the flexible arm and of the reduced Panda (with
a rotor link per joint for the elastic drives); read back by Pinocchio's own URDF parser it must
give the same joint placements, axes, inertias and damping (1e-12), the same dynamics (ABA,
CRBA at seeded random states) and, for the rotors, links without inertia hinged at the link
joints. Jiminy itself is not started here (it lives in its own venv).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from pinext.flexible import FlexibleLink
from pinext.robot import load_urdf
from pinext.robots import robot_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _jiminy_peer import chain_urdf, joint_axis, rotation_stiffness, rotor_link  # noqa: E402

TOL = 1e-12


def flexible_arm() -> pin.Model:
    bar = FlexibleLink("bar", 10, 1e11, 0.01**4 / 12)
    return load_urdf(robot_path("flexible_arm"), flexible=[bar]).model


def reduced_panda(robots_dir: Path) -> pin.Model:
    full = pin.buildModelFromUrdf(str(robots_dir / "panda_description/urdf/panda.urdf"))
    fingers = [full.getJointId(n) for n in ("panda_finger_joint1", "panda_finger_joint2")]
    return pin.buildReducedModel(full, fingers, pin.neutral(full))


def assert_same_joint(source: pin.Model, j: int, written: pin.Model, i: int) -> None:
    assert source.names[j] == written.names[i]
    placement = written.jointPlacements[i]
    np.testing.assert_allclose(
        placement.homogeneous, source.jointPlacements[j].homogeneous, rtol=0, atol=TOL
    )
    np.testing.assert_allclose(
        joint_axis(written.joints[i]), joint_axis(source.joints[j]), rtol=0, atol=TOL
    )
    a, b = written.inertias[i], source.inertias[j]
    assert abs(a.mass - b.mass) <= TOL * max(1.0, b.mass)
    np.testing.assert_allclose(a.lever, b.lever, rtol=0, atol=TOL)
    np.testing.assert_allclose(a.inertia, b.inertia, rtol=0, atol=TOL * max(1.0, b.mass))
    assert written.damping[written.joints[i].idx_v] == pytest.approx(
        source.damping[source.joints[j].idx_v], abs=TOL
    )


def assert_same_dynamics(source: pin.Model, written: pin.Model, seed: int) -> None:
    """ABA and CRBA of both models at random states (an independent check of the whole
    chain: placements compose, inertias are expressed where Pinocchio expects them)."""
    rng = np.random.default_rng(seed)
    d1, d2 = source.createData(), written.createData()
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, source.nq)
        v = rng.uniform(-1.0, 1.0, source.nv)
        tau = rng.uniform(-1.0, 1.0, source.nv)
        a1 = pin.aba(source, d1, q, v, tau)
        a2 = pin.aba(written, d2, q, v, tau)
        np.testing.assert_allclose(a2, a1, rtol=1e-10, atol=1e-10 * np.abs(a1).max())
        m1 = pin.crba(source, d1, q)
        m2 = pin.crba(written, d2, q)
        np.testing.assert_allclose(m2, m1, rtol=0, atol=1e-12 * np.abs(m1).max())


def test_flexible_arm_round_trip():
    source = flexible_arm()
    written = pin.buildModelFromXML(chain_urdf(source))
    assert written.njoints == source.njoints
    for j in range(1, source.njoints):
        assert_same_joint(source, j, written, j)
        assert written.parents[j] == source.parents[j]
    assert_same_dynamics(source, written, seed=3)


def test_panda_with_rotors_round_trip(robots_dir):
    source = reduced_panda(robots_dir)
    written = pin.buildModelFromXML(chain_urdf(source, rotors=True))
    assert written.njoints == 2 * source.njoints - 1
    link_ids = [written.getJointId(source.names[j]) for j in range(1, source.njoints)]
    for j, i in enumerate(link_ids, start=1):
        assert_same_joint(source, j, written, i)
        parent = source.parents[j]
        expected = 0 if parent == 0 else written.getJointId(source.names[parent])
        assert written.parents[i] == expected
        rotor = written.getJointId(f"rotor{j}")
        assert written.parents[rotor] == expected
        np.testing.assert_allclose(
            written.jointPlacements[rotor].homogeneous,
            source.jointPlacements[j].homogeneous,
            rtol=0,
            atol=TOL,
        )
        np.testing.assert_allclose(
            joint_axis(written.joints[rotor]), joint_axis(source.joints[j]), rtol=0, atol=0
        )
        assert written.inertias[rotor].mass == 0.0
        assert np.abs(written.inertias[rotor].inertia).max() == 0.0
        assert written.existFrame(rotor_link(j))
    # the rotors add no inertia: the link rows of the mass matrix are the source's
    rng = np.random.default_rng(5)
    q = rng.uniform(-1.0, 1.0, written.nq)
    rows = [written.joints[i].idx_v for i in link_ids]
    m_written = pin.crba(written, written.createData(), q)[np.ix_(rows, rows)]
    q_source = q[[written.joints[i].idx_q for i in link_ids]]
    m_source = pin.crba(source, source.createData(), q_source)
    np.testing.assert_allclose(m_written, m_source, rtol=0, atol=1e-12 * np.abs(m_source).max())


def test_coupling_stiffness_is_about_the_joint_axis():
    model = flexible_arm()
    assert rotation_stiffness(model, 2, 7.0) == [0.0, 0.0, 0.0, 0.0, 0.0, 7.0]


def test_non_revolute_joint_is_refused():
    model = pin.Model()
    model.addJoint(0, pin.JointModelPX(), pin.SE3.Identity(), "slider")
    with pytest.raises(ValueError, match="only revolute"):
        chain_urdf(model)
