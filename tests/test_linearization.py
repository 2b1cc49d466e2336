"""Linear models of Systems: analytic A, B against central differences of the right-hand side,
closed forms (natural frequencies, two-mass drive, DC motor on an inertia, pendulum), the
linear response against simulate, outputs, conversions and bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import scipy.linalg

import pinext as px
from pinext.drives import DCMotor, Drive, ElasticTransmission, Gear
from pinext.exceptions import (
    InvalidParameter,
    MissingDependency,
    NameNotFound,
    NotAtEquilibrium,
    PinextError,
)
from pinext.linear_models import STEP_ERROR, equilibrium

from .conftest import pendulum_urdf

BOTH_PATHS = False  # simulate is the reference here; the compiled path is checked elsewhere

G = 9.81


def _robot(tmp_path: Path, n: int = 1, length: float = 0.5, mass: float = 2.0, damping=0.0):
    path = tmp_path / f"pendulum{n}.urdf"
    path.write_text(pendulum_urdf(n=n, length=length, mass=mass, damping=damping))
    return px.load_urdf(path)


def _pivot_inertia(length: float, mass: float) -> float:
    """A rod of the conftest pendulum about its joint (iyy = m L²/12, centre at L/2)."""
    return mass * length**2 / 12 + mass * (length / 2) ** 2


def _agree(
    analytic: px.LinearModel,
    central: px.LinearModel,
    bound: float,
    terms: np.ndarray | None = None,
) -> float:
    """The largest difference of [A B] over the scale of the terms each row sums (the
    scale the difference's error is relative to); asserts it is below ``bound``. ``terms``
    (shape (n,)): the size of terms a row sums that cancel in its result (a reaction against
    the efforts on a held joint), when larger than the result's own."""
    ab_a = np.hstack((analytic.A, analytic.B))
    ab_c = np.hstack((central.A, central.B))
    n = analytic.A.shape[0]
    scales = np.concatenate(
        (
            np.maximum(1.0, np.abs(_deviation_scale(analytic))),
            np.maximum(1.0, np.abs(analytic.u0)),
        )
    )
    rows = np.abs(ab_c) @ scales + 1e-300
    if terms is not None:
        rows = np.maximum(rows, terms)
    worst = float((np.abs(ab_a - ab_c) @ scales / rows).max())
    assert worst < bound, worst
    assert n == len(analytic.state_names)
    return worst


def _deviation_scale(model: px.LinearModel) -> np.ndarray:
    """|x0| over the deviation's entries (tangent configuration entries 1)."""
    n = model.A.shape[0]
    nv = sum(name.startswith("v:") for name in model.state_names)
    tail = model.x0[model.x0.size - 2 - (n - nv) : model.x0.size - 2]
    head = np.ones(nv)
    if all(name.startswith("q:") for name in model.state_names[:nv]):
        head = model.x0[:nv]
    return np.concatenate((head, tail))


def _both(system, x, u=None, **kw):
    return (
        px.linearize(system, x, u, method="analytic", **kw),
        px.linearize(system, x, u, method="central", **kw),
    )


# -- analytic against the central difference of the right-hand side ------------------------
def test_open_chain_analytic_equals_central_difference(tmp_path):
    robot = _robot(tmp_path, n=3, length=0.4, mass=1.0, damping=0.3)
    system = px.System(robot, joint_limits=False)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = system.initial_state(rng.uniform(-2, 2, 3), rng.uniform(-3, 3, 3))
        analytic, central = _both(system, x, rng.uniform(-5, 5, 3))
        assert analytic.method == "analytic" and central.method == "central difference"
        # the difference's own bound: ~eps^(2/3) = 4e-11 of the row's terms, 100 x headroom
        _agree(analytic, central, 100 * STEP_ERROR)


def test_panda_with_elastic_drives_analytic_equals_central_difference(panda):
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, viscous_friction=1e-5)
    drives = {j: Drive(motor, ElasticTransmission(100.0, 3000.0, 0.5)) for j in joints}
    system = px.System(panda, drives=drives, mimic=False, joint_limits=False)
    rng = np.random.default_rng(2)
    q = pin.randomConfiguration(system.model)
    v = rng.uniform(-1, 1, system.model.nv)
    x = system.initial_state(q, v)
    x[system.layout["drives.motor_angle"]] = 100 * q[:7] + rng.uniform(-0.01, 0.01, 7)
    x[system.layout["drives.motor_velocity"]] = 100 * v[:7] + rng.uniform(-1, 1, 7)
    analytic, central = _both(system, x, rng.uniform(-5, 5, 7))
    assert analytic.notes == ()  # the engine's identified linear form: nothing differenced
    _agree(analytic, central, 100 * STEP_ERROR)
    assert analytic.state_names[-1] == "drives.motor_velocity[panda_joint7]"
    assert analytic.input_names[0] == "drives.panda_joint1.voltage"
    assert analytic.input_units[0] == "V" and analytic.state_units[-1] == "rad/s"


