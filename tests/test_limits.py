"""Joint limits (pinext.contact.limits): unilateral rows with impact and lift-off, the "no
limit" encodings, effort saturation and the velocity-limit report; the Panda acceptance run."""

import warnings

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.contact import (
    EffortSaturation,
    JointLimits,
    JointLimitWarning,
    VelocityLimitWarning,
    joint_limits,
)
from tests.conftest import pendulum_urdf

G = 9.81


def _pendulum(tmp_path, lower=-0.5, upper=0.5, velocity=100.0, effort=100.0):
    text = pendulum_urdf(n=1).replace(
        '<limit lower="-10" upper="10" effort="100" velocity="100"/>',
        f'<limit lower="{lower}" upper="{upper}" effort="{effort}" velocity="{velocity}"/>',
    )
    path = tmp_path / "p.urdf"
    path.write_text(text)
    return px.load_urdf(path)


def test_no_limit_encodings_stay_free():
    model = pin.Model()
    kinds = [
        ("continuous", pin.JointModelRUBY(), None),
        ("infinite", pin.JointModelRY(), (-np.inf, np.inf)),
        ("huge", pin.JointModelRY(), (-1e10, 1e10)),
        ("inverted", pin.JointModelRY(), (1.0, -1.0)),
        ("equal", pin.JointModelRY(), (0.0, 0.0)),
        ("one_sided", pin.JointModelPZ(), (-0.2, 1e308)),
        ("limited", pin.JointModelRY(), (-1.0, 2.0)),
    ]
    parent = 0
    for name, joint, bounds in kinds:
        parent = model.addJoint(parent, joint, pin.SE3.Identity(), name)
        model.appendBodyToJoint(parent, pin.Inertia.FromSphere(1.0, 0.1), pin.SE3.Identity())
        if bounds is not None:
            iq = model.joints[parent].idx_q
            model.lowerPositionLimit[iq], model.upperPositionLimit[iq] = bounds
    limits = {lim.joint: lim for lim in joint_limits(model)}
    assert "continuous" not in limits  # two position coordinates: no limit
    for name in ("infinite", "huge", "inverted", "equal"):
        assert not limits[name].limited, name
    assert limits["one_sided"].lower == -0.2 and limits["one_sided"].upper == np.inf
    assert (limits["limited"].lower, limits["limited"].upper) == (-1.0, 2.0)
    assert JointLimits(model).joints == ["one_sided", "limited"]
    with pytest.raises(px.exceptions.NameNotFound, match="nope"):
        joint_limits(model, {"nope": 0.5})
    with pytest.raises(px.exceptions.InvalidParameter, match=r"\[0, 1\]"):
        joint_limits(model, 1.5)


def test_pendulum_plastic_impact_then_rests_on_its_limit(tmp_path):
    robot = _pendulum(tmp_path, lower=0.1, upper=0.5)
    system = px.System(robot)
    traj = px.simulate(system, 1.0, q0=np.array([0.4]))  # swings down onto 0.1
    impacts = [e for e in traj.events if e.name == "limit:j0"]
    assert len(impacts) == 1
    hit = impacts[0]
    assert hit.info["side"] == "lower" and hit.info["approach_velocity"] < 0
    inertia = pin.crba(robot.model, robot.data, np.array([0.1]))[0, 0]
    assert hit.info["energy_loss"] == pytest.approx(
        0.5 * inertia * hit.info["approach_velocity"] ** 2, rel=1e-9
    )
    after = traj.t > hit.t
    assert np.abs(traj.q[after, 0] - 0.1).max() < 1e-9
    assert np.abs(traj.v[after, 0]).max() < 1e-9
    # at rest the limit carries the gravity torque m g (l/2) sin(0.1)
    force = traj.outputs["joint_limits.force"][-1, 0]
    assert force == pytest.approx(1.0 * G * 0.2 * np.sin(0.1), rel=1e-9)
    assert traj.phases[-1].name == "limit:j0@lower"
    assert np.abs(traj.energy_balance().residual).max() < 1e-9
    # without limits the pendulum swings through
    free = px.simulate(px.System(robot, joint_limits=False), 1.0, q0=np.array([0.4]))
    assert free.q[:, 0].min() < -0.3 and not free.events


