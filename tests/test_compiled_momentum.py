"""The compiled Celentano right-hand side against pinext.dynamics.momentum.momentum_rhs."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pinext.compiled import momentum_rhs, momentum_rhs_crba, pack
from pinext.dynamics import momentum
from pinext.robots import load_robot, robot_names
from tests.models import humanoid, rel, state
from tests.test_compiled_aba import every_joint_tree

EXAMPLE_ROBOTS = ("ur5", "panda", "talos_arm", "solo12")
KERNELS = pytest.mark.parametrize(
    "rhs", [momentum_rhs, momentum_rhs_crba], ids=["aba", "crba_ltdl"]
)


def _worst_errors(
    model: pin.Model, seed: int, rhs=momentum_rhs, states: int = 5
) -> tuple[float, float, float]:
    """Largest relative differences of (v, ṗ) to the Python reference over seeded states
    (random q, τ and p = M v for a random v), and the largest condition number of M met."""
    rng = np.random.default_rng(seed)
    data = model.createData()
    pm = pack(model)
    v_out, p_dot = np.zeros(model.nv), np.zeros(model.nv)
    worst_v = worst_p = cond = 0.0
    for _ in range(states):
        q, v, tau = state(model, rng)
        p = momentum.momentum_from_velocity(model, data, q, 3.0 * v)
        rhs(pm, q, p, 10.0 * tau, v_out, p_dot)
        ref = momentum.momentum_rhs(model, data, q, p, 10.0 * tau)
        worst_v = max(worst_v, rel(v_out, ref.v))
        worst_p = max(worst_p, rel(p_dot, ref.p_dot))
        cond = max(cond, np.linalg.cond(momentum._sym(pin.crba(model, data, q))))
    return worst_v, worst_p, cond


def _tolerance(cond: float) -> float:
    """v = M⁻¹ p by ABA or LTDL here and by Cholesky in the reference: they agree to ~κ(M) ε."""
    return max(1e-12, 50.0 * cond * np.finfo(float).eps)


@KERNELS
@pytest.mark.parametrize("name", robot_names())
def test_project_robots(name, rhs):
    worst_v, worst_p, cond = _worst_errors(load_robot(name).model, seed=1, rhs=rhs)
    assert worst_v < _tolerance(cond) and worst_p < _tolerance(cond)


@KERNELS
@pytest.mark.parametrize("name", EXAMPLE_ROBOTS)
def test_example_robot_data_robots(name, robots_dir, rhs):
    worst_v, worst_p, cond = _worst_errors(load_robot(name).model, seed=2, rhs=rhs)
    assert worst_v < _tolerance(cond) and worst_p < _tolerance(cond)


@KERNELS
def test_every_joint_type_with_armature(rhs):
    """Free-flyer, spherical and planar joints exercise the Euler–Poincaré term ad*_v p."""
    model = every_joint_tree(np.random.default_rng(3))
    model.armature[:] = np.linspace(0.0, 0.3, model.nv)
    worst_v, worst_p, cond = _worst_errors(model, seed=4, rhs=rhs)
    assert worst_v < _tolerance(cond) and worst_p < _tolerance(cond)


@KERNELS
def test_sample_humanoid(rhs):
    worst_v, worst_p, cond = _worst_errors(humanoid(), seed=5, rhs=rhs)
    assert worst_v < _tolerance(cond) and worst_p < _tolerance(cond)


def test_momentum_rate_equals_the_equations_of_motion():
    """ṗ = M v̇ + Ṁ v, with v̇ = aba(q, v, τ) and Ṁ v by finite differences of M along v
    (Euclidean joints): an independent check of ∂T/∂q through the Euler–Lagrange equations."""
    model = load_robot("six_dof_arm").model
    data = model.createData()
    rng = np.random.default_rng(6)
    q, v, tau = state(model, rng)
    pm = pack(model)
    p = momentum.momentum_from_velocity(model, data, q, v)
    v_out, p_dot = np.zeros(model.nv), np.zeros(model.nv)
    momentum_rhs(pm, q, p, tau, v_out, p_dot)
    h = 1e-5
    m_plus = momentum._sym(pin.crba(model, data, q + h * v).copy())
    m_minus = momentum._sym(pin.crba(model, data, q - h * v).copy())
    m_dot_v = (m_plus - m_minus) @ v / (2 * h)
    expected = momentum._sym(pin.crba(model, data, q)) @ pin.aba(model, data, q, v, tau) + m_dot_v
    assert rel(p_dot, expected) < 1e-8  # central difference, error ~ h² |M'''| |v|³