def test_rigid_gears_and_inductances_analytically(tmp_path):
    """Rigid gears reflect the rotors into the model's armature (ABA's derivatives see them);
    the currents are states of their own."""
    robot = _robot(tmp_path, n=2, length=0.3, mass=1.0)
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, inductance=1e-3)
    system = px.System(
        robot, drives={"j0": Drive(motor, Gear(50.0)), "j1": Drive(motor, Gear(30.0))}
    )
    rng = np.random.default_rng(3)
    x = system.initial_state(rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2))
    x[system.layout["drives.current"]] = rng.uniform(-1, 1, 2)
    analytic, central = _both(system, x, rng.uniform(-10, 10, 2))
    _agree(analytic, central, 100 * STEP_ERROR)
    assert analytic.state_units[-1] == "A"


def test_a_saturated_amplifier_analytically(tmp_path):
    """A 3 V amplifier (``voltage_limit``) in front of each motor: the phase stays linear in the
    clipped voltage, so the model is analytic; a voltage inside the limit acts (B as the
    central difference), one beyond it moves nothing (its column of B zero)."""
    robot = _robot(tmp_path, n=2, length=0.3, mass=1.0)
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, voltage_limit=3.0)
    system = px.System(
        robot, drives={"j0": Drive(motor, Gear(50.0)), "j1": Drive(motor, Gear(30.0))}
    )
    rng = np.random.default_rng(5)
    x = system.initial_state(rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2))
    u = np.array([1.5, -7.0])  # inside, beyond
    analytic, central = _both(system, x, u)
    _agree(analytic, central, 100 * STEP_ERROR)
    assert not analytic.notes  # no central difference taken
    assert np.abs(analytic.B[:, 0]).max() > 1.0 and not analytic.B[:, 1].any()


def test_flexible_arm_analytic_equals_central_difference():
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    system = px.System(robot, joint_limits=False)
    rng = np.random.default_rng(4)
    x = system.initial_state(rng.uniform(-0.1, 0.1, 6), rng.uniform(-1, 1, 6))
    analytic, central = _both(system, x, rng.uniform(-1, 1, 6))
    _agree(analytic, central, 100 * STEP_ERROR)


def test_elastic_support_analytic_equals_central_difference_at_its_sag():
    """The six-DOF arm on a support with coupled stiffness and damping: linearized at the
    sag that Newton finds under gravity (an equilibrium the check confirms)."""
    robot = px.load_urdf(px.robot_path("six_dof_arm"))
    stiffness = np.array([[2e5, 1e3], [1e3, 4e4]])
    support = px.ElasticSupport(stiffness, damping=np.diag([50.0, 10.0]), axes=("z", "rx"))
    system = px.System(px.add_support(robot, support), joint_limits=False)
    nv = system.model.nv
    u0 = pin.computeGeneralizedGravity(system.model, system.model.createData(), system.q_rest)
    u0[:2] = 0.0  # the arm's joints held by torques, the support by its springs
    x0 = equilibrium(system, None, u0)
    assert abs(x0[0]) > 1e-6  # it sags
    analytic = px.linearize(system, x0, u0, method="analytic", require_equilibrium=True)
    central = px.linearize(system, x0, u0, method="central")
    _agree(analytic, central, 100 * STEP_ERROR)
    assert analytic.A.shape == (2 * nv, 2 * nv)


def test_free_flyer_is_linearized_in_the_tangent_space():
    model = pin.buildSampleModelHumanoidRandom()
    model.lowerPositionLimit[:7] = -1.0
    model.upperPositionLimit[:7] = 1.0
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5)
    joints = [name for name in model.names[2:] if model.joints[model.getJointId(name)].nv == 1]
    drives = {joints[0]: Drive(motor, ElasticTransmission(50.0, 800.0, 0.2))}
    drives[joints[3]] = Drive(motor, Gear(30.0))
    system = px.System(px.Robot.from_model(model), drives=drives, joint_limits=False)
    rng = np.random.default_rng(5)
    q = pin.randomConfiguration(model)
    x = system.initial_state(q, rng.uniform(-1, 1, model.nv))
    x[system.layout["drives.motor_angle"]] = rng.uniform(-1, 1)
    analytic, central = _both(system, x, rng.uniform(-1, 1, 2))
    # curved: the engine's linear form does not apply, the drives' terms are differenced
    assert any("central differences" in note for note in analytic.notes)
    assert analytic.A.shape == (2 * model.nv + 2, 2 * model.nv + 2)  # + the motor angle, speed
    assert analytic.state_names[0] == "dq:root_joint[x]"
    assert analytic.state_names[5] == "dq:root_joint[rz]"
    # the moving base's chart term d/dδq (∂difference/∂q1 · v) is differenced in both
    assert np.abs(analytic.A[:6, :6]).max() > 0.01
    _agree(analytic, central, 100 * STEP_ERROR)


def test_a_closed_loop_analytic_equals_central_difference():
    """The four-bar's loop (a constrained phase): Pinocchio's RNEA derivatives and one KKT
    solve, the rows' terms differenced, against the difference of the whole constrained step;
    the Panda with its mimic fingers, one of them on its stop, the same."""
    urdf = Path(__file__).resolve().parents[1] / "examples" / "four_bar.urdf"
    system = px.System(px.load_urdf(urdf))
    x = px.close_loops(system, np.array([0.0, 1.5, 1.5]))  # a closed rest state
    analytic, central = _both(system, x, np.array([0.5, -0.2, 0.1]))
    assert analytic.method == "analytic"
    assert any("constrained phase (rows of pivot)" in note for note in analytic.notes)
    assert any("(asked for)" in note for note in central.notes)
    _agree(analytic, central, 100 * STEP_ERROR)


