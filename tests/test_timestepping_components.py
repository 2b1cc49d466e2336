"""Time stepping with elastic drives and loops: the rotors' angles and velocities integrated
in the mechanism's step, linearly implicit in the transmissions' forces
(:class:`pinext.contact.timestepping.SecondOrderStates`); closures (loops, ``<mimic>``) held
by their own rows (:meth:`pinext.contact.timestepping.TimeStepper.step`).

References: the event-driven run of the same System (DOP853 at rtol 1e-10), to which a
first-order scheme converges with errors halving with the step; the step's energy identity,
whose residual is round-off once the scheme's own terms are booked; the ½ h² a bound of the
contacts' penetration; Pinocchio's two conic solvers on the same steps."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import pinext as px
from pinext.check import random_state
from pinext.drives import (
    HARMONIC_DRIVE_MOTOR,
    DCMotor,
    Drive,
    ElasticTransmission,
    Gear,
    harmonic_drives,
)
from pinext.exceptions import InvalidParameter
from pinext.simulation.component import Component, SteppedStates
from pinext.simulation.timestepping import simulate_timestepping

from .conftest import example_robot_data_dir
from .models import arm_with_welded_box, assert_sound_run

JOINTS = ["shoulder_pan", "shoulder_lift", "elbow", "wrist_1", "wrist_2", "wrist_3"]
ARM_Q0 = np.array([0.3, -0.6, 1.2, -2.1, 0.8, 0.2])
VOLTS = np.array([3.0, -2.0, 4.0, 1.0, -1.0, 2.0])
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
INDUCTIVE = DCMotor(0.5, 0.05, 0.05, 2e-5, inductance=1e-3)


def _arm(**options) -> px.System:
    """The six-DOF arm on the harmonic drives of :func:`pinext.drives.harmonic_drives`: stiff
    transmissions on light wrist links (modes near 4 700 rad/s, beyond 1/h)."""
    return px.System(px.load_robot("six_dof_arm"), drives=harmonic_drives(JOINTS), **options)


def _closes(traj: px.Trajectory) -> None:
    """The step's energy identity: the residual is round-off of the energies exchanged."""
    balance = traj.energy_balance()
    assert np.abs(balance.residual).max() <= 1e-9 * max(1.0, balance.exchanged)


def _first_order(system, t_final, columns, steps=(2e-3, 1e-3, 5e-4), audit=True, solver="auto",
                 **start):  # fmt: skip
    """Time stepping at each of ``steps`` against the event-driven run from the same start
    (``q0`` or ``x0``, ``control``): the error at the end over ``columns`` of the state halves
    with the step (first order, 2 as h → 0: ratios 1.6–2.5); with ``audit``, every run's
    audit closes. Returns the runs."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = px.simulate(system, t_final, progress=False, **start)
        runs = [  # (simulate adapts a law(t, q, v, sensors); solver= is the stepper's own)
            px.simulate(system, t_final, method="timestepping", dt=dt, progress=False, **start)
            if solver == "auto"
            else simulate_timestepping(
                system, t_final, dt=dt, solver=solver, progress=False, **start
            )
            for dt in steps
        ]
    for run in runs if audit else ():
        _closes(run)
    errors = np.array([np.abs(r.x[-1, columns] - reference.x[-1, columns]).max() for r in runs])
    ratios = errors[:-1] / errors[1:]
    assert np.all((ratios > 1.6) & (ratios < 2.5)), (errors, ratios)
    return runs


def _starts() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    model = px.load_robot("six_dof_arm").model
    return [ARM_Q0, random_state(model, rng).q]


@pytest.mark.parametrize("start", [0, 1], ids=["curated", "seeded"])
def test_elastic_drives_converge_to_the_event_driven_run_at_first_order(start, simulation_path):
    """0.3 s under constant voltages, from a curated and a seeded random pose: the error to
    the event-driven run (joint and motor angles) halves with the step (ratios of a first-order
    scheme, 2 as h → 0: between 1.6 and 2.5 at these steps), and every run's audit closes."""
    system = _arm()
    runs = _first_order(system, 0.3, slice(0, 18), q0=_starts()[start], control=VOLTS)
    solver = "compiled" if simulation_path == "compiled" else "admm"
    assert all(traj.meta["stats"]["solver"] == solver for traj in runs)