def test_restitution_per_joint_and_lift_off(tmp_path):
    robot = _pendulum(tmp_path, lower=0.1, upper=0.5)
    limits = JointLimits(robot.model, restitution={"j0": 0.5}, rest_velocity=1e-3)
    system = px.System(robot, joint_limits=False, components=[limits])
    traj = px.simulate(system, 1.0, q0=np.array([0.4]))
    impacts = [e for e in traj.events if e.name == "limit:j0"]
    first, second = impacts[0], impacts[1]
    assert first.info["bounce"] and first.t < second.t
    i = np.flatnonzero(traj.t == first.t)[-1]
    assert traj.v[i, 0] == pytest.approx(-0.5 * first.info["approach_velocity"], rel=1e-12)
    assert all(e.info["approach_velocity"] < 0 for e in impacts)
    assert np.abs(traj.energy_balance().residual).max() < 1e-9
    # a torque that pulls the joint off its limit: lift-off when the reaction crosses zero
    robot = _pendulum(tmp_path, lower=0.1, upper=3.0)
    robot.model.gravity.setZero()
    system = px.System(robot)
    traj = px.simulate(
        system,
        0.5,
        q0=np.array([0.1]),
        control=lambda t, x: np.array([-1.0 + 10.0 * t]),
    )
    names = [e.name for e in traj.events]
    assert names == ["limit-off:j0"]
    assert traj.events[0].t == pytest.approx(0.1, abs=1e-10)
    assert traj.q[-1, 0] > 0.1


def test_effort_saturation_and_velocity_report(tmp_path):
    robot = _pendulum(tmp_path, lower=-10, upper=10, velocity=1.0, effort=2.0)
    robot.model.gravity.setZero()
    u = np.array([5.0])
    system = px.System(robot, saturate_efforts=True)
    assert any(isinstance(c, EffortSaturation) for c in system.components)
    x0 = system.initial_state()
    inertia = pin.crba(robot.model, robot.data, np.zeros(1))[0, 0]
    assert system.step(0.0, x0, u).a[0] == pytest.approx(2.0 / inertia, rel=1e-12)
    assert px.System(robot).step(0.0, x0, u).a[0] == pytest.approx(5.0 / inertia, rel=1e-12)
    with pytest.warns(VelocityLimitWarning, match=r"'j0'.*t = ") as record:
        traj = px.simulate(system, 0.5, control=u, output_dt=1e-3)
    warned = [w for w in record if issubclass(w.category, VelocityLimitWarning)]
    assert len(warned) == 1
    assert warned[0].filename == __file__  # it points at the caller's simulate(...) line
    when = float(str(warned[0].message).split("t = ")[1].split(" s")[0])
    assert when == pytest.approx(inertia * 1.0 / 2.0, rel=1e-5)  # v = (2 / I) t reaches 1
    assert not traj.events
    balance = traj.energy_balance()
    assert balance.input_work[-1] == pytest.approx(2.0 * traj.q[-1, 0], rel=1e-9)
    assert np.abs(balance.residual).max() < 1e-9


def test_start_outside_the_range_warns(tmp_path):
    robot = _pendulum(tmp_path, lower=-0.5, upper=0.5)
    with pytest.warns(JointLimitWarning, match="'j0' starts at 0.7"):
        px.simulate(px.System(robot), 0.05, q0=np.array([0.7]))


def test_panda_stays_within_its_limits(robots_dir):
    """The Panda falls for 3 s onto its stops. The ``<mimic>`` coupling force of its fingers
    (and each stop's reaction) at every sample equals the multiplier of the KKT system built
    here from Pinocchio's ``crba`` and ``rnea`` with the rows written out (``±e_i`` on held
    stops, ``e_f − k e_l`` for the coupling, Baumgarte's ``2ω J v + ω² φ``): ``M a + h = τ +
    Jᵀλ``, ``J a + γ = 0``. Both are backward-stable solves of one system, so they differ
    by at most ``(nv + m) ε κ(K) ‖(a, λ)‖∞`` (forward error of a solve, κ of the KKT
    matrix K; 0.02 ε κ(K) ‖(a, λ)‖∞ measured)."""
    robot = px.load_robot("panda")
    model = robot.model
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.0, 0.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        traj = px.simulate(px.System(robot), 3.0, q0=q0)
    lower, upper = model.lowerPositionLimit, model.upperPositionLimit
    violation = np.maximum(lower - traj.q, traj.q - upper).max()
    assert violation < 1e-6  # fingers included
    assert np.abs(traj.energy_balance().residual).max() < 1e-9
    losses = [e.info["energy_loss"] for e in traj.events if e.name.startswith("limit:")]
    assert min(losses) > -1e-12 and sum(losses) > 1.0
    velocity = [w for w in caught if issubclass(w.category, VelocityLimitWarning)]
    names = [str(w.message).split("'")[1] for w in velocity]
    assert len(names) == len(set(names)) > 0  # one warning per joint
    # the <mimic> fingers, on their limits and coupled, stay mirrored; the coupling force is out
    i1, i2 = (model.joints[model.getJointId(f"panda_finger_joint{k}")].idx_q for k in (1, 2))
    assert np.abs(traj.q[:, i2] - traj.q[:, i1]).max() < 1e-12
    coupling = traj.outputs["mimic:panda_finger_joint2.force"]
    assert coupling.shape == (len(traj), 1)
    system = px.System(robot)
    assert not robot.joint_stiffness.any()  # τ = −D v below: no input, no joint spring
    limits = next(c for c in system.components if isinstance(c, JointLimits))
    mimic = next(c for c in system.components if c.name == "mimic:panda_finger_joint2")
    stops = traj.outputs["joint_limits.force"]
    held = traj.outputs["joint_limits.held"].astype(bool)
    assert held[:, -2:].any() and np.abs(coupling).max() > 0.1  # fingers on stops, pulled
    for i in range(len(traj)):
        expected, bound = _panda_reactions(model, limits, mimic, traj.q[i], traj.v[i], held[i])
        assert abs(coupling[i, 0] - expected[-1]) <= bound, (traj.t[i], coupling[i], expected)
        assert np.abs(stops[i, held[i]] - expected[:-1]).max(initial=0.0) <= bound, traj.t[i]
    # joint_limits=False: the old result, the run of a model without limits
    free = px.simulate(px.System(robot, joint_limits=False, mimic=False), 3.0, q0=q0)
    unlimited = robot.model.copy()
    unlimited.lowerPositionLimit[:] = -np.inf
    unlimited.upperPositionLimit[:] = np.inf
    unlimited.velocityLimit[:] = np.inf
    reference = px.simulate(px.System(unlimited), 3.0, q0=q0)
    np.testing.assert_array_equal(free.x[-1], reference.x[-1])
    assert np.maximum(lower - free.q, free.q - upper).max() > 1.0


