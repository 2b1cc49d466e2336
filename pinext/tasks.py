"""The writing tasks: applications of pinext on the project's 6-DOF arm.

The three-phase writing task of Vukobratović & Potkonjak Fig. 20.13a (:func:`run_writing_task`)
and its force-controlled version (:func:`run_force_controlled_writing`). They load the arm and
run :func:`pinext.simulate`, so they live in the application layer, above the engine
(docs/architecture.md, "Layers").

The arm holds a pen pointing down above a table, descends (approach), hits the table
(impact), and draws a 0.2 m line along y while pressing with a prescribed force (constrained
motion). A Cartesian impedance controller with gravity compensation drives it:

.. math::

    \\tau = g(q) + J_p^T\\,[K_p (p_d - p) + D_p (\\dot p_d - \\dot p)]
          + J_\\omega^T\\,[K_r \\log(R_d R^T) - D_r \\omega] - D_q \\dot q

The desired tip height ends ``pressure / K_z`` below the table surface, so the static normal
force on a rigid table is the prescribed pressure.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from .contact.coordinates import plane
from .contact.environment import DynamicEnvironment
from .contact.unilateral import Contact
from .control.cartesian import CartesianPD, QuinticPath
from .control.hybrid import HybridForceMotionController
from .control.impedance import ImpedanceController
from .drives.presets import harmonic_drives
from .exceptions import InvalidParameter
from .robot import Robot, load_urdf
from .robots import robot_path
from .simulation.simulate import simulate
from .simulation.system import System
from .simulation.trajectory import Trajectory

#: Environments of :func:`run_writing_task`: rigid table, model (c), model (d).
ENVIRONMENTS = {
    "rigid": None,
    "compliant": DynamicEnvironment(mass=2.0, stiffness=2.0e4, damping=100.0),
    "spring": DynamicEnvironment(
        mass=2.0, stiffness=2.0e4, damping=100.0, contact_stiffness=5.0e4, contact_damping=50.0
    ),
}
#: The arm of the task (package data, see :func:`pinext.robot_path`).
URDF = robot_path("six_dof_arm")
FRAME = "pen_tip"
#: Rotor inertias of the gear motors [kg.m^2]; reflected through the URDF's transmission
#: ratios N they give the joints' armature J_r N^2 (Vukobratović & Potkonjak, (20.69)).
ROTOR_INERTIA = {
    "shoulder_pan": 1.2e-4,
    "shoulder_lift": 1.2e-4,
    "elbow": 7.8e-5,
    "wrist_1": 1.2e-5,
    "wrist_2": 1.2e-5,
    "wrist_3": 1.2e-5,
}


def writing_arm(geared: bool = True) -> Robot:
    """The six_dof_arm of the writing tasks; ``geared``: its gear motors' rotor inertia
    (:data:`ROTOR_INERTIA`) reflected as armature through the URDF's ratios."""
    robot = load_urdf(URDF, extensions=False)
    if geared:
        for joint, inertia in ROTOR_INERTIA.items():
            ratio = robot.transmissions[joint].reduction if joint in robot.transmissions else 1.0
            robot.model.armature[robot.velocity_index(joint)] = inertia * ratio**2
    return robot


def start_configuration(model: pin.Model, target: np.ndarray) -> np.ndarray:
    """Joint angles putting the pen tip at ``target`` [m] with the pen pointing down (CLIK),
    rolled about the pen so that wrist_3 starts near 0, far from its ±π stops."""
    data = model.createData()
    fid = model.getFrameId(FRAME)
    goal = pin.SE3(np.diag([-1.0, 1.0, -1.0]), np.asarray(target, dtype=float))
    q = np.array([0.0, 0.6, 1.4, 0.0, 1.1, 0.0])
    for _ in range(200):
        pin.framesForwardKinematics(model, data, q)
        err = pin.log6(data.oMf[fid].actInv(goal)).vector
        if np.linalg.norm(err) < 1e-14:
            break
        J = pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL)
        q = pin.integrate(model, q, np.linalg.solve(J, err))
    return q