def _kkt_terms(system: px.System, x: np.ndarray, u: np.ndarray, columns: int) -> np.ndarray:
    """The size of the terms each acceleration row sums in a constrained step, through its
    solve (componentwise, as rounding enters them): ``a = M⁻¹ (τ − h) + M⁻¹ Jᵀ λ`` with
    ``λ = −S⁻¹ (J M⁻¹ (τ − h) + γ)``, ``S = J M⁻¹ Jᵀ``; times ``columns``, the columns each
    scaled row of [A B] sums (the argument ``terms`` of :func:`_agree`)."""
    model = system.model
    phase = system.initial_phase(0.0, x, u)
    rows = system.trial(0.0, phase, system.components[0], u).rows(x)
    step = system.acceleration_step(phase)(0.0, x, u)
    q, v = system.split(x)
    data = model.createData()
    mass = pin.crba(model, data, q)
    inverse = np.linalg.inv(np.triu(mass) + np.triu(mass, 1).T)
    jacobian = np.vstack([r.jacobian for _, r in rows])
    drift = np.concatenate([r.drift for _, r in rows])
    efforts = np.abs(step.tau) + np.abs(pin.nonLinearEffects(model, data, q, v))
    schur = np.linalg.inv(jacobian @ inverse @ jacobian.T)
    reactions = np.abs(schur) @ (np.abs(jacobian) @ np.abs(inverse) @ efforts + np.abs(drift))
    summed = np.abs(inverse) @ (efforts + np.abs(jacobian.T) @ reactions)
    nv = model.nv
    terms = np.zeros(system.nx - 2 - model.nq + nv)
    terms[nv : 2 * nv] = columns * summed
    return terms


def test_two_arms_holding_a_box_analytic_equals_central_difference():
    """Two six-DOF arms welded to a free box (two loops, 12 rows on 18 DOFs, a free flyer):
    the constrained phase's analytic model against the central difference of the whole
    constrained step at seeded random closed states. The box's accelerations come from the
    grips' reactions, which the step solves through ``S = J M⁻¹ Jᵀ`` (condition ~3e4 here):
    the difference's rounding is ε^(2/3) of the terms summed through that solve."""
    from .test_assembly import two_arms_holding_a_box

    system, _, x0 = two_arms_holding_a_box()
    q0, _ = system.split(x0)
    rng = np.random.default_rng(61)
    for _ in range(2):
        q = q0.copy()
        q[:12] += rng.normal(scale=0.05, size=12)
        x = px.close_loops(system, q, rng.normal(scale=0.5, size=system.model.nv))
        u = rng.uniform(-5, 5, system.n_inputs)
        analytic, central = _both(system, x, u)
        assert analytic.method == "analytic"
        assert any("rows of left grip, right grip" in note for note in analytic.notes)
        n = analytic.A.shape[0]
        assert n == 2 * system.model.nv  # the tangent space: the box's quaternion as 3 DOFs
        terms = _kkt_terms(system, x, u, n + system.n_inputs)
        _agree(analytic, central, 100 * STEP_ERROR, terms)


def test_panda_with_mimic_fingers_on_a_stop_analytic_equals_central_difference(panda):
    from pinext.contact.limits import JointLimitWarning

    system = px.System(panda)
    with pytest.warns(JointLimitWarning, match="panda_joint4"):
        x = system.initial_state()  # the neutral pose's joint 4 is outside its range
    analytic, central = _both(system, x)
    assert any("rows of joint_limits, mimic" in note for note in analytic.notes)
    _agree(analytic, central, 100 * STEP_ERROR)