def _drives_scene(start: int, held: bool = False):
    """Harmonic drives on three joints, inductive motors behind elastic transmissions on two,
    a torque source on one and a user's rotor absorber, under a Python law of the motors'
    angles, the currents and the absorber's angle (or, ``held``, constant inputs, which the
    loop holds over whole chunks), from a curated or a seeded pose: (system, x0, law,
    t_final)."""
    inductive = Drive(INDUCTIVE, ElasticTransmission(50.0, 2e3, 1.0, input_inertia=1e-5))
    drives = {joint: harmonic_drives(JOINTS)[joint] for joint in JOINTS[:3]}
    drives |= dict.fromkeys(JOINTS[3:5], inductive)
    drives[JOINTS[5]] = Drive(None, ElasticTransmission(20.0, 500.0, 0.2, input_inertia=1e-5))
    system = px.System(px.load_robot("six_dof_arm"), drives=drives, components=[_Absorber()])
    angle, current = system.layout["drives.motor_angle"], system.layout["drives.current"]
    absorber = system.layout["absorber.angle"]

    def law(t, x):  # (of the public state: the loop keeps its states in another order)
        feedback = 0.1 * x[absorber] - 0.01 * x[current].sum()
        return np.r_[VOLTS[:5], 0.5] - 0.01 * (x[angle] - 0.3 * np.cos(10.0 * t)) - feedback

    control = np.r_[VOLTS[:5], 0.5] if held else law
    return system, system.initial_state(_starts()[start]), control, 0.2005


class _Spring(Component):
    """A user's component without states: a torsion spring k on the elbow toward its start
    angle, an effort linear in q."""

    name = "spring"
    K = 30.0

    def bind(self, system):
        joint = system.model.joints[system.model.getJointId("elbow")]
        self.iq, self.iv, self.nv = joint.idx_q, joint.idx_v, system.model.nv

    def effort(self, t, x, q, v, u, mode):
        tau = np.zeros(self.nv)
        tau[self.iv] = -self.K * (q[self.iq] - ARM_Q0[2])
        return tau


def _rigid_dc_drives():
    """DC motors on rigid gears (their efforts explicit, their rotors in the armature) on the
    arm's six joints and a user's spring on its elbow (:class:`_Spring`), beside its limits,
    under a Python law from the curated pose: (system, x0, law, t_final)."""
    motor = DCMotor(1.2, 0.05, 0.05, 2e-5)
    drives = {j: Drive(motor, Gear(50.0, input_inertia=1e-6)) for j in JOINTS}
    system = px.System(px.load_robot("six_dof_arm"), drives=drives, components=[_Spring()])

    def law(t, x):
        return VOLTS * np.cos(5.0 * t)

    return system, system.initial_state(ARM_Q0), law, 0.2005


def _prescribed_hub():
    """The flexible arm's hub spun up by its law (``test_prescribed.py``): (system, x0, law,
    t_final)."""
    from .test_prescribed import spin_up

    robot = px.load_urdf(px.robot_path("flexible_arm"))
    system = px.System(robot, components=[px.Prescribed("hub", spin_up)])
    return system, system.initial_state(pin.neutral(robot.model)), None, 1.0005


def _crank_revolution(t: float) -> tuple[float, float, float]:
    """θ(t) = π (1 − cos πt): one revolution in 1 s, through ±π."""
    return (
        np.pi * (1 - np.cos(np.pi * t)),
        np.pi**2 * np.sin(np.pi * t),
        np.pi**3 * np.cos(np.pi * t),
    )


def _prescribed_crank(tmp_path: Path):
    """A two-link pendulum whose first joint is URDF ``continuous`` (q = (cos θ, sin θ)),
    turned one revolution by :func:`_crank_revolution`: (system, x0, law, t_final)."""
    from .conftest import pendulum_urdf

    text = pendulum_urdf(2).replace('name="j0" type="revolute"', 'name="j0" type="continuous"')
    urdf = tmp_path / "crank.urdf"
    urdf.write_text(text)
    robot = px.load_urdf(urdf)
    assert robot.model.joints[1].nq == 2
    system = px.System(robot, components=[px.Prescribed("j0", _crank_revolution)])
    return system, system.initial_state(pin.neutral(robot.model)), None, 1.0005