def writing_controller(
    model: pin.Model,
    start: pin.SE3,
    table_height: float,
    pressure: float,
    t_approach: float,
    t_line: tuple[float, float],
    length: float,
) -> CartesianPD:
    """The impedance controller of the writing task (module docstring): the pen tip from its
    start placement down to ``pressure / K_z`` below the table in ``t_approach`` [s], then
    ``length`` [m] along y over ``t_line`` [s], the orientation held. A built-in law, so
    that the compiled path evaluates it (:mod:`pinext.compiled.laws`)."""
    kp = np.array([1500.0, 1500.0, 2000.0])
    z_end = table_height - pressure / kp[2]
    p0 = start.translation
    moves = [(0.0, t_approach, (0.0, 0.0, z_end - p0[2]))]
    if t_line[1] > t_line[0]:  # (a run that ends before the line starts has no line)
        moves.append((*t_line, (0.0, length, 0.0)))
    path = QuinticPath.of(p0, moves)
    return CartesianPD(
        model, FRAME, path, start.rotation, kp, [60.0, 60.0, 60.0], kr=60.0, dr=2.0, dq=0.2
    )


def _pen_start(model: pin.Model, table_height: float, height: float) -> tuple[np.ndarray, pin.SE3]:
    """The start of the writing tasks: the arm's configuration with the pen tip ``height`` [m]
    above the table, pointing down (:func:`start_configuration`), and the tip's placement."""
    q0 = start_configuration(model, np.array([0.55, -0.1, table_height + height]))
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    return q0, data.oMf[model.getFrameId(FRAME)].copy()


def _table(table_height: float) -> Contact:
    """The pen tip's frictionless contact with the table's surface at ``table_height`` [m]."""
    return Contact(plane(FRAME, (0.0, 0.0, table_height)), stabilization=30.0, name="table")


def _environment(environment: str | DynamicEnvironment | None) -> DynamicEnvironment | None:
    """An environment of :data:`ENVIRONMENTS` by name, or the one given."""
    if not isinstance(environment, str):
        return environment
    if environment not in ENVIRONMENTS:
        raise InvalidParameter(
            f"unknown environment {environment!r}; valid: {', '.join(ENVIRONMENTS)}"
        )
    return ENVIRONMENTS[environment]


def writing_scene(
    environment: str | DynamicEnvironment | None = "rigid",
    duration: float = 3.0,
    *,
    table_height: float = 0.2,
    pressure: float = 10.0,
    height: float = 0.05,
) -> tuple[System, np.ndarray, CartesianPD]:
    """The writing task's scene, for :func:`pinext.simulate`: ``(system, q0, controller)``,
    the arm at rest with its pen tip ``height`` [m] above the table (arguments as
    :func:`run_writing_task`; the run is ``simulate(system, duration, q0=q0,
    control=controller, control_period=0.0)``)."""
    env = _environment(environment)
    robot = writing_arm()
    model = robot.model
    q0, start = _pen_start(model, table_height, height)
    controller = writing_controller(
        model,
        start,
        table_height,
        pressure,
        t_approach=0.6,
        t_line=(0.8, min(2.6, duration)),
        length=0.2,
    )
    return System(robot, contacts=[_table(table_height)], environment=env), q0, controller