def test_constant_rows_in_closed_form_equal_the_central_difference(panda):
    """The Panda with seven elastic drives, its mimic fingers and a joint pressed onto its
    stop by its transmission, from a seeded random pose: the rows' own terms in closed form
    (constant Jacobians, Baumgarte's γ linear in q and v: nothing differenced) agree with the
    central difference of the whole constrained step to the difference's own bound."""
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5, viscous_friction=1e-5)
    drives = {j: Drive(motor, ElasticTransmission(100.0, 3000.0, 0.5)) for j in joints}
    system = px.System(panda, drives=drives)
    model = system.model
    rng = np.random.default_rng(11)
    low, high = model.lowerPositionLimit, model.upperPositionLimit
    q = low + (high - low) * rng.uniform(0.2, 0.8, model.nq)
    v = rng.uniform(-1, 1, model.nv)
    k = int(rng.integers(7))  # this joint on its lower stop, at rest
    q[k], v[k] = low[k], 0.0
    q[8], v[8] = q[7], v[7]  # the fingers on their coupling
    x = system.initial_state(q, v)
    push = np.zeros(7)
    push[k] = -0.05  # the transmission's spring presses the joint onto its stop
    x[system.layout["drives.motor_angle"]] = 100 * (q[:7] + push) + rng.uniform(-0.01, 0.01, 7)
    x[system.layout["drives.motor_velocity"]] = 100 * v[:7] + rng.uniform(-1, 1, 7)
    u = rng.uniform(-5, 5, 7)
    analytic, central = _both(system, x, u)
    assert analytic.method == "analytic"
    (note,) = analytic.notes
    assert "rows of joint_limits, mimic" in note and "in closed form" in note, note
    phase = system.initial_phase(0.0, x, u)
    rows = system.trial(0.0, phase, system.components[0], u).rows(x)
    assert [name for name, _ in rows] == ["joint_limits", "mimic:panda_finger_joint2"]
    assert rows[0][1].jacobian[0, k] == 1.0  # the joint's stop is a row of the phase
    # the difference's bound: ~eps^(2/3) of the terms each row sums, 100 x headroom; an
    # acceleration sums M⁻¹ (τ − h) and M⁻¹ Jᵀ λ, which cancel on the held joint's row
    step = system.acceleration_step(phase)(0.0, x, u)
    data = model.createData()
    mass = pin.crba(model, data, q)
    inverse = np.abs(np.linalg.inv(np.triu(mass) + np.triu(mass, 1).T))
    jacobian = np.vstack([r.jacobian for _, r in rows])
    forces = np.concatenate([step.forces[name] for name, _ in rows])
    bias = pin.nonLinearEffects(model, data, q, v)
    summed = inverse @ (np.abs(step.tau) + np.abs(bias)) + inverse @ np.abs(jacobian.T) @ np.abs(
        forces
    )
    terms = np.zeros(analytic.A.shape[0])
    terms[9:18] = (analytic.A.shape[0] + 7) * summed  # each column's error: eps^(2/3) of them
    _agree(analytic, central, 100 * STEP_ERROR, terms)
    # again from the rows' forms kept for the phase (CRBA, no kinematics): the same to rounding
    again = px.linearize(system, x, u, method="analytic")
    for new, first in ((again.A, analytic.A), (again.B, analytic.B)):
        assert np.abs(new - first).max() <= 1e-12 * np.abs(first).max()


def test_a_moving_lossy_gear_is_analytic_and_backlash_is_differenced_and_says_so(tmp_path):
    """A lossy gear in a moving mode acts linearly (``e N τ_s``, its rotor's ``e J N²`` an
    added inertia of the step's model): analytic, equal to the central difference; a gear
    in its backlash drives its motor's state through the joint's acceleration: differenced,
    and the model says why."""
    robot = _robot(tmp_path, n=1)
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5)
    lossy = px.System(robot, drives={"j0": Drive(motor, Gear(50.0, efficiency=0.8))})
    x = lossy.initial_state(np.array([0.3]), np.array([0.5]))
    analytic, central = _both(lossy, x, [3.0])
    assert analytic.method == "analytic"
    _agree(analytic, central, 100 * STEP_ERROR)
    play = px.System(robot, drives={"j0": Drive(motor, Gear(50.0, backlash=0.01))})
    x = play.initial_state(np.array([0.3]), np.array([0.5]))
    x[play.layout["drives.play_angle"]] = 0.0  # the motor in the middle of the play
    model = px.linearize(play, x, [3.0])
    assert model.method == "central difference"
    assert any("drives's states in its mode" in note for note in model.notes)
    with pytest.raises(InvalidParameter, match="driven by the accelerations.*'auto' or 'central'"):
        px.linearize(play, x, [3.0], method="analytic")


def test_a_component_without_derivatives_is_differenced_and_says_so(tmp_path):
    """A user's component with a nonlinear effort and no derivative of its own (a hardening
    spring −k₃ q³, ``Component.linear`` left False): the model takes the central difference
    of the right-hand side, says so naming the component, and refuses ``method='analytic'``;
    its A is the closed form ∂q̈/∂q = −(m g L/2 cos q₀ + 3 k₃ q₀²) / I, ∂q̇/∂q̇ = −c / I to
    the difference's bound (ε^(2/3) of the terms summed)."""
    length, mass, c, k3, q0 = 0.5, 2.0, 0.3, 40.0, 0.4

    class HardeningSpring(px.Component):
        name = "hardening spring"

        def effort(self, t, x, q, v, u, mode):
            return -k3 * q**3

    robot = _robot(tmp_path, n=1, length=length, mass=mass, damping=c)
    system = px.System(robot, components=[HardeningSpring()], joint_limits=False)
    x = system.initial_state(np.array([q0]), np.array([0.7]))
    model = px.linearize(system, x, [0.2])
    assert model.method == "central difference"
    (note,) = model.notes
    assert "central differences" in note and "hardening spring is not linear" in note, note
    assert "no derivative of its own" in note
    with pytest.raises(InvalidParameter, match="hardening spring is not linear.*'central'"):
        px.linearize(system, x, [0.2], method="analytic")
    inertia = _pivot_inertia(length, mass)
    stiffness = mass * G * length / 2 * np.cos(q0) + 3 * k3 * q0**2
    expected = np.array([[0.0, 1.0], [-stiffness / inertia, -c / inertia]])
    scale = (mass * G * length / 2 + k3 * (1 + 3 * q0**2) + c) / inertia  # the terms summed
    assert np.abs(model.A - expected).max() < 100 * STEP_ERROR * scale
    assert model.B[1, 0] == pytest.approx(1 / inertia, rel=100 * STEP_ERROR)


