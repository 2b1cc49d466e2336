"""Moreau–Jean time stepping (pinext.contact.timestepping): the contact impulses solve the
frictional contact problem (checked with numpy's own Delassus matrix), the results converge
at first order to the event-driven path (FrictionalContact), impacts dissipate, Pinocchio's
two conic solvers agree, and Solo12 lands and stands on its four feet."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import Contact, plane
from pinext.contact.timestepping import PointContact, TimeStepper
from pinext.exceptions import InvalidParameter
from pinext.robots.solo12 import FEET, load_solo12, posture_law
from pinext.simulation.component import Component
from pinext.simulation.timestepping import simulate_timestepping

from .test_friction import _block, block_against_its_stop

G = 9.81


def _box(mass: float = 1.5, size=(0.3, 0.2, 0.1)) -> pin.Model:
    """A free-flying box with a frame at each of its four lower corners."""
    model = pin.Model()
    model.name = "box"
    j = model.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "box")
    model.appendBodyToJoint(j, pin.Inertia.FromBox(mass, *size), pin.SE3.Identity())
    a, b, c = (s / 2 for s in size)
    for i, (sx, sy) in enumerate([(1, 1), (1, -1), (-1, 1), (-1, -1)]):
        corner = pin.SE3(np.eye(3), np.array([sx * a, sy * b, -c]))
        model.addFrame(pin.Frame(f"corner{i}", j, 0, corner, pin.FrameType.OP_FRAME))
    return model


def _box_contacts(mu: float) -> list[Contact]:
    return [Contact(plane(f"corner{i}"), friction=mu) for i in range(4)]


# -- the contact problem --------------------------------------------------------------------
def test_impulses_solve_the_frictional_contact_problem():
    """One step of a spinning, sliding box landing on the ground: the impulses returned by
    Pinocchio's ADMM satisfy Signorini and Coulomb for the Delassus matrix G = J M⁻¹ Jᵀ built
    here from ``crba`` and the frame Jacobians, and v⁺ = ṽ + M⁻¹ Jᵀ λ."""
    rng = np.random.default_rng(3)
    model, mu, dt = _box(), 0.6, 1e-3
    stepper = TimeStepper(
        model, [PointContact.from_contact(model, c) for c in _box_contacts(mu)], dt, margin=0.01
    )
    data = model.createData()
    rotation = pin.rpy.rpyToMatrix(0.0, 0.0, 0.3)
    q = np.concatenate([[0.1, -0.2, 0.0], pin.Quaternion(rotation).coeffs()])
    pin.framesForwardKinematics(model, data, q)
    q[2] = -min(data.oMf[model.getFrameId(f"corner{i}")].translation[2] for i in range(4))
    v = np.concatenate([[0.4, 0.1, -0.05], rng.normal(scale=0.1, size=3)])
    tau = rng.normal(scale=0.1, size=6)
    result = stepper.step(q, v, tau)
    assert result.converged and result.active.all() and (result.impulses[:, 2] > 0).sum() >= 2

    pin.computeJointJacobians(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    frames = [model.getFrameId(f"corner{i}") for i in range(4)]
    world = pin.LOCAL_WORLD_ALIGNED
    jac = np.vstack([pin.getFrameJacobian(model, data, f, world)[:3] for f in frames])
    gaps = np.array([data.oMf[model.getFrameId(f"corner{i}")].translation[2] for i in range(4)])
    np.testing.assert_allclose(result.gaps, gaps, atol=1e-12)
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    v_free = v + dt * np.linalg.solve(mass, tau - pin.nonLinearEffects(model, data, q, v))
    lam = result.impulses.reshape(-1)
    np.testing.assert_allclose(
        result.v, v_free + np.linalg.solve(mass, jac.T @ lam), rtol=1e-9, atol=1e-12
    )
    sigma = (jac @ result.v).reshape(4, 3)
    sigma[:, 2] += gaps / dt
    lam = result.impulses
    tol = 1e-8
    for k in range(4):
        n, t = lam[k, 2], lam[k, :2]
        assert n >= -tol and np.linalg.norm(t) <= mu * n + tol  # in the cone
        assert sigma[k, 2] >= -tol and abs(n * sigma[k, 2]) < tol  # Signorini
        slip = np.linalg.norm(sigma[k, :2])
        if n > 1e-9 and slip > 1e-7:  # sliding: on the cone's edge, against the slip
            assert np.linalg.norm(t) == pytest.approx(mu * n, rel=1e-6)
            np.testing.assert_allclose(t / np.linalg.norm(t), -sigma[k, :2] / slip, atol=1e-6)


def test_box_at_rest_carries_its_weight():
    mu, mass = 0.8, 1.5
    system = px.System(_box(mass), contacts=())
    q0 = pin.neutral(system.model)
    q0[2] = 0.05
    traj = simulate_timestepping(system, 0.2, dt=1e-3, q0=q0, contacts=_box_contacts(mu))
    forces = traj.outputs["contact.force"]  # the end too: the step that ends there
    np.testing.assert_allclose(forces.sum(axis=1), [[0.0, 0.0, mass * G]] * len(forces), atol=1e-6)
    assert traj.outputs["contact.closed"].all()
    units = {row.name: row.unit for row in traj.describe_outputs()}
    assert [units[f"contact.{k}"] for k in ("force", "gap", "residual", "closed")] == [
        "N", "m", "m", "1",
    ]  # fmt: skip
    assert traj.constraint_residual().max() < 1e-9
    np.testing.assert_allclose(traj.q[-1], q0, atol=1e-9)


# -- against the event-driven path ------------------------------------------------------------
def _incline_system(theta: float, mu: float) -> px.System:
    normal = (-np.sin(theta), 0.0, np.cos(theta))
    contact = Contact(plane("block", (0.0, 0.0, 0.0), normal), friction=mu, name="incline")
    return px.System(_block(), contacts=[contact])


@pytest.mark.filterwarnings("ignore:the run is stiff")
@pytest.mark.parametrize(
    ("theta", "mu", "v0", "first_order"),
    [(0.0, 0.4, (2.0, 0.0), True), (0.5, 0.3, (0.0, 0.0), True), (0.3, 0.4, (0.0, 0.0), False)],
    ids=["slides-then-sticks", "slides-down", "sticks"],
)
def test_block_converges_to_the_event_driven_friction(theta, mu, v0, first_order):
    """The same System run event-driven (FrictionalContact: stick/slip modes, located switch)
    and time-stepped at h and h/2: the positions differ by O(h), the error halves with h."""
    system = _incline_system(theta, mu)
    ref = px.simulate(system, 1.0, q0=np.zeros(2), v0=np.asarray(v0), output_dt=0.01)
    errors = []
    for dt in (1e-3, 5e-4):
        ts = px.simulate(
            system,
            1.0,
            q0=np.zeros(2),
            v0=np.asarray(v0),
            output_dt=0.01,
            method="timestepping",
            dt=dt,
        )
        expected = np.column_stack([np.interp(ts.t, ref.t, ref.q[:, i]) for i in range(2)])
        errors.append(np.abs(ts.q - expected).max())
        assert errors[-1] < 2.0 * dt  # [m]: O(h), constant from g and v0 (~1 m/s scale)
        balance = ts.energy_balance()
        assert balance.max_relative() < 1e-8  # the scheme's own terms booked
        # without an impulse in the step the implicit update only dissipates (to the solver's
        # tolerance: 1e-10 m/s of normal velocity times ½ h m g)
        assert np.diff(balance.numerical_dissipation).min() > -1e-11
    if first_order:
        assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.05)
    else:  # sticking: exact up to the solver tolerance
        assert max(errors) < 1e-9


def test_dropped_block_loses_the_plastic_impact_energy():
    """A block dropped from 0.1 m onto a frictional floor: time stepping books the plastic
    impact loss ½ m v² (v = √(2 g h)) as contact dissipation, like the event-driven impact."""
    mass, height = 2.0, 0.1
    system = _incline_system(0.0, 0.5)
    q0 = np.array([0.0, height])
    ref = px.simulate(system, 0.5, q0=q0)
    jump = sum(e.info.get("energy_loss", 0.0) for e in ref.events)
    assert jump == pytest.approx(mass * G * height, rel=1e-8)
    for dt in (1e-3, 2.5e-4):
        ts = px.simulate(system, 0.5, q0=q0, method="timestepping", dt=dt)
        lost = ts.state("dissipated_energy")[-1, 0]
        # the free fall ends within one step of the ground: its energy is m g h up to O(h)
        assert lost == pytest.approx(jump, rel=30 * dt)
        assert ts.q[-1, 1] == pytest.approx(0.0, abs=1e-12)
        steps = np.diff(ts.energy())
        assert steps.max() < 1e-12  # no input: the energy never increases


# -- the energy audit of the scheme ---------------------------------------------------------
def _pendulum() -> pin.Model:
    """One 0.5 m link swinging about y under gravity (no contact, no damping)."""
    model = pin.Model()
    model.name = "pendulum"
    j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "hinge")
    down = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.25]))
    model.appendBodyToJoint(j, pin.Inertia.FromBox(1.0, 0.05, 0.05, 0.5), down)
    return model


def test_block_dropping_and_sliding_books_the_scheme_energy_in_closed_form():
    """The 2 kg block dropped from 0.1 m at 2 m/s onto a floor with μ = 0.4: it lands, slides
    and sticks. The audit closes to round-off once the scheme's terms are booked (it was off by
    O(h), 1.4e-2 J at 1 ms, without them). Under the constant weight f = −m g e_z the
    numerical dissipation ½ h fᵀ(v⁺ − v) telescopes to ½ h m g (v_z(0) − v_z(t)): the free fall
    loses ½ m g² h² per step and the landing step gives it back (the midpoint booking of the
    impulse counts the weight's impulse at the mean velocity); with a constant M and a linear
    potential the explicit-evaluation error is zero."""
    mass, system = 2.0, _incline_system(0.0, 0.4)
    for dt in (1e-3, 5e-4):
        ts = px.simulate(
            system, 1.0, q0=np.array([0.0, 0.1]), v0=np.array([2.0, 0.0]),
            method="timestepping", dt=dt,
        )  # fmt: skip
        balance = ts.energy_balance()
        assert balance.max_relative() < 1e-8
        unbooked = balance.residual - balance.numerical_dissipation + balance.explicit_error
        assert np.abs(unbooked).max() > 5.0 * dt  # [J]: what the audit could not explain
        expected = 0.5 * dt * mass * G * (ts.v[0, 1] - ts.v[:, 1])
        np.testing.assert_allclose(balance.numerical_dissipation, expected, atol=1e-12)
        assert np.abs(balance.explicit_error).max() < 1e-12
        landing = np.diff(ts.v[:, 1]) > 1e-6  # the steps with an upward impulse
        steps = np.diff(balance.numerical_dissipation)
        assert 1 <= landing.sum() <= 2 and steps[landing].max() < 0
        assert steps[~landing].min() > -1e-11  # [J] elsewhere ≥ 0 to the solver tolerance


@pytest.mark.filterwarnings("ignore:the contact solver did not converge")
def test_box_landing_on_its_corners_closes_the_audit(tmp_path):
    """The tilted, spinning box of :func:`test_admm_and_pgs_agree` lands on an edge, slides
    with μ = 0.5 and falls flat: the audit with the scheme's terms closes to round-off, and
    both terms shrink with h; a saved and loaded run keeps them."""
    system = px.System(_box(), contacts=())
    q0 = pin.neutral(system.model)
    q0[2] = 0.15
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.1, 0.2, 0.0)).coeffs()
    v0 = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 1.0])
    totals = []
    for dt in (1e-3, 5e-4):
        run = simulate_timestepping(system, 0.4, dt=dt, q0=q0, v0=v0, contacts=_box_contacts(0.5))
        balance = run.energy_balance()
        assert balance.max_relative() < 1e-8
        totals.append(np.abs([balance.numerical_dissipation, balance.explicit_error]).max())
    assert totals[1] < 0.8 * totals[0]
    loaded = px.Trajectory.load(run.save(tmp_path / "box.npz")).energy_balance()
    np.testing.assert_array_equal(loaded.numerical_dissipation, balance.numerical_dissipation)
    assert loaded.max_relative() < 1e-8


def test_pendulum_numerical_dissipation_is_first_order_and_never_negative():
    """A pendulum released at 1 rad, no contact, 1 s at h, h/2, h/4. Per step the numerical
    dissipation is ½ I (v⁺ − v)² ≥ 0 (the implicit velocity update) and the explicit error is
    the Taylor remainder V(q⁺) − V(q) − h v⁺ V′(q) of the gravity potential (> 0 for
    |q| < π/2, so the energy rises in some steps: symplectic Euler's bounded oscillation).
    Both, summed over the run, halve with h (first order), so on this conservative scene
    they, and the energy drift, vanish with h. The audit closes to round-off."""
    model = _pendulum()
    system = px.System(model)
    data = model.createData()
    inertia = float(pin.crba(model, data, np.zeros(1))[0, 0])
    numerical, explicit, drift = [], [], []
    for dt in (1e-3, 5e-4, 2.5e-4):
        ts = px.simulate(system, 1.0, q0=np.array([1.0]), method="timestepping", dt=dt)
        balance = ts.energy_balance()
        assert balance.max_relative() < 1e-8
        steps = np.diff(balance.numerical_dissipation)
        assert steps.min() >= -1e-15 * balance.scale()
        np.testing.assert_allclose(steps, 0.5 * inertia * np.diff(ts.v[:, 0]) ** 2, atol=1e-15)
        potential = np.array([pin.computePotentialEnergy(model, data, q) for q in ts.q])
        slope = np.array([pin.computeGeneralizedGravity(model, data, q)[0] for q in ts.q[:-1]])
        remainder = np.diff(potential) - dt * ts.v[1:, 0] * slope
        np.testing.assert_allclose(np.diff(balance.explicit_error), remainder, atol=1e-14)
        # |q| < π/2: V″ > 0 and each step gains ½ h² V″ v⁺² (to third order), while the
        # implicit update loses ½ I (Δv)²: the energy goes up in some steps, down in others
        assert np.diff(balance.explicit_error).min() > 0
        assert np.diff(balance.energy).min() < 0 < np.diff(balance.energy).max()
        numerical.append(balance.numerical_dissipation[-1])
        explicit.append(balance.explicit_error[-1])
        drift.append(abs(balance.energy[-1] - balance.energy[0]))
    for totals in (numerical, explicit):
        assert totals[0] / totals[1] == pytest.approx(2.0, rel=0.02)
        assert totals[1] / totals[2] == pytest.approx(2.0, rel=0.02)
    assert numerical[-1] < 4e-3 and drift[-1] < 0.3 * drift[0]  # [J]


# -- joint limits -----------------------------------------------------------------------------
def _double_pendulum() -> pin.Model:
    """Two 0.5 m links swinging about y; the elbow is limited to ±0.3 rad."""
    model = pin.Model()
    model.name = "double_pendulum"
    link = pin.Inertia.FromBox(1.0, 0.05, 0.05, 0.5)
    down = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.25]))
    j1 = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "shoulder")
    model.appendBodyToJoint(j1, link, down)
    elbow = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.5]))
    j2 = model.addJoint(j1, pin.JointModelRY(), elbow, "elbow")
    model.appendBodyToJoint(j2, link, down)
    model.lowerPositionLimit[:] = [-3.0, -0.3]
    model.upperPositionLimit[:] = [3.0, 0.3]
    model.velocityLimit[:] = 100.0
    model.effortLimit[:] = 100.0
    return model


def test_joint_limit_impacts_converge_to_the_event_driven_limits():
    """A double pendulum released at 1 rad swings its elbow onto both limits: time stepping
    (Pinocchio's JointLimitConstraintModel in the same conic problem) converges at first
    order to the event-driven JointLimits (located plastic impacts), the elbow never passes
    its limits, and the booked dissipation equals the event-driven impact losses to O(h)."""
    system = px.System(_double_pendulum())
    q0 = np.array([1.0, 0.0])
    ref = px.simulate(system, 1.0, q0=q0, output_dt=0.01)
    assert [e.name for e in ref.events] == ["limit:elbow", "limit:elbow"]
    losses = ref.energy_balance().jump_losses[-1]
    errors = []
    for dt in (1e-3, 5e-4):
        ts = px.simulate(system, 1.0, q0=q0, method="timestepping", dt=dt, output_dt=0.01)
        assert ts.meta["stats"]["limit_steps"] > 0
        expected = np.column_stack([np.interp(ts.t, ref.t, ref.q[:, i]) for i in range(2)])
        errors.append(np.abs(ts.q - expected).max())
        assert np.abs(ts.q[:, 1]).max() < 0.3 + 1e-9
        assert ts.state("dissipated_energy")[-1, 0] == pytest.approx(losses, rel=5 * dt)
    assert errors[0] < 5e-3 and errors[0] / errors[1] == pytest.approx(2.0, rel=0.1)


def test_block_slides_on_a_frictional_floor_into_a_joint_stop():
    """Friction and a joint limit together: a block sliding at 1 m/s on a floor with
    μ = 0.3 reaches its x stop at 0.1 m when x = t − μ g t²/2 = 0.1, stops there plastically
    and stays: all its kinetic energy is dissipated, part by friction, part at the stop."""
    system, mu, mass, v0 = block_against_its_stop()
    t_hit = (1 - np.sqrt(1 - 2 * mu * G * 0.1)) / (mu * G)
    for dt in (1e-3, 5e-4):
        ts = px.simulate(
            system, 0.5, q0=np.zeros(2), v0=np.array([v0, 0.0]), method="timestepping", dt=dt
        )
        hit = ts.t[np.argmax(ts.q[:, 0] >= 0.1 - 1e-12)]
        assert hit == pytest.approx(t_hit, abs=2 * dt)
        assert ts.q[:, 0].max() < 0.1 + 1e-12 and np.abs(ts.q[:, 1]).max() < 1e-12
        assert np.abs(ts.v[-1]).max() < 1e-12
        lost = ts.state("dissipated_energy")[-1, 0]
        assert lost == pytest.approx(0.5 * mass * v0**2, rel=1e-9)


# -- solvers --------------------------------------------------------------------------------
def test_admm_and_pgs_agree():
    """A tilted, spinning box lands on an edge, slides and falls flat on its four corners:
    Pinocchio's ADMM and PGS give the same motion to their tolerance until the step where
    the box falls flat. There four contacts take an impact together (twelve rows for six
    velocities), and the Coulomb complementarity problem has more than one solution: both
    solvers converge, to different impulses and velocities. Both then come to rest flat,
    within 1e-4 (m, quaternion) of each other."""
    system = px.System(_box(), contacts=())
    q0 = pin.neutral(system.model)
    q0[2] = 0.15
    q0[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(0.1, 0.2, 0.0)).coeffs()
    v0 = np.array([0.5, 0.0, 0.0, 0.0, 0.0, 1.0])
    runs = [
        simulate_timestepping(
            system, 0.4, dt=1e-3, q0=q0, v0=v0, contacts=_box_contacts(0.5), solver=s
        )
        for s in ("admm", "pgs")
    ]
    for run in runs:
        assert run.meta["stats"]["unconverged"] == 0
    pushing = np.linalg.norm(runs[0].outputs["contact.force"], axis=2) > 0.0
    flat = runs[0].t[np.flatnonzero(pushing.all(axis=1))[0]]  # the step that starts there
    before = runs[0].t <= flat
    assert before.sum() > 100
    np.testing.assert_allclose(runs[0].v[before], runs[1].v[before], atol=1e-8)
    np.testing.assert_allclose(runs[0].q[-1], runs[1].q[-1], atol=1e-4)
    for run in runs:  # both at rest, flat on the floor
        assert np.abs(run.v[-1]).max() < 1e-8 and run.q[-1, 2] == pytest.approx(0.05, abs=1e-9)


# -- input checks ---------------------------------------------------------------------------
def test_bad_input_is_named():
    system = _incline_system(0.0, 0.4)
    with pytest.raises(InvalidParameter, match="needs a step dt"):
        px.simulate(system, 1.0, q0=np.array([0.0, 0.1]), method="timestepping")
    with pytest.raises(InvalidParameter, match="timestepping"):
        px.simulate(system, 1.0, q0=np.array([0.0, 0.1]), dt=1e-3)
    with pytest.raises(InvalidParameter, match="valid solvers: auto, compiled, admm, pgs"):
        simulate_timestepping(system, 1.0, dt=1e-3, q0=np.array([0.0, 0.1]), solver="lcp")
    with pytest.raises(InvalidParameter, match="dt must be"):
        simulate_timestepping(system, 1.0, dt=-1.0, q0=np.array([0.0, 0.1]))
    hole = Contact(px.contact.peg_in_hole("block", pin.SE3.Identity()))
    with pytest.raises(InvalidParameter, match="fixed planes"):
        simulate_timestepping(system, 1.0, dt=1e-3, contacts=[hole])

    class Thermal(Component):  # a component with a state of its own
        name = "thermal"

        def states(self):
            return [("temperature", 1)]

    stateful = px.System(_block(), contacts=(), components=[Thermal()])
    with pytest.raises(InvalidParameter, match="'thermal' .* own states"):
        simulate_timestepping(stateful, 1.0, dt=1e-3, q0=np.array([0.0, 0.1]))


def test_ground_surface_of_the_extension_format():
    contact = Contact.from_dict({"frame": "FL_FOOT", "surface": "ground", "friction": 0.9})
    placement = contact.constraint.placement
    np.testing.assert_allclose(placement.rotation[:, 2], [0.0, 0.0, 1.0])
    assert placement.translation[2] == 0.0 and contact.friction == 0.9
    raised = Contact.from_dict({"frame": "f", "surface": "ground", "point": [1.0, 2.0, 0.1]})
    assert raised.constraint.placement.translation[2] == pytest.approx(0.1)
    with pytest.raises(InvalidParameter, match="ground's normal"):
        Contact.from_dict({"frame": "f", "surface": "ground", "normal": [0, 1, 0]})
    with pytest.raises(InvalidParameter, match="valid surfaces: plane, ground"):
        Contact.from_dict({"frame": "f", "surface": "floor"})


# -- Solo12 ---------------------------------------------------------------------------------
def _feet(model: pin.Model, q_samples: np.ndarray) -> np.ndarray:
    data = model.createData()
    ids = [model.getFrameId(f) for f in FEET]
    out = []
    for q in q_samples:
        pin.framesForwardKinematics(model, data, q)
        out.append([data.oMf[i].translation.copy() for i in ids])
    return np.array(out)


def test_solo12_lands_and_stands_for_five_seconds(robots_dir):
    """Acceptance: Solo12 dropped with its base at 0.3 m, PD posture law, 5 s of time
    stepping at 1 ms: no foot below the ground beyond round-off, the feet stick once down,
    the base settles, and the energy minus the input work never increases (at the landing
    step it drops by the impact loss)."""
    robot, q_ref = load_solo12()
    q0 = q_ref.copy()
    q0[2] = 0.3
    dt = 1e-3
    traj = px.simulate(robot, 5.0, q0=q0, control=posture_law(q_ref), method="timestepping", dt=dt)
    assert traj.meta["contact_names"] == list(FEET)
    assert traj.meta["stats"]["unconverged"] == 0
    landing = [e.t for e in traj.events if e.name.startswith("touchdown")]
    assert len(landing) == 4 and not [e for e in traj.events if e.name.startswith("lift-off")]
    # free fall of the feet from 0.3 - 0.2159 m: t = √(2 h / g), to a step
    feet = _feet(robot.model, traj.q)
    t_fall = np.sqrt(2 * feet[0, :, 2].min() / G)
    assert min(landing) == pytest.approx(t_fall, abs=2 * dt)
    assert feet[:, :, 2].min() > -1e-9  # penetration [m]
    down = traj.t >= min(landing) + dt
    first = np.flatnonzero(down)[0]
    assert np.abs(feet[down, :, :2] - feet[first, :, :2]).max() < 2e-5  # stick [m]
    late = traj.t >= 4.0
    assert np.ptp(traj.q[late, 2]) < 1e-8 and np.abs(traj.v[-1]).max() < 1e-8  # settled
    forces = traj.outputs["contact.force"][late]  # the end too: the step that ends there
    total_mass = pin.computeTotalMass(robot.model)
    np.testing.assert_allclose(forces[..., 2].sum(axis=1), total_mass * G, rtol=1e-6)
    energy, work = traj.energy(), traj.state("input_work")[:, 0]
    gain = np.diff(energy) - np.diff(work)
    assert gain.max() < 1e-12 * energy.max()  # never increases beyond round-off
    k = int(np.argmin(np.abs(traj.t - min(landing))))
    lost = np.diff(traj.state("dissipated_energy")[:, 0])
    assert gain[k] < -0.1 and lost[k] == pytest.approx(-gain[k], rel=1e-3)
    balance = traj.energy_balance()  # with the scheme's own terms: closed to round-off
    assert balance.max_relative() < 1e-8
    unbooked = balance.residual - balance.numerical_dissipation + balance.explicit_error
    assert np.abs(unbooked).max() > 1e-2  # [J] without them


def test_load_robot_gives_solo12_its_feet(robots_dir):
    """``px.load_robot("solo12")`` arrives with the foot contacts pinext ships for it: its run
    equals :func:`load_solo12`'s bit for bit and it stands; loaded without extensions, time
    stepping says that a robot on a free flyer has no contact instead of letting it fall."""
    shipped, q_ref = load_solo12()
    law = posture_law(q_ref)
    runs = [
        px.simulate(robot, 0.2, q0=q_ref, control=law, method="timestepping", dt=1e-3)
        for robot in (shipped, px.load_robot("solo12"))
    ]
    assert runs[1].meta["contact_names"] == list(FEET)
    np.testing.assert_array_equal(runs[0].x, runs[1].x)
    assert runs[1].q[:, 2].min() > 0.2  # [m] it stands (the base 0.235 m at the start)
    bare = px.load_robot("solo12", extensions=False)
    with pytest.warns(UserWarning, match="free flyer with no contact"):
        px.simulate(bare, 0.02, q0=q_ref, method="timestepping", dt=1e-3, progress=False)


@pytest.mark.filterwarnings("ignore:the contact solver did not converge")
def test_solo12_trots_forward_in_the_example(robots_dir):
    """examples/solo12_walk.py (1.5 s): the open-loop trot lifts and lands the feet, moves
    the base forward, and no foot goes below the ground by more than the linearisation
    error of a step (O(h²) for a foot landing while its leg rotates)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / "solo12_walk.py"
    spec = importlib.util.spec_from_file_location("solo12_walk", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    traj = module.walk(1.5)
    lift_offs = [e for e in traj.events if e.name.startswith("lift-off")]
    assert len(lift_offs) >= 4 and {e.name.split(":")[1] for e in lift_offs} == set(FEET)
    walking = traj.t >= module.START
    assert traj.q[-1, 0] - traj.q[walking][0, 0] > 0.05  # [m] forward
    assert traj.outputs["contact.gap"].min() > -1e-6


def _frictionless_feet(robot) -> px.System:
    specs = [{"frame": f, "surface": "ground"} for f in FEET]
    return px.System(robot, contacts=specs, joint_limits=False)


def test_solo12_frictionless_landing_converges_to_the_event_driven_impact(robots_dir):
    """Solo12 with frictionless feet, dropped from 0.3 m: the event-driven path (one impulse
    problem for the four feet, then four closed contacts) and time stepping at h and h/2
    differ by O(h) in every coordinate over the landing; the error halves with h."""
    robot, q_ref = load_solo12()
    system = _frictionless_feet(robot)
    q0 = q_ref.copy()
    q0[2] = 0.3
    law = posture_law(q_ref)
    ref = px.simulate(system, 0.4, q0=q0, control=law, output_dt=0.005)
    assert len(ref.events) == 1 and ref.constraint_residual().max() < 1e-9
    errors = []
    for dt in (1e-3, 5e-4):
        ts = px.simulate(
            system, 0.4, q0=q0, control=law, method="timestepping", dt=dt, output_dt=0.005
        )
        expected = np.column_stack([np.interp(ts.t, ref.t, ref.q[:, i]) for i in range(19)])
        errors.append(np.abs(ts.q - expected).max())
        assert errors[-1] < 10 * dt  # [m or rad]
    assert errors[0] / errors[1] == pytest.approx(2.0, rel=0.05)


@pytest.mark.slow
def test_solo12_stands_event_driven_on_frictionless_feet(robots_dir):
    """The event-driven acceptance half, with frictionless feet (several frictional contacts
    are not event-driven yet): 5 s, no foot below the ground by more than 1e-6 m, the energy
    audit closed, and time stepping ends in the same standing state to O(h)."""
    robot, q_ref = load_solo12()
    system = _frictionless_feet(robot)
    q0 = q_ref.copy()
    q0[2] = 0.3
    law = posture_law(q_ref)
    ref = px.simulate(system, 5.0, q0=q0, control=law, output_dt=0.01)
    feet = _feet(robot.model, ref.q)
    assert feet[:, :, 2].min() > -1e-6 and ref.constraint_residual().max() < 1e-6
    assert ref.energy_balance().max_relative() < 1e-8
    assert np.abs(ref.v[-1]).max() < 1e-8  # standing still
    ts = px.simulate(system, 5.0, q0=q0, control=law, method="timestepping", dt=1e-3)
    np.testing.assert_allclose(ts.q[-1], ref.q[-1], atol=1e-3)


def test_the_unconverged_solver_warning_names_a_call_that_takes_its_remedies():
    """Before: the warning said "more iterations (max_iterations of simulate)", and
    ``simulate(..., max_iterations=...)`` is a TypeError; it now names the call that takes
    max_iterations and tolerance, and that call, as written, takes them (fewer steps left
    unconverged)."""
    system = px.System(_box(), contacts=())
    q0 = pin.neutral(system.model)
    q0[2] = 0.05
    v0 = np.array([0.5, 0.2, -1.0, 0.3, -0.2, 0.1])
    run = {"q0": q0, "v0": v0, "contacts": _box_contacts(0.5)}
    with pytest.warns(RuntimeWarning, match="did not converge") as caught:
        few = simulate_timestepping(system, 0.05, dt=1e-3, max_iterations=1, **run)
    message = str(caught[0].message)
    assert "simulate_timestepping(system, t_final, dt=..., max_iterations=..., tolerance=...)" in (
        message
    )
    with pytest.raises(TypeError, match="max_iterations"):
        px.simulate(system, 0.05, q0=q0, method="timestepping", dt=1e-3, max_iterations=1000)
    more = px.simulation.timestepping.simulate_timestepping(
        system, 0.05, dt=1e-3, max_iterations=2000, tolerance=1e-8, **run
    )
    assert more.meta["stats"]["unconverged"] < few.meta["stats"]["unconverged"]