@pytest.mark.parametrize(
    "scene",
    [
        "drives-curated",
        "drives-seeded",
        "drives-held",
        "rigid-dc-drives",
        "prescribed-hub",
        "prescribed-crank",
    ],
)
def test_the_compiled_loop_steps_as_pinocchios_solvers_do(scene, simulation_path, tmp_path):
    """The components' own states, stateless efforts and prescribed joints on the compiled
    loop: the drives' scene of :func:`_drives_scene` from two poses under a law per step
    (their dissipation evaluated at each step's start) and under held inputs (its fitted
    quadratic form), DC motors on rigid gears beside a user's spring (:func:`_rigid_dc_drives`:
    efforts in v and in q), the flexible arm's prescribed hub and a continuous crank turned
    through ±π (one row each, which the loop's Gauss–Seidel solves exactly), the last step
    half as long (its elimination differs). The compiled run and the Pinocchio-solver run
    do the same arithmetic in another order: every sample's state, energy and audit term
    agree to the round-off of N steps that each solve the step's system of condition κ
    (N κ ε of each column's scale; κ = 3e5 on the drives, whose measured difference, 1e-10
    relative, is 1 % of the bound), and the audit closes."""
    if simulation_path == "python":
        pytest.skip("the compiled loop against Pinocchio's solvers")
    builds = {
        "drives-curated": lambda: _drives_scene(0),
        "drives-seeded": lambda: _drives_scene(1),
        "drives-held": lambda: _drives_scene(0, held=True),
        "rigid-dc-drives": _rigid_dc_drives,
        "prescribed-hub": _prescribed_hub,
        "prescribed-crank": lambda: _prescribed_crank(tmp_path),
    }
    system, x0, law, t_final = builds[scene]()
    runs = [
        simulate_timestepping(system, t_final, dt=1e-3, x0=x0, control=law, solver=solver)
        for solver in ("compiled", "admm")
    ]
    assert [run.meta["stats"]["solver"] for run in runs] == ["compiled", "admm"]
    bound = runs[0].t.size * _step_condition(system, x0, 1e-3) * np.finfo(float).eps
    exchanged = runs[1].energy_balance().exchanged  # (the energies' scale)
    scale = np.abs(runs[1].x).max(axis=0)
    scale[[system.layout["input_work"].start, system.layout["dissipated_energy"].start]] += (
        exchanged
    )
    assert np.all(np.abs(runs[0].x - runs[1].x) <= bound * scale)
    for name, series in runs[1].outputs.items():
        if name.startswith(("energy.", "audit.")):
            difference = np.abs(runs[0].outputs[name] - series).max()
            assert difference <= bound * (np.abs(series).max() + exchanged), name
    _closes(runs[0])


def _step_condition(system: px.System, x0: np.ndarray, h: float) -> float:
    """The condition number of the matrix a step of size h solves for the mechanism's and
    the rotors' velocity changes at x0 (:class:`pinext.contact.stepped_states.
    ComponentStates`): ``[[M − A_vv, −A_vw], [−A_wv, J − A_ww]]``, or M without rotors."""
    from pinext.contact.stepped_states import ComponentStates
    from pinext.contact.timestepping import _effort_law

    step, _, integrated = _effort_law(system, system.initial_phase(0.0, x0, None))
    mass = pin.crba(step.model, step.model.createData(), x0[: step.model.nq])
    mass = np.triu(mass) + np.triu(mass, 1).T
    if not integrated:
        return float(np.linalg.cond(mass))
    model = pin.Model(step.model)
    states = ComponentStates(system, integrated, model, x0)
    states.stepper_model(model, h)
    nv, a = model.nv, states.a
    matrix = np.block(
        [[mass - a[:nv, :nv], -a[:nv, nv:]], [-a[nv:, :nv], np.diag(states.inertia) - a[nv:, nv:]]]
    )
    return float(np.linalg.cond(matrix))


def _table_scene(friction: float | None) -> tuple[px.System, px.Contact]:
    """The arm on its drives with its limits, Coulomb friction on every joint (or none), and
    a table 2 cm below its tool."""
    robot = px.load_robot("six_dof_arm")
    data = robot.model.createData()
    pin.framesForwardKinematics(robot.model, data, ARM_Q0)
    tip = data.oMf[robot.model.getFrameId("tool")].translation
    table = px.Contact(px.plane("tool", (0.0, 0.0, tip[2] - 0.02)))
    friction_of = None if friction is None else dict.fromkeys(JOINTS, friction)
    return px.System(robot, drives=harmonic_drives(JOINTS), joint_friction=friction_of), table