def test_a_loop_in_independent_coordinates_keeps_the_physical_poles():
    """The four-bar at an equilibrium found through its loop: the full model has the
    linkage's pair and the drift stabilization's poles; the model in independent coordinates
    (McClamroch 1986) keeps the pair alone, symmetric (a conservative linkage)."""
    urdf = Path(__file__).resolve().parents[1] / "examples" / "four_bar.urdf"
    system = px.System(px.load_urdf(urdf))
    start = px.close_loops(system, np.array([0.0, 1.5, 1.5]))
    x0 = equilibrium(system, start)
    full = px.linearize(system, x0, require_equilibrium=True)
    reduced = px.linearize(system, x0, coordinates="independent")
    assert reduced.state_names == ("q:crank_joint", "v:crank_joint")
    assert any("independent coordinates" in note for note in reduced.notes)
    pair = np.sort_complex(reduced.poles())
    assert abs(pair[0] + pair[1]) < 1e-6 * abs(pair[0])
    distance = np.abs(full.poles()[:, None] - pair[None, :]).min(axis=0)
    assert np.all(distance < 1e-7 * np.abs(pair)), distance
    with pytest.raises(InvalidParameter, match="valid: full, independent"):
        px.linearize(system, x0, coordinates="reduced")


def test_a_held_contact_is_differenced_and_its_inputs_keep_the_contact():
    """A pen held on a plane (a bilateral row): the input matrix's accelerations lie in the
    row's null space, J ∂a/∂u = 0, as the constrained step (20.88)–(20.89) makes them."""
    from pinext.contact import Contact, consistent_initial_state, plane
    from pinext.contact.constrained import InconsistentInitialConditionsWarning
    from pinext.simulation.controls import as_control

    from ._contact_models import arm

    contact = Contact(plane("pen_tip", (0, 0, 0.3)), unilateral=False)
    system = px.System(px.Robot.from_model(arm()), contacts=[contact], joint_limits=False)
    with pytest.warns(InconsistentInitialConditionsWarning):
        x = consistent_initial_state(system, np.array([0.3, 0.7, 1.2, 0.2, 0.9, 0.1]), np.zeros(6))
    u = np.random.default_rng(7).uniform(-1, 1, 6)
    model = px.linearize(system, x, u)
    assert model.method == "analytic"
    assert any("rows of contact" in note for note in model.notes)
    _agree(model, px.linearize(system, x, u, method="central"), 100 * STEP_ERROR)
    phase = system.initial_phase(0.0, x, u)
    rows = system.trial(0.0, phase, system.components[0], as_control(u, 6)).rows(x)
    jacobian = np.vstack([r.jacobian for _, r in rows])
    accelerations = model.B[6:12]
    # the difference's bound: eps^(2/3) of the terms, |J| |B| of them
    bound = 100 * STEP_ERROR * np.abs(jacobian).max() * np.abs(accelerations).max()
    assert np.abs(jacobian @ accelerations).max() < bound


def test_a_pressed_contact_row_differenced_over_q_alone():
    """A pen pressed onto a fixed plane by gravity (a unilateral contact, closed: the normal
    row of its compiled form, whose Jacobian is the gradient of its gap): its terms are
    differenced over q alone, ∂(J̇ v)/∂v = 2 ∂(J v₀)/∂q from the same evaluations; equal to the
    central difference of the whole constrained step to the difference's bound."""
    from pinext.contact import Contact, consistent_initial_state, plane
    from pinext.contact.constrained import InconsistentInitialConditionsWarning

    from ._contact_models import arm

    system = px.System(
        px.Robot.from_model(arm()), contacts=[Contact(plane("pen_tip", (0, 0, 0.3)))],
        joint_limits=False,
    )  # fmt: skip
    rng = np.random.default_rng(8)
    q = np.array([0.3, 0.7, 1.2, 0.2, 0.9, 0.1]) + rng.uniform(-0.05, 0.05, 6)
    with pytest.warns(InconsistentInitialConditionsWarning):
        x = consistent_initial_state(system, q, rng.uniform(-0.5, 0.5, 6))
    u = rng.uniform(-1, 1, 6)
    analytic, central = _both(system, x, u)
    assert any("rows' own terms of contact by central" in note for note in analytic.notes)
    _agree(analytic, central, 100 * STEP_ERROR)
    from pinext.simulation.caches import cache

    (treatment,) = [
        t for k, t in cache(system, "linear_models").items() if k[:2] == ("rows", "contact")
    ]
    assert treatment[1].size == 6 and treatment[2] is not None  # the q columns, J = ∇φ


# -- closed forms --------------------------------------------------------------------------
def test_undamped_eigenvalues_equal_natural_frequencies():
    robot = px.load_urdf(px.robot_path("flexible_arm"))
    system = px.System(robot, joint_limits=False)
    model = px.linearize(system, system.initial_state(), require_equilibrium=True)
    reference = px.natural_frequencies(robot)
    elastic = 2 * np.pi * reference[reference > 0]
    omega = np.sort(model.poles().imag)
    omega = omega[omega > 1e-3]
    # the eigenvalues of a non-symmetric A: rounding of eps |A| moves the eigenvalue ω by
    # eps |A| κ / (2ω) with |A| ~ ω_max² (A's K/M block): relative eps ω_max² / ω² ≈ 1e-13
    rel = np.abs(omega - elastic) / elastic
    assert rel.max() < 1e-10, rel
    frequencies = [mode.frequency for mode in model.modes()]
    assert np.allclose(frequencies, reference[reference > 0], rtol=1e-10)
    assert all(abs(mode.damping_ratio) < 1e-10 for mode in model.modes())