def run_writing_task(
    environment: str | DynamicEnvironment | None = "rigid",
    duration: float = 3.0,
    *,
    table_height: float = 0.2,
    pressure: float = 10.0,
    height: float = 0.05,
    output_dt: float | None = None,
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> Trajectory:
    """Simulate the writing task: approach, impact, write a line with a prescribed pressure.

    Args:
        environment: ``"rigid"`` (geometric constraint), ``"compliant"`` (model (c): a
            2 kg table on 2e4 N/m, 100 N.s/m), ``"spring"`` (model (d): the same behind a
            5e4 N/m, 50 N.s/m layer), or a :class:`DynamicEnvironment`.
        duration: Simulated time [s].
        table_height: Height of the table surface [m].
        pressure: Prescribed normal force [N].
        height: Start height of the pen tip above the table [m].
        output_dt: Sample period [s] (None: the solver's steps).
        rtol: Relative tolerance.
        atol: Absolute tolerance.

    Returns:
        The :class:`pinext.Trajectory`; ``meta["task"]`` holds the task's parameters,
        ``outputs["contact.force"]`` the normal force.
    """
    system, q0, controller = writing_scene(
        environment, duration, table_height=table_height, pressure=pressure, height=height
    )
    traj = simulate(
        system,
        duration,
        q0=q0,
        v0=np.zeros(system.model.nv),
        control=controller,
        control_period=0.0,  # the continuous law
        rtol=rtol,
        atol=atol,
        output_dt=output_dt,
    )
    traj.meta["task"] = {
        "name": "writing",
        "environment": (
            environment
            if isinstance(environment, str) or environment is None
            else environment.model
        ),
        "table_height": table_height,
        "pressure": pressure,
        "frame": FRAME,
    }
    return traj


# -- the force-controlled writing task -------------------------------------------------------

#: The letters "NM" written in one stroke in the table's plane: corners (x, y) [m] relative
#: to the pen's start point.
LETTERS = 0.04 * np.array(
    [
        [0.0, 0.0],
        [1.0, 0.0],
        [0.0, 0.75],
        [1.0, 0.75],
        [0.0, 1.125],
        [1.0, 1.125],
        [0.5, 1.5],
        [1.0, 1.875],
        [0.0, 1.875],
    ]
)


def letters_target(start: pin.SE3, corners: np.ndarray, t_start: float, pace: float = 2.0):
    """The pen's target along the strokes: from corner to corner, each segment rest to rest
    with a quintic time law lasting ``0.15 s + pace · length`` [s/m]; the orientation kept.

    Returns:
        (target, t_end): ``target(t) -> (pin.SE3, twist (6,), acceleration (6,))`` in world
        axes, and the time the last stroke ends [s].
    """
    points = [start.translation + np.r_[c, 0.0] for c in np.asarray(corners, dtype=float)]
    times = [t_start]
    for a, b in zip(points[:-1], points[1:], strict=True):
        times.append(times[-1] + 0.15 + pace * float(np.linalg.norm(b - a)))

    def target(t: float) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
        k = int(np.clip(np.searchsorted(times, t) - 1, 0, len(points) - 2))
        t0, t1 = times[k], times[k + 1]
        span = t1 - t0
        s = float(np.clip((t - t0) / span, 0.0, 1.0))
        shape = s**3 * (10 - 15 * s + 6 * s * s)
        rate = 30 * s * s * (1 - s) ** 2 / span
        curve = (60 * s - 180 * s * s + 120 * s**3) / span**2
        if t <= t0 or t >= t1:
            rate = curve = 0.0
        step = points[k + 1] - points[k]
        pose = pin.SE3(start.rotation, points[k] + shape * step)
        return pose, np.r_[rate * step, 0.0, 0.0, 0.0], np.r_[curve * step, 0.0, 0.0, 0.0]

    return target, times[-1]


def run_force_controlled_writing(
    environment: str | DynamicEnvironment = "compliant",
    duration: float = 3.2,
    *,
    controller: str = "hybrid",
    elastic: bool = False,
    force: float = 10.0,
    table_height: float = 0.2,
    height: float = 0.01,
    t_write: float = 0.6,
    output_dt: float | None = 1e-3,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    method: str | None = None,
    control_period: float = 0.0,
) -> Trajectory:
    """The writing task under force control: press with ``force`` on the table while the pen
    follows the letters :data:`LETTERS`, then rest.

    The pen starts ``height`` above the table at rest. ``controller="hybrid"``
    (:class:`pinext.control.HybridForceMotionController`, force along the table's normal,
    motion along the others) pushes with ``force`` in feedforward; ``"impedance"``
    (:class:`pinext.control.ImpedanceController`) places its target below the surface by
    the depth that gives ``force`` through the springs in series,
    ``d = force (1/K_z + 1/k_e [+ 1/k_c])``.

    Args:
        environment: ``"rigid"``, ``"compliant"`` (model (c)), ``"spring"`` (model (d)) or a
            :class:`DynamicEnvironment`.
        duration: Simulated time [s].
        controller: ``"hybrid"`` or ``"impedance"``.
        elastic: Drive the joints through DC motors and elastic (harmonic-drive)
            transmissions (:func:`pinext.drives.harmonic_drives`); the controller then
            outputs motor voltages.
        force: The normal force [N].
        table_height: Height of the table's surface [m].
        height: Start height of the pen above the table [m].
        t_write: When the first stroke starts [s].
        output_dt: Sample period [s].
        rtol: Relative tolerance.
        atol: Absolute tolerance.
        method: The integration method of :func:`pinext.simulate`.
        control_period: Sample period of the controller [s] (:func:`pinext.simulate`'s
            ``control_period``); 0 (default): the continuous law, whose steady force and
            motion errors the closed forms give; 1e-3: a 1 kHz controller, held in between.

    Returns:
        The :class:`pinext.Trajectory`; ``meta["task"]`` holds the parameters, the
        controller's gains, the time the last stroke ends (``t_end``), and
        ``outputs["contact.force"]`` the normal force.
    """
    if controller not in ("hybrid", "impedance"):
        raise InvalidParameter(f"unknown controller {controller!r}; valid: 'hybrid', 'impedance'")
    env = _environment(environment)
    robot = writing_arm(geared=not elastic)  # elastic drives carry their own rotors
    model = robot.model
    q0, start = _pen_start(model, table_height, height)
    drives = harmonic_drives(list(model.names)[1:7]) if elastic else {}
    system = System(robot, contacts=[_table(table_height)], environment=env, drives=drives)
    surface = start.copy()
    surface.translation[2] = table_height
    path, t_end = letters_target(surface, LETTERS, t_write)
    task: dict = {
        "name": "force-controlled writing",
        "controller": controller,
        "elastic": elastic,
        "force": force,
        "table_height": table_height,
        "t_write": t_write,
        "t_end": t_end,
        "frame": FRAME,
    }
    if controller == "hybrid":
        law: HybridForceMotionController | ImpedanceController = HybridForceMotionController(
            system,
            FRAME,
            path,
            force,
            constraint_frame=np.diag([1.0, -1.0, -1.0]),  # z into the table
            bandwidth=40.0,
            force_damping=200.0,
        )
        task.update(bandwidth=40.0, force_damping=200.0)
    else:
        stiffness = np.array([3000.0, 3000.0, 3000.0, 100.0, 100.0, 100.0])
        compliance = 1.0 / stiffness[2]
        if env is not None:
            compliance += 1.0 / env.stiffness if env.stiffness else np.inf
            if env.contact_stiffness is not None:
                compliance += 1.0 / env.contact_stiffness
        depth = force * compliance

        def below(t: float) -> tuple[pin.SE3, np.ndarray, np.ndarray]:
            pose, twist, acceleration = path(t)
            pose = pose.copy()
            pose.translation[2] -= depth
            return pose, twist, acceleration

        law = ImpedanceController(system, FRAME, below, stiffness)
        task.update(stiffness=stiffness, depth=depth)
    traj = simulate(
        system,
        duration,
        q0=q0,
        v0=np.zeros(model.nv),
        control=law,
        rtol=rtol,
        atol=atol,
        output_dt=output_dt,
        method=method,
        control_period=control_period,
    )
    traj.meta["task"] = task
    return traj