@pytest.mark.parametrize("elastic", [False, True], ids=["rigid", "elastic"])
def test_motors_with_inductance_converge_and_their_currents_close_the_audit(elastic):
    """DC motors with an inductance of 1 mH (electrical time constant 2 ms, below the step
    at 2 ms) on the arm's six joints, rigid or behind elastic transmissions: the currents are
    linearly implicit with the rest, the audit closes with their ½ L i² (its numerical part
    ½ Δsᵀ L Δs), and the run converges at first order to the event-driven one."""
    transmission = ElasticTransmission(50.0, 2e3, 1.0) if elastic else Gear(50.0)
    system = px.System(
        px.load_robot("six_dof_arm"), drives=dict.fromkeys(JOINTS, Drive(INDUCTIVE, transmission))
    )
    x0 = system.initial_state(ARM_Q0)
    _first_order(system, 0.3, slice(0, system.nx - 2), x0=x0, control=VOLTS)


@pytest.mark.parametrize("solver", ["pgs", "compiled"])
def test_drives_limits_friction_and_a_table_in_one_step(solver, simulation_path):
    """The drives beside the arm's limits, Coulomb friction on every joint and its tool
    falling onto a table (Pinocchio's PGS or the compiled loop: every step converged): the
    audit closes and the tool does not sink beyond ½ h² a while it rests on the table."""
    if solver == "compiled" and simulation_path == "python":
        pytest.skip("the compiled loop")
    system, table = _table_scene(0.5)
    traj = simulate_timestepping(
        system, 0.4, dt=1e-3, q0=ARM_Q0, control=VOLTS, contacts=[table], solver=solver
    )
    assert traj.meta["stats"]["solver"] == solver
    assert traj.meta["stats"]["unconverged"] == 0
    _closes(traj)
    assert traj.outputs["contact.gap"].min() >= -0.5 * 1e-3**2 * 100.0
    assert traj.outputs["contact.closed"][-50:].all()


def test_pinocchios_two_solvers_agree_on_the_drives_steps():
    """ADMM and PGS on the same steps (drives, limits, the table): their difference shrinks
    at least tenfold for a hundredfold tighter tolerance (it is the solvers', not the
    scheme's), and is within 1e4 of the tighter tolerance."""
    system, table = _table_scene(None)
    gaps = []
    for tolerance in (1e-10, 1e-12):
        runs = [
            simulate_timestepping(
                system, 0.4, dt=1e-3, q0=ARM_Q0, control=VOLTS, contacts=[table],
                solver=solver, tolerance=tolerance, max_iterations=5000,
            )
            for solver in ("admm", "pgs")
        ]  # fmt: skip
        assert all(run.meta["stats"]["unconverged"] == 0 for run in runs)
        gaps.append(np.abs(runs[0].x - runs[1].x).max())
    # the difference follows the tolerance (3e-10 and 1e-11 measured): tenfold smaller for a
    # hundredfold tighter one, unless the looser run already agrees to 1e-9 (then 1e-10)
    assert gaps[1] <= max(0.1 * gaps[0], 1e-10) and gaps[1] <= 1e4 * 1e-12, gaps


@pytest.mark.skipif(example_robot_data_dir() is None, reason="example-robot-data not installed")
def test_solo12_on_series_elastic_drives_lands_and_stands():
    """Solo12 on twelve series elastic drives (DC motors behind 200 N.m/rad springs, ratio 9)
    dropped 0.3 m under a PD law on the motor angles written in Python: it lands on its four
    feet and stands, the feet never sink beyond ½ h² a, the audit closes."""
    from pinext.robots.solo12 import load_solo12

    robot, q_ref = load_solo12()
    motor = DCMotor(0.3, 0.025, 0.025, 5e-6, viscous_friction=1e-6, voltage_limit=24.0)
    drive = Drive(motor, ElasticTransmission(9.0, 200.0, 0.5))
    system = px.System(robot, contacts=(), drives=dict.fromkeys(list(robot.model.names)[2:], drive))
    angle, speed = system.layout["drives.motor_angle"], system.layout["drives.motor_velocity"]
    q0 = q_ref.copy()
    q0[2] = 0.3

    def law(t, x):
        return 20.0 * (q_ref[7:] - x[angle] / 9.0) - 0.05 * x[speed] / 9.0

    traj = px.simulate(system, 1.0, q0=q0, method="timestepping", dt=1e-3, control=law)
    _closes(traj)
    assert traj.outputs["contact.gap"].min() >= -0.5 * 1e-3**2 * 100.0
    assert traj.outputs["contact.closed"][-1].all()
    assert np.abs(traj.x[-1, 19:37]).max() < 0.05  # standing still