def test_two_mass_elastic_drive_resonance_and_anti_resonance(tmp_path):
    robot = _robot(tmp_path, n=1, length=0.5, mass=2.0)
    robot.model.gravity.linear[:] = 0.0
    k, N = 1500.0, 50.0
    motor = DCMotor(1.0, 0.05, 0.0, 3e-5)  # no back-EMF: the undamped two-inertia system
    drive = Drive(motor, ElasticTransmission(N, k, input_inertia=1e-5, output_inertia=0.004))
    system = px.System(robot, drives={"j0": drive})
    model = px.linearize(
        system, system.initial_state(), outputs=["drives.motor_velocity[j0]", "v:j0"]
    )
    J_L = _pivot_inertia(0.5, 2.0)
    J_m = 3e-5 + 1e-5 + 0.004 / N**2
    resonance = np.sqrt(k * (1 / J_L + 1 / (N**2 * J_m)))
    anti = np.sqrt(k / J_L)
    (mode,) = model.modes()  # the free rotation of the whole train is no mode
    assert mode.frequency * 2 * np.pi == pytest.approx(resonance, rel=1e-10)
    zeros = model.zeros("drives.j0.voltage", "drives.motor_velocity[j0]")
    assert np.abs(zeros.imag).max() == pytest.approx(anti, rel=1e-10)
    # the Bode magnitude of the motor speed dips at the anti-resonance, peaks at resonance
    f = np.array([0.5, 0.999, 1.0, 1.001]) * anti / (2 * np.pi)
    g = np.abs(px.frequency_response(model, 0, "drives.motor_velocity[j0]", f))
    assert g[2] < 1e-6 * g[0] and g[2] < g[1] and g[2] < g[3]


def test_dc_motor_on_an_inertia_has_its_electrical_and_mechanical_poles(tmp_path):
    robot = _robot(tmp_path, n=1, length=0.5, mass=2.0)
    robot.model.gravity.linear[:] = 0.0
    R, L, k, J_m, N = 1.2, 2e-3, 0.05, 2e-5, 40.0
    system = px.System(robot, drives={"j0": Drive(DCMotor(R, k, k, J_m, inductance=L), Gear(N))})
    model = px.linearize(system, system.initial_state(), outputs=["v:j0"])
    J = _pivot_inertia(0.5, 2.0) + N**2 * J_m
    # (L s + R)(J s) + (N k)^2 = 0, i.e. tau_e tau_m s^2 + tau_m s + 1 = 0
    tau_e, tau_m = L / R, J * R / (N * k) ** 2
    expected = np.roots([tau_e * tau_m, tau_m, 1.0])
    poles = model.poles()
    moving = poles[np.abs(poles) > 1e-6]
    assert np.allclose(np.sort_complex(moving), np.sort_complex(expected), rtol=1e-10)
    assert np.sum(np.abs(poles) <= 1e-6) == 1  # the angle integrates the speed
    # the DC gain of the speed: 1 / (N k) [rad/s per V]
    gain = px.frequency_response(model, 0, "v:j0", 1e-9)
    assert gain.real == pytest.approx(1 / (N * k), rel=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_pendulum_about_its_lower_and_upper_equilibria(tmp_path, upper):
    length, mass = 0.5, 2.0
    robot = _robot(tmp_path, n=1, length=length, mass=mass)
    system = px.System(robot, joint_limits=False)
    q0 = np.array([np.pi if upper else 0.0])
    model = px.linearize(system, system.initial_state(q0), require_equilibrium=True)
    rate = mass * G * (length / 2) / _pivot_inertia(length, mass)  # g / l of the compound
    poles = np.sort_complex(model.poles())
    if upper:  # real poles ±sqrt(g/l): the divergence
        assert np.allclose(poles, [-np.sqrt(rate), np.sqrt(rate)], rtol=1e-12, atol=0)
        assert model.modes() == []
    else:
        assert np.allclose(poles, [-1j * np.sqrt(rate), 1j * np.sqrt(rate)], rtol=1e-12)


def test_damping_ratio_of_a_damped_pendulum(tmp_path):
    length, mass, c = 0.5, 2.0, 0.4
    robot = _robot(tmp_path, n=1, length=length, mass=mass, damping=c)
    system = px.System(robot, joint_limits=False)
    model = px.linearize(system)  # the equilibrium: hanging
    inertia = _pivot_inertia(length, mass)
    stiffness = mass * G * length / 2
    (mode,) = model.modes()
    assert mode.damping_ratio == pytest.approx(c / (2 * np.sqrt(stiffness * inertia)), rel=1e-12)
    assert mode.frequency == pytest.approx(np.sqrt(stiffness / inertia) / (2 * np.pi), rel=1e-12)
    assert mode.shape[0] == pytest.approx(1.0)


def test_a_joint_pd_closes_the_loop(tmp_path):
    """A pendulum under JointPD about q_r: the closed loop I s² + (c + k_d) s + (k + k_p) = 0
    at the equilibrium the law holds (found by Newton through the law)."""
    length, mass, c, kp, kd = 0.5, 2.0, 0.1, 30.0, 2.0
    robot = _robot(tmp_path, n=1, length=length, mass=mass, damping=c)
    system = px.System(robot, joint_limits=False)
    law = px.control.JointPD(robot, [0.3], kp=kp, kd=kd)
    model = px.linearize(system, control=law)
    q = model.x0[0]
    assert kp * (0.3 - q) == pytest.approx(mass * G * length / 2 * np.sin(q), rel=1e-9)
    stiffness = mass * G * length / 2 * np.cos(q) + kp
    expected = np.roots([_pivot_inertia(length, mass), c + kd, stiffness])
    assert np.allclose(np.sort_complex(model.poles()), np.sort_complex(expected), rtol=1e-8)
    assert any("closed loop" in note for note in model.notes)


def test_equilibrium_is_found_under_a_holding_input(tmp_path):
    robot = _robot(tmp_path, n=2, length=0.4, mass=1.0)
    system = px.System(robot, joint_limits=False)
    q_target = np.array([0.5, -0.3])
    data = robot.model.createData()
    u0 = pin.computeGeneralizedGravity(robot.model, data, q_target)
    x = equilibrium(system, system.initial_state(np.array([0.4, -0.2])), u0)
    assert np.allclose(x[:2], q_target, atol=1e-12)
    model = px.linearize(system, None, u0)
    assert np.allclose(model.x0[:2], q_target, atol=1e-12)


# -- the linear response against simulate ---------------------------------------------------
def test_linear_step_response_matches_simulate_to_second_order(tmp_path):
    robot = _robot(tmp_path, n=2, length=0.4, mass=1.0, damping=0.2)
    system = px.System(robot, joint_limits=False)
    q0 = np.array([0.5, -0.3])
    u0 = pin.computeGeneralizedGravity(robot.model, robot.model.createData(), q0)
    model = px.linearize(system, system.initial_state(q0), u0, require_equilibrium=True)
    duration = 0.3
    discrete = model.discretize(duration)  # zero-order hold: exact for a held step
    errors = []
    for size in (0.1, 0.05, 0.025, 0.0125):
        du = size * np.array([1.0, -0.5])
        traj = px.simulate(
            system, duration, q0=q0, control=u0 + du, rtol=1e-12, atol=1e-13, output_dt=duration
        )
        nonlinear = np.concatenate((traj.q[-1] - q0, traj.v[-1]))
        linear = discrete.B @ du
        errors.append(np.abs(nonlinear - linear).max())
        assert errors[-1] < 0.05 * np.abs(linear).max()
    # second order: 4.08, 4.04, 4.02 (the third-order term fading as the step shrinks)
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(ratios - 4.0) < 0.2), ratios


