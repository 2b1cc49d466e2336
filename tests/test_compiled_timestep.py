"""Compiled time stepping (pinext.compiled.timestep): its kernels equal Pinocchio's
(``nonLinearEffects``, ``integrate``), and its runs equal the same Moreau–Jean scheme solved
step by step with Pinocchio's Delassus operator and ADMM solver, on real robots from their
neutral pose and from seeded random poses, with joint limits, URDF joint friction, springs
and contacts together."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.check import random_state
from pinext.compiled import pack
from pinext.compiled.aba import joint_transforms
from pinext.compiled.crba import ltdl
from pinext.compiled.rnea import inverse_dynamics, nonlinear_effects
from pinext.compiled.stepping import _work, stepping_scene
from pinext.compiled.timestep import _delassus, _tip, integrate
from pinext.contact import Contact, plane
from pinext.control import JointPD
from pinext.exceptions import InvalidParameter
from pinext.robots import load_robot
from pinext.robots.solo12 import load_solo12
from pinext.simulation.timestepping import simulate_timestepping

#: The tests compare the compiled loop with Pinocchio's solver themselves (both paths in
#: one test), so the suite's Python-path parametrisation does not apply.
BOTH_PATHS = False


def _mixed_model() -> pin.Model:
    """A tree of every joint the compiled loop integrates: free flyer, spherical,
    translation, continuous, revolute (unaligned) and prismatic, with random inertias."""
    rng = np.random.default_rng(0)
    model = pin.Model()
    joints = [
        pin.JointModelFreeFlyer(),
        pin.JointModelSpherical(),
        pin.JointModelTranslation(),
        pin.JointModelRUBY(),
        pin.JointModelRevoluteUnaligned(*(rng.normal(size=3) / np.linalg.norm([1, 1, 1]))),
        pin.JointModelPZ(),
    ]
    parent = 0
    for i, joint in enumerate(joints):
        placement = pin.SE3(pin.rpy.rpyToMatrix(*rng.normal(size=3)), rng.normal(size=3) * 0.2)
        parent = model.addJoint(parent if i != 4 else 2, joint, placement, f"j{i}")
        a = rng.normal(size=(3, 3)) * 0.1
        rotational = a @ a.T + 0.01 * np.eye(3)
        inertia = pin.Inertia(rng.uniform(0.5, 2.0), rng.normal(size=3) * 0.1, rotational)
        model.appendBodyToJoint(parent, inertia, pin.SE3.Identity())
    return model


def _models():
    return [_mixed_model(), load_solo12()[0].model, load_robot("go1").model]


@pytest.mark.parametrize("which", range(3))
def test_bias_forces_equal_pinocchio(which):
    """The compiled RNEA at q̈ = 0 equals ``pin.nonLinearEffects``, and at q̈ = a
    ``pin.rnea`` (seeded random states and accelerations)."""
    model = _models()[which]
    pm, data, rng = pack(model), model.createData(), np.random.default_rng(which)
    out = np.zeros(model.nv)
    for _ in range(10):
        q, v, a = random_state(model, rng).q, rng.normal(size=model.nv), rng.normal(size=model.nv)
        joint_transforms(pm, q)
        nonlinear_effects(pm, v, out)
        ref = pin.nonLinearEffects(model, data, q, v)
        assert np.abs(out - ref).max() <= 1e-12 * (1.0 + np.abs(ref).max())
        inverse_dynamics(pm, v, a, out)
        ref = pin.rnea(model, data, q, v, a)
        assert np.abs(out - ref).max() <= 1e-12 * (1.0 + np.abs(ref).max())


@pytest.mark.parametrize("which", range(3))
@pytest.mark.parametrize("scale", [1e-7, 1e-3, 0.5, 3.0])
def test_integrate_equals_pinocchio(which, scale):
    """q ⊕ δ equals ``pin.integrate`` for small (the series branch) and large steps."""
    model = _models()[which]
    pm, rng = pack(model), np.random.default_rng(7)
    out = np.zeros(model.nq)
    for _ in range(10):
        q = random_state(model, rng).q
        dv = rng.normal(size=model.nv) * scale
        integrate(pm, q, dv, out)
        ref = pin.integrate(model, q, dv)
        assert np.abs(out - ref).max() <= 1e-13 * (1.0 + np.abs(ref).max())


def _chain(pm, dof):
    """A dof and its ancestors."""
    chain = []
    while dof >= 0:
        chain.append(int(dof))
        dof = pm.dof_parent[dof]
    return chain


@pytest.mark.parametrize("which", range(4))
def test_delassus_operator_equals_j_minv_jt(which):
    """The loop's Delassus operator, from the LTDL factors and walking each row's dof chain
    (densely for a row across two branches), equals J M⁻¹ Jᵀ with Pinocchio's CRBA, on a
    mixed-joint tree, Solo12, go1 and the Panda (its fingers on two branches), from seeded
    random poses: point-like rows (random entries on one dof's chain), a joint's unit row,
    and two-dof rows e_a − k e_b within one chain and across branches (as a ``<mimic>``)."""
    model = [*_models(), load_robot("panda").model][which]
    pm, rng, nv = pack(model), np.random.default_rng(11), model.nv
    data = model.createData()
    inf, zero, none = np.full(nv, np.inf), np.zeros(nv), ()
    scene = stepping_scene(
        model, pm, none, none, none, none, inf, zero, zero, zero, 0.0, 1e-10, 10, None
    )
    work = _work(model, scene)  # the loop's own workspace, its rows replaced below
    across = [
        (a, b) for a in range(nv) for b in range(a) if a not in _chain(pm, b) + _chain(pm, a)[1:]
    ]
    assert across, "a tree with branches"
    for _ in range(5):
        q = random_state(model, rng).q
        mass = pin.crba(model, data, q)
        mass = np.triu(mass) + np.triu(mass, 1).T
        factors = mass.copy()
        ltdl(pm, factors)
        rows, tips = [], []
        for dof in rng.choice(nv, 4):
            row = np.zeros(nv)
            row[_chain(pm, dof)] = rng.normal(size=len(_chain(pm, dof)))
            rows.append(row)
            tips.append(dof)
        rows.append(np.eye(nv)[rng.integers(nv)])
        tips.append(int(np.flatnonzero(rows[-1])[0]))
        for a, b in (tuple(rng.choice(nv, 2, replace=False)), across[rng.integers(len(across))]):
            rows.append(np.eye(nv)[a] - rng.uniform(0.5, 2.0) * np.eye(nv)[b])
            tips.append(_tip(pm, a, b))
            deeper = a if b in _chain(pm, a) else b if a in _chain(pm, b) else -1
            assert tips[-1] == deeper
        jac = np.array(rows)
        m = len(rows)
        ws = work._replace(
            factors=factors, half=np.zeros((m, nv)), jac=jac, tip=np.array(tips),
            delassus=np.zeros((m, m)),
        )  # fmt: skip
        _delassus(pm, ws, m)
        inverse = np.linalg.inv(mass)
        expected = jac @ np.linalg.solve(mass, jac.T)
        # a solve's error: n ε cond(M) ‖J‖² ‖M⁻¹‖
        bound = nv * 2.2e-16 * np.linalg.cond(mass) * np.linalg.norm(jac, 2) ** 2
        bound *= np.linalg.norm(inverse, 2)
        assert np.abs(ws.delassus - expected).max() <= bound


def _runs(system, t_final, dt, tolerance, control=None, **kwargs):
    """The compiled run and a Pinocchio run (its ADMM, or its PGS where ADMM does not
    converge on every step: the reference must have solved each problem)."""

    def run(solver):
        return simulate_timestepping(
            system, t_final, dt=dt, control=control, solver=solver, tolerance=tolerance,
            max_iterations=20_000, **kwargs,
        )  # fmt: skip

    compiled = run("compiled")
    assert compiled.meta["stats"]["solver"] == "compiled"
    assert compiled.meta["stats"]["unconverged"] == 0, (compiled.meta["stats"], tolerance)
    for solver in ("admm", "pgs"):
        reference = run(solver)
        if reference.meta["stats"]["unconverged"] == 0:
            return compiled, reference
    raise AssertionError(f"neither of Pinocchio's solvers converged at {tolerance}")


def _first_touchdowns(run):
    """The first touchdown of each contact (later touchdowns and lift-offs hinge on impulses
    of the order of the solvers' tolerance, and are not compared)."""
    found = {}
    for e in run.events:
        found.setdefault(e.name, e.t)
    return {k: t for k, t in found.items() if k.startswith("touchdown")}


def _agree(system, t_final, dt, control=None, **kwargs):
    """The compiled loop and Pinocchio's ADMM run one scene at two solver tolerances. Both
    solve every step's problem to the tolerance, so their difference is the tolerance's
    doing: it shrinks with it (1000× tighter: at least 10× smaller, down to the round-off
    floor n·tol·(1 + |v|)); the first touchdowns match; each run's audit closes."""
    diffs = []
    for tolerance in (1e-7, 1e-10):
        a, b = runs = _runs(system, t_final, dt, tolerance, control, **kwargs)
        assert _first_touchdowns(a) == _first_touchdowns(b)
        np.testing.assert_allclose(a.t, b.t, rtol=0, atol=1e-12)
        diffs.append(max(np.abs(a.v - b.v).max(), np.abs(a.q - b.q).max()))
        for run in runs:
            scale = 1.0 + np.abs(run.outputs["energy.kinetic"]).max()
            assert np.abs(run.energy_balance().residual).max() <= 1e-9 * scale
            _energies_are_pinocchios(system, run)
    floor = a.t.size * 1e-10 * (1.0 + np.abs(a.v).max())
    assert diffs[1] <= diffs[0] / 10.0 + floor, diffs
    return runs


def _energies_are_pinocchios(system, run):
    """The energies a run records at its samples (the compiled loop's own, from its CRBA and
    placements) equal :meth:`System.mechanism_energy` of the recorded states: Pinocchio's
    ``computeKineticEnergy`` and ``computePotentialEnergy`` and the springs' ½ k δ²."""
    expected = [system.mechanism_energy(*system.split(x)) for x in run.x]
    for name in ("kinetic", "gravity", "elastic"):
        values = np.array([terms[name] for terms in expected])
        atol = 1e-12 * (1.0 + np.abs(values).max())  # (sums of products of that size)
        np.testing.assert_allclose(run.outputs[f"energy.{name}"], values, rtol=0, atol=atol)


def _drop_pose(model, feet, rng, height=0.02):
    """A seeded random configuration (joints inside their limits, base tilted by up to
    0.2 rad) lifted so that its lowest foot is ``height`` above the ground."""
    q = random_state(model, rng).q
    q[:3] = 0.0
    q[3:7] = pin.Quaternion(pin.rpy.rpyToMatrix(*rng.uniform(-0.2, 0.2, 3))).coeffs()
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    q[2] = height - min(data.oMf[model.getFrameId(f)].translation[2] for f in feet)
    return q


@pytest.mark.parametrize("seed", [None, 1, 2, 3])
def test_go1_on_the_ground_with_limits_and_joint_friction_as_with_pinocchios_solver(seed):
    """go1 (free flyer, URDF joint friction and limits) on its four feet, from its neutral
    pose and from seeded random poses and velocities: the compiled loop and Pinocchio's ADMM
    both converge on every step and give the same steps; no foot sinks; the audit closes.
    (Short runs: a frictional contact problem has no unique solution in general, and over a
    long run two solvers may pick different ones where both stall.)"""
    robot = load_robot("go1")
    feet = ("FL_foot", "FR_foot", "RL_foot", "RR_foot")
    system = px.System(robot, contacts=())
    assert {type(c).__name__ for c in system.components} == {"JointLimits", "JointFriction"}
    rng = np.random.default_rng(0 if seed is None else seed)
    if seed is None:
        q0 = pin.neutral(robot.model)
        data = robot.model.createData()
        pin.framesForwardKinematics(robot.model, data, q0)
        q0[2] -= min(data.oMf[robot.model.getFrameId(f)].translation[2] for f in feet)
    else:
        q0 = _drop_pose(robot.model, feet, rng, height=0.0)
    v0 = np.r_[rng.normal(scale=0.1, size=6), rng.normal(scale=0.5, size=12)]
    contacts = [Contact(plane(f), friction=0.8) for f in feet]
    runs = _agree(system, 0.02, 1e-3, q0=q0, v0=v0, contacts=contacts)
    # the φ/h term closes each gap to first order: a foot sinks by at most the step's
    # second-order term ½ h² a, a = 100 m/s² bounding the feet's accelerations
    assert runs[0].outputs["contact.gap"].min() >= -0.5 * 1e-3**2 * 100.0


def _solo12_drop():
    """Solo12 0.3 m above its standing posture, and the PD posture law on its twelve joints
    (kp 10, kd 0.2; nothing on the free flyer): (system, q0, JointPD)."""
    robot, q_ref = load_solo12()
    system = px.System(robot, contacts=())
    q0 = q_ref.copy()
    q0[2] = 0.3
    kp, kd = np.r_[np.zeros(6), np.full(12, 10.0)], np.r_[np.zeros(6), np.full(12, 0.2)]
    return system, q0, JointPD(system, q_ref, kp, kd)


def test_solo12_posture_pd_in_the_loop_equals_the_same_law_in_python():
    """Solo12 dropped and standing: the JointPD evaluated inside the compiled loop, the same
    law as a Python function called per step, and Pinocchio's ADMM with the Python law give
    one run (the PD law in the loop is the controller's own formula)."""
    system, q0, pd = _solo12_drop()

    def law(t, x):
        return pd(t, x[:19], x[19:37], {})

    inside = simulate_timestepping(system, 0.5, dt=1e-3, q0=q0, control=pd, output_dt=0.01)
    in_python = simulate_timestepping(system, 0.5, dt=1e-3, q0=q0, control=law, output_dt=0.01)
    assert in_python.meta["stats"]["solver"] == inside.meta["stats"]["solver"] == "compiled"
    assert inside.meta["stats"]["control_in_loop"]
    assert not in_python.meta["stats"]["control_in_loop"]
    np.testing.assert_array_equal(inside.x, in_python.x)  # the same arithmetic
    np.testing.assert_allclose(inside.outputs["input"], in_python.outputs["input"], atol=1e-12)
    _agree(system, 0.5, 1e-3, control=law, q0=q0, output_dt=0.01)


def test_an_arm_with_springs_limits_friction_and_a_table():
    """A UR5 with joint springs and dampers, Coulomb friction on every joint, its limits,
    and its tool falling onto a table, from seeded random poses: compiled = Pinocchio."""
    robot = load_robot("ur5")
    model = robot.model
    rng = np.random.default_rng(5)
    robot.joint_stiffness[:] = rng.uniform(0.0, 20.0, model.nv)
    robot.joint_damping[:] = rng.uniform(0.0, 0.5, model.nv)
    names = list(model.names)[1:]
    friction = dict(zip(names, rng.uniform(0.1, 1.0, len(names)).tolist(), strict=True))
    system = px.System(robot, contacts=(), joint_friction=friction)
    tool = model.frames[-1].name
    for _ in range(2):
        q0 = random_state(model, rng).q
        data = model.createData()
        pin.framesForwardKinematics(model, data, q0)
        table = pin.SE3(np.eye(3), data.oMf[model.getFrameId(tool)].translation - [0, 0, 0.05])
        contacts = [Contact(plane(tool, table.translation), friction=0.5)]
        _agree(system, 0.4, 1e-3, q0=q0, contacts=contacts)


def test_unsupported_scenes_say_why():
    """solver='compiled' on a scene the loop does not cover is refused with the way out."""
    model = pin.Model()
    j = model.addJoint(0, pin.JointModelPlanar(), pin.SE3.Identity(), "planar")
    model.appendBodyToJoint(j, pin.Inertia.FromBox(1.0, 0.1, 0.1, 0.1), pin.SE3.Identity())
    system = px.System(model)
    with pytest.raises(InvalidParameter, match="compiled loop"):
        simulate_timestepping(system, 0.1, dt=1e-3, solver="compiled")
    run = simulate_timestepping(system, 0.1, dt=1e-3)  # auto: Pinocchio's solver
    assert run.meta["stats"]["solver"] == "admm"


def test_a_python_controller_held_over_several_steps():
    """A Controller sampled every 2 ms over 1 ms steps: the compiled loop calls it once per
    step and the hold gives the same input to both steps of a period, as on Pinocchio's
    path; the applied inputs are recorded."""
    system, q0, pd = _solo12_drop()
    runs = [
        px.simulate(
            system, 0.3, q0=q0, control=pd, method="timestepping", dt=1e-3, control_period=2e-3
        )
    ]
    assert runs[0].meta["stats"]["solver"] == "compiled"
    inputs = runs[0].outputs["input"][:-1]
    for k in range(0, inputs.shape[0] - 2, 2):  # held over each period of two steps
        assert np.all(inputs[k : k + 2] == inputs[k])
    assert np.any(inputs[2] != inputs[0])
    diffs = []
    for tolerance in (1e-7, 1e-10):  # the difference is the solvers' tolerance's doing
        a, b = (
            simulate_timestepping(
                system, 0.3, dt=1e-3, q0=q0, control=_held(pd, system), solver=solver,
                tolerance=tolerance,
            )
            for solver in ("compiled", "admm")
        )  # fmt: skip
        assert a.meta["stats"]["unconverged"] == b.meta["stats"]["unconverged"] == 0
        diffs.append(np.abs(a.v - b.v).max())
    np.testing.assert_array_equal(a.outputs["input"][:-1], runs[0].outputs["input"][:-1])
    assert diffs[1] <= diffs[0] / 10.0 + a.t.size * 1e-10 * (1.0 + np.abs(a.v).max()), diffs


def _held(pd, system):
    from pinext.control.base import as_state_law
    from pinext.simulation.sampling import HeldControl

    return HeldControl(as_state_law(pd, system.layout), 2e-3, None, lazy=True)


@pytest.mark.parametrize("start", ["neutral", "middle", 4])
def test_panda_with_mimic_fingers_and_limits_converges_to_the_event_driven_run(start):
    """The Panda (example-robot-data: seven joints with limits, two fingers coupled by a URDF
    ``<mimic>``) falls limp from its neutral pose (joint 4 starts outside its range), from
    the middle of its ranges and from a seeded random pose, time stepping on the compiled
    loop with the coupling as a row: the coupling holds (the row makes the step end on it),
    no joint passes its limits by more than the solver's tolerance, the audit closes, and
    the run converges at first order to the event-driven simulate (errors halve with h)."""
    robot = load_robot("panda")
    model = robot.model
    system = px.System(robot)
    (mimic,) = [c for c in system.components if type(c).__name__ == "Mimic"]
    if start == "neutral":
        q0 = pin.neutral(model)
    elif start == "middle":
        q0 = 0.5 * (model.lowerPositionLimit + model.upperPositionLimit)
    else:
        q0 = random_state(model, np.random.default_rng(start)).q
    q0[mimic.iq] = mimic.multiplier * q0[mimic.iq_leader] + mimic.offset
    t_final = 0.4
    reference = px.simulate(system, t_final, q0=q0).q[-1]
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        run = simulate_timestepping(system, t_final, dt=dt, q0=q0, output_dt=0.01)
        assert run.meta["stats"]["solver"] == "compiled"
        assert run.meta["stats"]["unconverged"] == 0
        steps = run.meta["stats"]["steps"]
        coupling = run.q[:, mimic.iq] - mimic.multiplier * run.q[:, mimic.iq_leader] - mimic.offset
        assert np.abs(coupling).max() <= steps * 1e-10 * dt
        cols = [i for i in range(model.nq) if not (start == "neutral" and i == 3)]
        inside = run.q[:, cols]  # (from neutral, joint 4 starts outside its range)
        lower, upper = model.lowerPositionLimit[cols], model.upperPositionLimit[cols]
        assert np.min(inside - lower) >= -steps * 1e-10 * dt
        assert np.min(upper - inside) >= -steps * 1e-10 * dt
        scale = 1.0 + np.abs(run.outputs["energy.kinetic"]).max()
        assert np.abs(run.energy_balance().residual).max() <= 1e-9 * scale
        errors.append(np.abs(run.q[-1] - reference).max())
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(1.5 <= r <= 2.6 for r in ratios), (errors, ratios)


def test_saturated_inputs_as_with_pinocchios_solver():
    """A UR5 under a stiff PD that asks for more than its URDF effort limits, with
    ``saturate_efforts=True`` and its joint limits: the compiled loop clips the inputs as the
    EffortSaturation component does on Pinocchio's path (same steps, same input work)."""
    robot = load_robot("ur5")
    model = robot.model
    system = px.System(robot, saturate_efforts=True)
    q0 = random_state(model, np.random.default_rng(11)).q
    target = 0.5 * (model.lowerPositionLimit + model.upperPositionLimit)
    pd = JointPD(system, target, 2000.0, 1.0)  # kd h / I < 2 on the wrist: a stable loop
    assert np.abs(pd(0.0, q0, np.zeros(6), {})).max() > model.effortLimit.max()
    runs = _agree(system, 0.2, 1e-3, control=pd, q0=q0)
    work = [run.state("input_work")[-1] for run in runs]
    assert abs(work[0] - work[1]) <= 1e-6 * (1.0 + abs(work[1]))


@pytest.mark.parametrize("solver", ["auto", "admm"])
def test_a_long_run_is_estimated_on_the_loop_that_would_run_it(monkeypatch, solver):
    """A run of many steps is timed over its first steps on the loop that would run it (the
    compiled one, or Pinocchio's solver) and refused with the estimate when it exceeds the
    limit; ``force=True`` runs it."""
    import pinext.simulation.timestepping as ts
    import pinext.validation as validation

    robot, q_ref = load_solo12()
    system = px.System(robot, contacts=())
    monkeypatch.setattr(ts, "TIMED_ABOVE", 20)
    monkeypatch.setattr(validation, "LONG_RUN", 1e-7)  # any estimate exceeds it
    with pytest.raises(InvalidParameter, match=r"30 steps, about .*force=True"):
        simulate_timestepping(system, 0.03, dt=1e-3, q0=q_ref, solver=solver)
    run = simulate_timestepping(system, 0.03, dt=1e-3, q0=q_ref, solver=solver, force=True)
    assert run.meta["stats"]["solver"] == ("compiled" if solver == "auto" else "admm")


@pytest.mark.parametrize("kind", ["linear", "zoh"])
def test_a_pd_to_a_schedule_runs_inside_the_loop_as_the_controller_does(kind):
    """A JointPD tracking a Schedule of postures (linear or held) is evaluated inside the
    compiled loop, with the reference and its slope of each step computed for a whole chunk
    at once: the same run, bit for bit, as the same controller called from Python at every
    step (its own ``JointReference``), and the inputs the controller gives."""
    robot = load_robot("ur5")
    model = robot.model
    system = px.System(robot)
    rng = np.random.default_rng(2)
    times = np.array([0.0, 0.05, 0.12, 0.2])
    postures = np.array([random_state(model, rng).q for _ in times])
    pd = JointPD(system, px.Schedule(times, postures, kind=kind), 200.0, 5.0)
    q0 = postures[0]

    def law(t, x):
        return pd(t, x[:6], x[6:12], {})

    inside = simulate_timestepping(system, 0.3, dt=1e-3, q0=q0, control=pd)
    in_python = simulate_timestepping(system, 0.3, dt=1e-3, q0=q0, control=law)
    assert inside.meta["stats"]["solver"] == in_python.meta["stats"]["solver"] == "compiled"
    assert inside.meta["stats"]["control_in_loop"]
    assert not in_python.meta["stats"]["control_in_loop"]
    np.testing.assert_array_equal(inside.x, in_python.x)
    np.testing.assert_array_equal(inside.outputs["input"], in_python.outputs["input"])