def test_the_step_is_stable_beyond_the_transmissions_modes():
    """The wrists' modes (about 4 700 rad/s) are far beyond 2/h at h = 8 and 4 ms, where
    holding their forces at the start of the step diverged within 0.03 s at 0.4 ms: the
    linearly implicit step is stable there and still first order (the error to the
    event-driven run halves from 8 to 4 ms: ratio 1.6–2.5), its audit closed."""
    _first_order(_arm(), 0.4, slice(0, 18), steps=(8e-3, 4e-3), q0=ARM_Q0, control=VOLTS)


@pytest.mark.parametrize(
    ("drive", "named"),
    [
        (Drive(DCMotor(0.5, 0.05, 0.05, 2e-5), Gear(50.0, efficiency=0.8)), "has modes"),
        (Drive(DCMotor(0.5, 0.05, 0.05, 2e-5), ElasticTransmission(50.0, 2e3, 1.0, backlash=0.02)),
         "has modes"),
    ],
    ids=["lossy gear", "elastic backlash"],
)  # fmt: skip
def test_drives_time_stepping_cannot_integrate_are_refused_with_the_valid_ones(drive, named):
    system = px.System(px.load_robot("six_dof_arm"), drives={"elbow": drive})
    with pytest.raises(InvalidParameter, match=named) as err:
        px.simulate(system, 0.1, q0=ARM_Q0, method="timestepping", dt=1e-3, progress=False)
    assert "valid: " in str(err.value) and "event-driven" in str(err.value)


def test_a_users_effort_on_the_compiled_loop_only_is_refused_with_the_reason(simulation_path):
    """``solver="compiled"`` with a user's component whose effort is not linear in q and v
    (which runs on Pinocchio's solvers, ``solver="auto"``): refused, naming it and the valid
    choices. (A linear one, a DC motor on a rigid gear, runs compiled: the coverage test.)"""
    if simulation_path == "python":
        pytest.skip("the compiled loop")

    class Push(Component):
        name = "push"

        def effort(self, t, x, q, v, u, mode):
            return 0.1 * np.sin(q)

    system = px.System(px.load_robot("six_dof_arm"), components=[Push()])
    with pytest.raises(InvalidParameter, match="push.*valid: solver='auto'"):
        simulate_timestepping(system, 0.1, dt=1e-3, q0=ARM_Q0, solver="compiled")
    traj = simulate_timestepping(system, 0.1, dt=1e-3, q0=ARM_Q0)
    assert traj.meta["stats"]["solver"] == "admm"


def _closure(traj: px.Trajectory, system: px.System, name: str) -> float:
    """The loop's largest residual over the samples [m, rad]."""
    loop = next(c for c in system.components if c.name == name)
    nq, nv = system.model.nq, system.model.nv
    return max(
        np.abs(loop.state_kinematics(x[:nq], x[nq : nq + nv]).residual).max() for x in traj.x
    )


def _converges(system, x0, t_final, loop, steps=(2e-3, 1e-3, 5e-4), **options):
    """Time stepping against the event-driven run: the error halves with the step (first
    order: ratios 1.6–2.5), the loop's residual, closed to first order at each step's end,
    quarters (ratios 3–5), and every run's audit closes. Returns the runs."""
    runs = _first_order(system, t_final, slice(0, system.model.nq), steps, x0=x0, **options)
    closures = np.array([_closure(r, system, loop) for r in runs])
    second = closures[:-1] / closures[1:]
    assert np.all((second > 3.0) & (second < 5.0)), (closures, second)
    return runs


