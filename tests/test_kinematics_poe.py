"""Product-of-exponentials kinematics (Negrean et al. 2009, §1) against Pinocchio."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.exceptions import InvalidParameter, NameNotFound
from pinext.planning import poe_forward_kinematics, poe_jacobian, screw_axes

from .conftest import URDF
from .models import panda, state, ur5

REFERENCES = (pin.WORLD, pin.LOCAL_WORLD_ALIGNED, pin.LOCAL)


def _max_errors(model: pin.Model, seed: int, samples: int = 4) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    data = model.createData()
    screws = screw_axes(model)
    fk, jac = 0.0, 0.0
    for _ in range(samples):
        q = state(model, rng)[0]
        pin.computeJointJacobians(model, data, q)
        pin.updateFramePlacements(model, data)
        for f in range(model.nframes):
            placement = poe_forward_kinematics(model, q, f, screws=screws)
            fk = max(fk, np.abs(placement.homogeneous - data.oMf[f].homogeneous).max())
            for ref in REFERENCES:
                ref_jac = pin.getFrameJacobian(model, data, f, ref)
                jac = max(
                    jac, np.abs(poe_jacobian(model, q, f, ref, screws=screws) - ref_jac).max()
                )
    return fk, jac


@pytest.mark.parametrize("path", sorted(URDF.glob("*.urdf")), ids=lambda p: p.stem)
def test_project_robots_match_pinocchio(path: Path) -> None:
    fk, jac = _max_errors(px.load_urdf(path).model, seed=1)
    assert fk < 1e-12 and jac < 1e-12


@pytest.mark.parametrize("which", ["ur5", "panda"])
def test_ur5_and_panda_match_pinocchio(which: str, robots_dir: Path) -> None:
    model = ur5(robots_dir) if which == "ur5" else panda(robots_dir)
    fk, jac = _max_errors(model, seed=2)
    assert fk < 1e-12 and jac < 1e-12


def test_screw_axes_of_the_2tr_robot() -> None:
    """Negrean et al. (2009) Fig. 2: two translations (x, z), one rotation about z."""
    screws = screw_axes(px.load_urdf(URDF / "twotr.urdf").model)
    np.testing.assert_allclose(screws.axes[1], [1, 0, 0, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(screws.axes[2], [0, 0, 1, 0, 0, 0], atol=1e-15)
    np.testing.assert_allclose(screws.axes[3][3:], [0, 0, 1], atol=1e-15)
    assert screws.revolute.tolist() == [False, False, False, True]


def test_errors_name_what_is_valid() -> None:
    model = px.load_urdf(URDF / "planar3r.urdf").model
    with pytest.raises(NameNotFound, match="Available frame names"):
        poe_forward_kinematics(model, np.zeros(3), "nope")
    with pytest.raises(InvalidParameter, match="expected \\(3,\\)"):
        poe_jacobian(model, np.zeros(2), "tool")
    with pytest.raises(InvalidParameter, match="one-DOF joints"):
        screw_axes(pin.buildSampleModelHumanoid())