def _panda_reactions(model, limits, mimic, q, v, held):
    """The reactions of the held stops (in the order of ``limits.limits``) and of the
    ``<mimic>`` coupling (last) from the KKT system of Pinocchio's ``crba`` and ``rnea`` with
    the rows written out, and the forward-error bound ``(nv + m) ε κ(K) ‖(a, λ)‖∞``."""
    rows, drift = [], []
    for lim, on in zip(limits.limits, held, strict=True):
        if on:  # the nearer stop: sign +1 on a lower one, −1 on an upper one
            lower = abs(q[lim.iq] - lim.lower) < abs(q[lim.iq] - lim.upper)
            sign, stop = (1.0, lim.lower) if lower else (-1.0, lim.upper)
            row = np.zeros(model.nv)
            row[lim.iv] = sign
            phi = sign * (q[lim.iq] - stop)
            rows.append(row)
            drift.append(2.0 * limits.omega * sign * v[lim.iv] + limits.omega**2 * phi)
    k, omega = mimic.multiplier, mimic.stabilization
    row = np.zeros(model.nv)
    row[mimic.iv], row[mimic.iv_leader] = 1.0, -k
    phi = q[mimic.iq] - k * q[mimic.iq_leader] - mimic.offset
    rows.append(row)
    drift.append(2.0 * omega * (row @ v) + omega**2 * phi)
    jacobian, drift = np.array(rows), np.array(drift)
    data = model.createData()
    mass = pin.crba(model, data, q)
    mass = np.triu(mass) + np.triu(mass, 1).T
    bias = pin.rnea(model, data, q, v, np.zeros(model.nv))
    tau = -model.damping * v  # no input, no joint spring: the joints' viscous damping
    m = len(drift)
    kkt = np.block([[mass, jacobian.T], [jacobian, np.zeros((m, m))]])
    solution = np.linalg.solve(kkt, np.r_[tau - bias, -drift])  # (a, −λ)
    bound = (model.nv + m) * np.finfo(float).eps * np.linalg.cond(kkt)
    return -solution[model.nv :], bound * np.abs(solution).max()


def test_a_prescribed_joint_follows_its_law_through_its_limits():
    """The law of a prescribed joint rules: its URDF limits are not enforced."""
    robot = _pendulum_model_with_limit()
    system = px.System(robot, components=[px.Prescribed("j0", lambda t: (2.0 * t, 2.0, 0.0))])
    assert "j0" not in system.components[0].joints  # the limits component leaves it out
    traj = px.simulate(system, 1.0, q0=np.zeros(1), output_dt=0.1)
    assert np.abs(traj.q[:, 0] - 2.0 * traj.t).max() < 1e-12
    assert traj.q[-1, 0] == pytest.approx(2.0)  # past the upper limit 1


def _pendulum_model_with_limit():
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "j0")
    model.appendBodyToJoint(j, pin.Inertia.FromSphere(1.0, 0.1), pin.SE3.Identity())
    model.lowerPositionLimit[:] = -1.0
    model.upperPositionLimit[:] = 1.0
    return model