def test_a_four_bar_loop_in_the_step(simulation_path):
    """The four-bar's hinge (five rows, two of them dependent in its plane, two that no
    motion moves), falling limp for 1 s from a closed pose, on the compiled loop (or
    Pinocchio's ADMM on the Python path): first order to the event-driven run, the hinge
    closed to second order, the audit closed."""
    system = px.System(px.load_urdf(EXAMPLES / "four_bar.urdf"))
    x0 = px.close_loops(system, np.array([0.0, 1.5, 1.5]))
    runs = _converges(system, x0, 1.0, "pivot")
    solver = "compiled" if simulation_path == "compiled" else "admm"
    assert all(run.meta["stats"]["solver"] == solver for run in runs)


@pytest.mark.parametrize("solver", ["pgs", "auto"])
def test_a_welded_box_with_drives_friction_limits_and_a_table(tmp_path, solver, simulation_path):
    """The arm holding a 2 kg box (a weld) on three elastic drives, with URDF joint friction
    and its limits, on Pinocchio's PGS and on the compiled loop (``auto``): first order to
    the event-driven run, the weld closed to second order; with a corner of the box falling
    onto a tilted table (plastic here, as time stepping's impacts are), the audit closes and
    the box sinks at most ½ h² a."""
    system, x0 = arm_with_welded_box(tmp_path)
    runs = _converges(system, x0, 0.5, "loop:tool-box", solver=solver)
    if solver == "auto":
        solver = "compiled" if simulation_path == "compiled" else "admm"
    assert all(run.meta["stats"]["solver"] == solver for run in runs)
    system, x0 = arm_with_welded_box(tmp_path, table=0.02)
    with pytest.warns(RuntimeWarning, match="restitution 0.5 is ignored"):
        traj = px.simulate(system, 0.5, x0=x0, method="timestepping", dt=1e-3, progress=False)
    _closes(traj)
    assert traj.outputs["contact.closed"].any()
    assert traj.outputs["contact.gap"].min() >= -0.5 * 1e-3**2 * 100.0
    assert _closure(traj, system, "loop:tool-box") < 1e-3**2 * 100.0


#: What time stepping does with each everyday scene of the engine's coverage: runs it, or
#: refuses it naming why (a fragment of the message).
SCENES = {
    "bare": None,
    "rigid_dc_drives": None,
    "harmonic_drives_48v": None,
    "inductive_motor_and_torque_source": None,
    "joint_springs_dampers_and_friction": None,
    "bounce_on_a_table": None,
    "pen_on_a_compliant_massive_table": "contacts are rigid",
    "contact_layer": "contacts are rigid",
    "flexible_forearm": None,
    "elastic_support": None,
    "joint_pd": None,
    "computed_torque_at_1khz": None,
    "python_law_at_1khz": None,
    "radau_with_drives": None,
    "real_panda_with_harmonic_drives": None,
    "lossy_gear": "has modes",
    "backlash_beside_a_lossy_gear": "has modes",
    "compliant_tool": "contacts are rigid",
    "tool_and_layer_both_damped": "contacts are rigid",
    "coulomb_contact_on_a_table": None,
}


@pytest.mark.parametrize("scene", list(SCENES))
def test_every_everyday_scene_runs_or_is_refused_by_time_stepping(scene, simulation_path):
    """Each scene of ``test_engine_coverage.py`` (built as a user builds it), 0.1 s at 1 ms:
    it runs on the compiled loop (on the compiled path: no fallback to Pinocchio's solvers)
    with its audit closed to round-off, or is refused with a pinext error that says why and
    what is valid. (Compliant contacts used to run as rigid ones, their states frozen, with
    audits off by up to 600 J or NaN.)"""
    from . import test_engine_coverage as coverage

    system, options = getattr(coverage, scene)()
    start = {k: v for k, v in options.items() if k in ("q0", "control")}
    refused = SCENES[scene]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if refused is not None:
            with pytest.raises(InvalidParameter, match=refused) as err:
                px.simulate(system, 0.1, method="timestepping", dt=1e-3, progress=False, **start)
            assert "valid" in str(err.value)
            return
        traj = px.simulate(system, 0.1, method="timestepping", dt=1e-3, progress=False, **start)
    assert traj.energy_balance().max_relative() < 1e-10
    assert traj.meta["stats"]["solver"] == ("compiled" if simulation_path == "compiled" else "admm")