# -- outputs --------------------------------------------------------------------------------
def test_frame_outputs_equal_pinocchio_jacobians(tmp_path):
    robot = _robot(tmp_path, n=3, length=0.4, mass=1.0)
    system = px.System(robot, joint_limits=False)
    rng = np.random.default_rng(6)
    q, v = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    x = system.initial_state(q, v)
    model = px.linearize(system, x, outputs=["l2.position", "l2.acceleration", "q:j1"])
    assert model.output_names[:3] == ("l2.position[x]", "l2.position[y]", "l2.position[z]")
    assert model.output_units[0] == "m" and model.output_units[3] == "m/s^2"
    pmodel, data = robot.model, robot.model.createData()
    fid = pmodel.getFrameId("l2")
    jac = pin.computeFrameJacobian(pmodel, data, q, fid, pin.LOCAL_WORLD_ALIGNED)[:3]
    assert np.abs(model.C[:3, :3] - jac).max() < 1e-8 * np.abs(jac).max()
    assert not model.C[:3, 3:].any() and not model.D[:3].any()
    # the acceleration's feedthrough: J M⁻¹ (the input is a joint torque)
    mass = pin.crba(pmodel, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    feed = jac @ np.linalg.inv(mass)
    assert np.abs(model.D[3:6] - feed).max() < 1e-7 * np.abs(feed).max()
    assert np.array_equal(model.C[6], np.eye(6)[1])


def test_drive_signals_as_outputs(tmp_path):
    robot = _robot(tmp_path, n=1)
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5)
    system = px.System(robot, drives={"j0": Drive(motor, ElasticTransmission(50.0, 800.0))})
    model = px.linearize(system, outputs=["drives.current", "drives.spring_torque[j0]"])
    assert model.output_names == ("drives.current[j0]", "drives.spring_torque[j0]")
    assert model.output_units == ("A", "N.m")
    # i = (u - C_E θ̇) / R: D = 1/R, C = -C_E/R on the motor speed
    assert model.D[0, 0] == pytest.approx(1 / 1.2, rel=1e-8)
    speed = model.state_names.index("drives.motor_velocity[j0]")
    assert model.C[0, speed] == pytest.approx(-0.05 / 1.2, rel=1e-8)