def test_a_loop_that_drives_a_joint_through_its_stop_is_named(tmp_path):
    """The one case without a solution: a prescribed crank turns a four-bar whose rocker has a
    stop inside its swing. The impact problem is contradictory (the loop and the crank's law
    carry the rocker through), and the error names the event, the components, the time and
    the state."""
    import sys
    from pathlib import Path

    examples = Path(__file__).resolve().parents[1] / "examples"
    sys.path.insert(0, str(examples))
    try:
        import four_bar
    finally:
        sys.path.remove(str(examples))
    text = four_bar.URDF.read_text()
    start = text.index('<joint name="rocker_joint"')
    limit = text.index('<limit lower="-1000" upper="1000"', start)
    path = tmp_path / "four_bar.urdf"  # the rocker swings over [3.82, 4.51] rad: a stop at 4.3
    path.write_text(text[:limit] + text[limit:].replace('upper="1000"', 'upper="4.3"', 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linkage = px.System(px.load_urdf(path))
        x0 = px.close_loops(linkage, four_bar.GUESS)
        theta0 = float(x0[0])
        law = four_bar.revolution(1.0)
        crank = px.Prescribed("crank_joint", lambda t: (theta0 + law(t)[0], *law(t)[1:]))
        system = px.System(linkage.robot, components=[crank])
        with pytest.raises(px.exceptions.EventError) as caught:
            px.simulate(system, 1.0, x0=x0)
    err = caught.value
    assert err.event.startswith("limit") and 0.0 < err.time < 1.0
    assert {"prescribed:crank_joint", "joint_limits", "pivot"} <= set(err.components)  # the loop
    assert err.state[2] == pytest.approx(4.3, abs=1e-9)  # the rocker on its stop
    assert "rocker_joint" in str(err) and "t = " in str(err) and "state = " in str(err)


def test_held_joints_follow_baumgartes_rows_at_random_states(panda):
    """The rows of joints held on their stops (``JointLimits.compiled_rows``, the one
    statement both paths evaluate) at seeded random Panda states: ``J = ±e_iv`` and
    ``γ = 2ω φ̇ + ω² φ`` with φ the distance to the stop, written out here; the acceleration
    step then gives the accelerations of the KKT system built from Pinocchio's ``crba`` and
    ``rnea`` with those rows, so each held joint reads ``φ̈ = −2ω φ̇ − ω² φ`` (Baumgarte)."""
    from pinext.contact.limits import FREE, LOWER, UPPER, LimitModes
    from pinext.simulation.component import Phase

    system = px.System(panda, mimic=False)  # the Panda's only component: its limits
    model = system.model
    limits = next(c for c in system.components if isinstance(c, JointLimits))
    omega = limits.omega
    assert omega > 0.0
    rng = np.random.default_rng(5)
    for _ in range(5):
        states = list(rng.choice([FREE, LOWER, UPPER], size=len(limits.limits)))
        states[0] = LOWER  # at least one row
        mode = LimitModes(tuple(states), tuple(limits.joints))
        phase = Phase().replace(limits.name, mode)
        q = pin.randomConfiguration(model)
        v = rng.normal(size=model.nv)
        x = system.initial_state(q, v)
        rows = limits.constraint_rows(0.0, x, q, v, mode, None)
        jacobian, drift = [], []
        for lim, state in zip(limits.limits, states, strict=True):
            if state is FREE:
                continue
            sign = 1.0 if state is LOWER else -1.0
            phi = sign * (q[lim.iq] - (lim.lower if state is LOWER else lim.upper))
            row = np.zeros(model.nv)
            row[lim.iv] = sign
            jacobian.append(row)
            drift.append(2.0 * omega * sign * v[lim.iv] + omega**2 * phi)
        jacobian, drift = np.array(jacobian), np.array(drift)
        np.testing.assert_array_equal(rows.jacobian, jacobian)
        np.testing.assert_allclose(rows.drift, drift, rtol=1e-14, atol=1e-12)
        # the step's accelerations: [M Jᵀ; J 0] [a; −λ] = [τ − h; −γ] (τ: inputs and damping)
        u = rng.normal(size=model.nv)
        data = model.createData()
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        bias = pin.rnea(model, data, q, v, np.zeros(model.nv))
        step = system.acceleration_step(phase)(0.0, x, u)
        np.testing.assert_allclose(step.tau, u - model.damping * v, rtol=1e-14, atol=1e-14)
        m = len(drift)
        kkt = np.block([[mass, jacobian.T], [jacobian, np.zeros((m, m))]])
        expected = np.linalg.solve(kkt, np.r_[step.tau - bias, -drift])[: model.nv]
        a = step.a
        scale = np.abs(expected).max()
        assert np.abs(a - expected).max() <= 1e-9 * scale