def test_a_law_that_turns_non_finite_stops_the_compiled_loop_naming_it():
    """A Python law per step on the compiled loop is not checked at each call (the loop checks
    its state): one that returns NaN from t = 0.05 s stops the run at that step with the law's
    own error (its inputs, the time and the state it was given)."""
    from pinext.exceptions import IntegrationError

    system = px.System(px.load_robot("six_dof_arm"))

    def law(t, x):
        return np.full(6, np.nan if t >= 0.05 else 0.1)

    with pytest.raises(IntegrationError, match="returned non-finite inputs") as err:
        simulate_timestepping(system, 0.2, dt=1e-3, q0=ARM_Q0, control=law, progress=False)
    assert err.value.time == pytest.approx(0.05, abs=1e-3)


def _panda_run(panda, seed, friction: bool):
    """The real Panda of ``test_real_panda_drives.py`` (harmonic drives, the URDF's stops, the
    ``<mimic>`` fingers; Coulomb friction or none) from ``pin.neutral`` or a seeded pose, and
    its motor-angle PD law in Python toward 0.3 rad from the start: (system, x0, law)."""
    from .test_real_panda_drives import JOINTS, KD, KP, RATIO, _start, _system

    q0 = _start(panda, seed)
    if friction:
        system = _system(panda)
    else:
        drive = Drive(HARMONIC_DRIVE_MOTOR, ElasticTransmission(RATIO, 2e4, 10.0))
        system = px.System(panda, drives=dict.fromkeys(JOINTS, drive))
    x0 = px.close_loops(system, q0)
    x0[system.layout["drives.motor_angle"]] = RATIO * system.split(x0)[0][:7]
    model = panda.model
    target = np.clip(q0[:7] + 0.3, model.lowerPositionLimit[:7], model.upperPositionLimit[:7])

    def law(t, q, v, sensors):
        return (
            KP * (RATIO * target - sensors["drives.motor_angle"])
            - KD * sensors["drives.motor_velocity"]
        )

    return system, x0, law


@pytest.mark.parametrize("seed", [None, 3, 11])
def test_real_panda_with_drives_friction_stops_and_mimic_in_time_stepping(seed, panda):
    """0.4 s at 1 ms from ``pin.neutral`` (joint 4 outside its range) and seeded poses, every
    effect on: the mimic row is linear, so the step that holds it at its end closes it to
    round-off; the stops hold and the audit closes (:func:`assert_sound_run`)."""
    system, x0, law = _panda_run(panda, seed, friction=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # velocity-limit reports
        traj = px.simulate(system, 0.4, x0=x0, control=law, method="timestepping", dt=1e-3)
    assert_sound_run(panda.model, traj)
    mimic = next(c for c in system.components if c.name == "mimic:panda_finger_joint2")
    assert np.abs([mimic.kinematics(None, None, q, 0.0).residual for q in traj.q]).max() < 1e-12


@pytest.mark.parametrize("seed", [None, 11])
def test_real_panda_with_drives_stops_and_mimic_converges_to_the_event_driven_run(seed, panda):
    """Without friction (whose stick–slip switches fall on step boundaries), the same scene
    converges at first order to the event-driven run: error ratios 1.6–2.5 from 1 ms down
    (2.0, 1.8–2.0 measured; 2 ms is before the asymptotic range)."""
    system, x0, law = _panda_run(panda, seed, friction=False)
    steps = (1e-3, 5e-4, 2.5e-4)
    _first_order(system, 0.4, slice(0, 9), steps, audit=False, x0=x0, control=law)


def test_a_prescribed_joint_follows_its_law_and_its_work_converges():
    """The flexible arm's hub spun up by its law (``test_prescribed.py``), 2 s: each step
    ends on the law (the row ``v⁺ = (q_ref(t + h) − q) / h`` of a prescribed joint), the
    impulses that drive it are booked as input work, the audit closes, and that work
    converges at first order to the event-driven run's (ratios 1.6–2.5)."""
    from .test_prescribed import spin_up

    system = px.System(
        px.load_urdf(px.robot_path("flexible_arm")), components=[px.Prescribed("hub", spin_up)]
    )
    reference = px.simulate(system, 2.0, progress=False).energy_balance().input_work[-1]
    errors = []
    for dt in (2e-3, 1e-3, 5e-4):
        traj = px.simulate(system, 2.0, method="timestepping", dt=dt, progress=False)
        law = np.array([spin_up(t)[0] for t in traj.t])
        assert np.abs(traj.q[:, 0] - law).max() < 1e-12
        _closes(traj)
        errors.append(abs(traj.energy_balance().input_work[-1] - reference))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 1.6) & (ratios < 2.5)), (errors, ratios)