# -- conversions ------------------------------------------------------------------------------
def test_discretize_frequency_response_and_conversions(tmp_path):
    robot = _robot(tmp_path, n=2, length=0.4, mass=1.0, damping=0.2)
    system = px.System(robot, joint_limits=False)
    model = px.linearize(system, outputs=["l1.position[x]"])
    dt = 1e-3
    discrete = model.discretize(dt)
    assert discrete.dt == dt
    assert np.allclose(discrete.A, scipy.linalg.expm(model.A * dt), rtol=0, atol=1e-14)
    with pytest.raises(InvalidParameter, match="already discrete"):
        discrete.discretize(dt)
    f = np.array([0.1, 1.0, 10.0])
    g = px.frequency_response(model, "tau:j0", "l1.position[x]", f)
    values, vectors = np.linalg.eig(model.A)  # the modal expansion c V (s - λ)⁻¹ V⁻¹ b
    left = model.C[0] @ vectors
    right = np.linalg.solve(vectors, model.B[:, 0])
    reference = [np.sum(left * right / (2j * np.pi * fk - values)) for fk in f]
    assert np.allclose(g, reference, rtol=1e-10)
    assert np.array_equal(model.to_scipy().A, model.A)
    assert discrete.to_scipy().dt == dt
    try:
        import control  # noqa: F401
    except ImportError:
        with pytest.raises(MissingDependency, match=r"pinext\[control\]"):
            model.to_control()
    else:
        ss = model.to_control()
        assert np.array_equal(ss.A, model.A)


# -- bad input ------------------------------------------------------------------------------
def test_bad_input_names_the_argument_and_what_is_valid(tmp_path):
    robot = _robot(tmp_path, n=2, length=0.4, mass=1.0)
    system = px.System(robot, joint_limits=False)
    x = system.initial_state()
    with pytest.raises(InvalidParameter, match=r"x0 has shape \(3,\), expected \(6,\)"):
        px.linearize(system, np.zeros(3))
    bad = x.copy()
    bad[2] = np.nan
    with pytest.raises(InvalidParameter, match="x0 has non-finite entries: v:j0"):
        px.linearize(system, bad)
    with pytest.raises(InvalidParameter, match=r"u0 has shape \(3,\).*tau:j0, tau:j1"):
        px.linearize(system, x, np.zeros(3))
    with pytest.raises(NameNotFound, match=r"unknown output 'tip.position'.*q:j0.*l1.position"):
        px.linearize(system, x, outputs=["tip.position"])
    with pytest.raises(NameNotFound, match=r"l1.position\[w\].*l1.position\[x\]"):
        px.linearize(system, x, outputs=["l1.position[w]"])
    with pytest.raises(InvalidParameter, match="valid methods: auto, analytic, central"):
        px.linearize(system, x, method="exact")
    leaning = system.initial_state(np.array([0.3, 0.0]))
    with pytest.raises(NotAtEquilibrium, match=r"x0 is not an equilibrium.*d/dt v:j0") as info:
        px.linearize(system, leaning, require_equilibrium=True)
    assert set(info.value.residuals) == {"d/dt v:j0", "d/dt v:j1"}
    px.linearize(system, leaning)  # about a moving state when no equilibrium is asked for
    model = px.linearize(system, x)
    with pytest.raises(NameNotFound, match="Available input names: tau:j0, tau:j1"):
        px.frequency_response(model, "voltage", 0, [1.0])


def test_no_equilibrium_is_an_error(tmp_path):
    robot = _robot(tmp_path, n=1)
    system = px.System(robot, joint_limits=False)
    with pytest.raises(PinextError, match="did not converge"):
        px.linearize(system, None, [100.0])  # a torque no hanging pendulum holds beyond 90°


def test_the_example_writes_its_bode_plots(tmp_path, capsys):
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "examples" / "linear_model.py"
    spec = importlib.util.spec_from_file_location("linear_model_example", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    example.main(tmp_path / "out")
    assert (tmp_path / "out" / "linear_model_bode.png").stat().st_size > 10_000
    printed = capsys.readouterr().out
    line = next(text for text in printed.splitlines() if text.startswith("hub angle"))
    difference = float(line.split("difference ")[1].split(" rad")[0])
    assert difference < 1e-5 * 0.02  # the PD's small step: linear model and simulate agree


def test_bode_plot_marks_the_resonance_and_the_anti_resonance(tmp_path):
    from pinext.visualization import plots

    robot = _robot(tmp_path, n=1, length=0.5, mass=2.0)
    robot.model.gravity.linear[:] = 0.0
    drive = Drive(DCMotor(1.0, 0.05, 0.05, 3e-5), ElasticTransmission(50.0, 1500.0, 0.2))
    system = px.System(robot, drives={"j0": drive})
    model = px.linearize(system, outputs=["drives.motor_velocity[j0]"])
    figure = plots.bode(model, "drives.j0.voltage", "drives.motor_velocity[j0]")
    magnitude, phase = figure.axes
    assert magnitude.get_ylabel() == "|G| [dB, rad/s/V]" and phase.get_ylabel() == "phase [deg]"
    marked = sorted(line.get_xdata()[0] for line in magnitude.lines[1:])
    (mode,) = model.modes()
    anti = np.sqrt(1500.0 / _pivot_inertia(0.5, 2.0)) / (2 * np.pi)
    assert marked == pytest.approx(sorted([mode.frequency, anti]), rel=1e-2)
    assert plots.save(figure, tmp_path / "bode", formats=("png",))[0].stat().st_size > 10_000
