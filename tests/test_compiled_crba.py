"""The compiled CRBA and LTDL factorisation against Pinocchio's crba and numpy's solve."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pinext.compiled import crba, ltdl, ltdl_solve, pack
from pinext.robots import load_robot, robot_names
from tests.models import humanoid, rel, state
from tests.test_compiled_aba import every_joint_tree


def _models() -> list[tuple[str, pin.Model]]:
    tree = every_joint_tree(np.random.default_rng(3))
    tree.armature[:] = np.linspace(0.0, 0.3, tree.nv)
    rows = [(name, load_robot(name).model) for name in robot_names()]
    return [*rows, ("every-joint tree", tree), ("humanoid", humanoid())]


@pytest.mark.parametrize(
    ("name", "model"), _models(), ids=lambda x: x if isinstance(x, str) else ""
)
def test_crba_and_ltdl_solve(name, model):
    rng = np.random.default_rng(7)
    data = model.createData()
    pm = pack(model)
    mass = np.zeros((model.nv, model.nv))
    for _ in range(4):
        q, _, b = state(model, rng)
        crba(pm, q, mass)
        ref = pin.crba(model, data, q)
        ref = np.triu(ref) + np.triu(ref, 1).T  # Pinocchio fills the upper triangle
        assert rel(mass, ref) < 1e-12
        x = b.copy()
        ltdl(pm, mass)
        ltdl_solve(pm, mass, x)
        tol = max(1e-12, 50.0 * np.linalg.cond(ref) * np.finfo(float).eps)
        assert rel(x, np.linalg.solve(ref, b)) < tol


def test_crba_on_a_real_arm_with_armature(robots_dir):
    model = load_robot("panda").model
    model.armature[:] = 0.2
    pm = pack(model)
    q, _, _ = state(model, np.random.default_rng(8))
    mass = np.zeros((model.nv, model.nv))
    crba(pm, q, mass)
    ref = pin.crba(model, model.createData(), q)
    assert rel(mass, np.triu(ref) + np.triu(ref, 1).T) < 1e-12