class _Absorber(Component):
    """A user's component in plain Python: a rotor of inertia J on the elbow through a spring
    k and a damper d (a tuned absorber), with its angle and velocity as states; it declares
    them to time stepping (``stepped_states``) or, with ``wrong``, declares them badly."""

    name = "absorber"
    J, K, D = 0.02, 40.0, 0.3

    def __init__(self, wrong: bool = False) -> None:
        super().__init__()
        self.wrong = wrong

    def states(self):
        return [("angle", 1), ("speed", 1)]

    def bind(self, system):
        joint = system.model.joints[system.model.getJointId("elbow")]
        self.iq, self.iv = joint.idx_q, joint.idx_v
        self.a, self.w = self.layout.slices["angle"].start, self.layout.slices["speed"].start
        self.nv = system.model.nv

    def initial_state(self, q, v):
        return np.array([q[self.iq], 0.0])

    def _torque(self, x, q, v):  # on the rotor: spring and damper toward the elbow
        return -self.K * (x[self.a] - q[self.iq]) - self.D * (x[self.w] - v[self.iv])

    def effort(self, t, x, q, v, u, mode):
        tau = np.zeros(self.nv)
        tau[self.iv] = -self._torque(x, q, v)
        return tau

    def derivative(self, t, x, q, v, u, mode, out, step):
        out[self.a] = x[self.w]
        out[self.w] = self._torque(x, q, v) / self.J

    def energy(self, x, q, v):
        return 0.5 * self.J * x[self.w] ** 2 + 0.5 * self.K * (x[self.a] - q[self.iq]) ** 2

    def power(self, t, x, q, v, u, mode, step):
        return 0.0, self.D * (x[self.w] - v[self.iv]) ** 2

    def stepped_states(self):
        index = np.arange(2) + self.a
        inertia = np.array([-1.0 if self.wrong else self.J])
        return SteppedStates(index[:1], index[1:], inertia, np.zeros(0, int), np.zeros(0))


def test_a_users_component_declares_its_states_to_time_stepping():
    """The contract is not the drives': a rotor absorber written by a user (effort,
    derivative, energy, power and ``stepped_states``) beside the arm's harmonic drives runs
    in time stepping with its audit closed and converges at first order to the event-driven
    run; declared badly (J < 0), it is refused saying what is valid."""
    robot = px.load_robot("six_dof_arm")
    system = px.System(robot, drives=harmonic_drives(JOINTS), components=[_Absorber()])
    _first_order(system, 0.3, slice(0, system.nx - 2), x0=system.initial_state(ARM_Q0),
                 control=VOLTS)  # fmt: skip

    class Short(_Absorber):  # two of the five fields
        def stepped_states(self):
            return (np.array([self.a]), np.array([self.w]))

    for wrong in (_Absorber(wrong=True), Short()):
        bad = px.System(robot, components=[wrong])
        with pytest.raises(InvalidParameter, match="absorber.*valid: each state once"):
            px.simulate(bad, 0.1, q0=ARM_Q0, method="timestepping", dt=1e-3, progress=False)


def test_a_component_of_an_unknown_stepped_kind_is_refused_naming_the_kinds():
    """Time stepping reads what it holds of a component from its ``stepped_kind`` (no list
    of classes); a kind it does not know is refused with the valid ones, not skipped."""

    class Odd(Component):
        name = "odd"
        stepped_kind = "spring"

    robot = px.load_robot("six_dof_arm")
    system = px.System(robot, components=[Odd()])
    with pytest.raises(InvalidParameter, match="stepped_kind 'spring'; valid: None or one of "):
        simulate_timestepping(system, 0.01, q0=ARM_Q0, dt=1e-3, progress=False)
